"""Checkpoints shipped from the reproduction studies (`scripts/reproduction.py ship`) decode as
their committed results say: the manifest names the file's epoch, and greedy decoding of the
first test instances gives the committed per-instance costs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from nco import checkpoint
from nco.datasets import load_dataset
from nco.decode import decode
from nco.inference import to_instances
from nco.paths import DATA_DIR
from nco.search import greedy

SHIPPED = sorted(
    p.parent
    for p in (DATA_DIR / "checkpoints").glob("*/manifest.json")
    if "target" in json.loads(p.read_text())  # written by `reproduction.py ship`
)


@pytest.mark.parametrize("folder", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_checkpoint_reproduces_its_committed_greedy_costs(folder: Path) -> None:
    torch.set_num_threads(1)
    manifest = json.loads((folder / "manifest.json").read_text())
    loaded = checkpoint.load(folder / "best.pt")
    assert manifest["best_epoch"] == loaded.meta["epoch"]
    (test_key,) = [k for k in manifest if k.endswith("_test")]
    results = DATA_DIR / "results" / "checkpoints" / f"{folder.name}_on_{folder.name}_greedy.json"
    committed = json.loads(results.read_text())
    assert committed["mean_gap"] == pytest.approx(manifest[test_key]["greedy_gap_pct"], abs=1e-3)
    head = load_dataset(committed["dataset"]).head(100)
    instances = to_instances(loaded.env, head.arrays, head.name)
    cost = loaded.env.cost(greedy(loaded.policy, loaded.env, instances).best().objective)
    np.testing.assert_allclose(cost.numpy(), committed["objectives"][:100], rtol=1e-4)
    gaps = 100 * (cost.numpy() - head.references) / head.references
    assert gaps.min() > -0.1  # the references are optimal or HGS: nothing beats them by much


AUGMENTED = [
    p
    for p in SHIPPED
    if any(k.endswith("_augment8") for k in json.loads((p / "manifest.json").read_text()))
]


@pytest.mark.parametrize("folder", AUGMENTED, ids=[p.name for p in AUGMENTED])
def test_shipped_checkpoint_reproduces_its_committed_augment8_costs(folder: Path) -> None:
    """The manifest's augment-8 figure is the committed results' mean, and those results are
    this file's: greedy over the 8 symmetries of the first test instances gives their costs."""
    torch.set_num_threads(1)
    manifest = json.loads((folder / "manifest.json").read_text())
    (key,) = [k for k in manifest if k.endswith("_augment8")]
    committed = json.loads((DATA_DIR / manifest[key]["results"].removeprefix("data/")).read_text())
    assert committed["info"]["search"]["augment"] == 8
    assert committed["num_instances"] == manifest[key]["instances"]
    assert committed["mean_gap"] == pytest.approx(manifest[key]["greedy_gap_pct"], abs=1e-3)
    assert manifest[key]["reached"] == (committed["mean_gap"] < manifest[key]["am_greedy_gap_pct"])
    loaded = checkpoint.load(folder / "best.pt")
    assert committed["info"]["checkpoint_meta"]["epoch"] == loaded.meta["epoch"]
    head = load_dataset(committed["dataset"]).head(50)
    instances = to_instances(loaded.env, head.arrays, head.name)
    best = decode(loaded.policy, loaded.env, instances, {"method": "greedy", "augment": 8}).best()
    cost = loaded.env.cost(best.objective)
    np.testing.assert_allclose(cost.numpy(), committed["objectives"][:50], rtol=1e-4)


def test_every_readme_augment8_figure_has_the_manifest_entry_checked_above() -> None:
    """A README row of a shipped study that quotes greedy with `search.augment=8` quotes its
    manifest's figure, so reshipping without `ship --augment 8` (which drops the entry for a
    new file) fails here instead of leaving the check above with nothing to check."""
    readme = DATA_DIR.parent / "README.md"
    if not readme.is_file():
        pytest.skip("installed without the README")
    rows = {
        p.name: next(r for r in readme.read_text().splitlines() if f"shipped:{p.name}`" in r)
        for p in SHIPPED
    }
    quoted = [name for name, row in rows.items() if "`search.augment=8`" in row]
    assert quoted, "the README quotes augment 8 for shipped:tsp50"
    for name in quoted:
        manifest = json.loads((DATA_DIR / "checkpoints" / name / "manifest.json").read_text())
        (key,) = [k for k in manifest if k.endswith("_augment8")]
        assert f"**{manifest[key]['greedy_gap_pct']:.3f} %**" in rows[name]
