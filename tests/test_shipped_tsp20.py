"""The shipped TSP20 checkpoint (data/checkpoints/tsp20) is near optimal on the Kool test set.

Gaps are measured against the proven optima in data/references (exact solver). The bounds sit
above what the checkpoint gives (manifest.json: on all 10,000 test instances greedy 1.48 %,
beam 16 0.05 %), so a better checkpoint keeps passing and a
broken load, decoder or env does not.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from nco import checkpoint
from nco.datasets import load_dataset
from nco.inference import to_instances
from nco.paths import DATA_DIR
from nco.search import beam_search, greedy

FOLDER = DATA_DIR / "checkpoints" / "tsp20"


@pytest.fixture(scope="module")
def shipped():
    torch.set_num_threads(1)
    loaded = checkpoint.load(FOLDER / "best.pt")
    data = load_dataset("kool:tsp20_test")
    assert data.references is not None and data.reference_source is not None
    return loaded, data


def gap(loaded, data, n: int, decode) -> float:
    """Mean gap (%) of `decode(policy, env, instances)` on the first `n` test instances."""
    head = data.head(n)
    instances = to_instances(loaded.env, head.arrays, head.name)
    cost = loaded.env.cost(decode(loaded.policy, loaded.env, instances).best().objective)
    refs = head.references
    return float(100 * np.mean((cost.numpy() - refs) / refs))


def test_greedy_within_two_and_a_half_percent(shipped) -> None:
    assert 0.0 <= gap(*shipped, 200, greedy) < 2.5


def test_beam16_within_half_a_percent(shipped) -> None:
    assert 0.0 <= gap(*shipped, 50, lambda p, e, i: beam_search(p, e, i, 16)) < 0.5


def test_manifest_describes_the_file() -> None:
    manifest = json.loads((FOLDER / "manifest.json").read_text())
    meta = checkpoint.load(FOLDER / "best.pt").meta
    assert manifest["checkpoint"] == "best.pt"
    assert manifest["best_epoch"] == meta["epoch"]
    for key in ("command", "machines", "wall_time_h_total", "kool_tsp20_test"):
        assert key in manifest, key
