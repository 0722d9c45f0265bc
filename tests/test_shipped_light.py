"""The imported AM / POMO checkpoints shipped under data/checkpoints decode the first Kool
test instances to the costs the authors' own code gives (benchmarks/light_vs_reference.py:
attention-learn-to-route and AMDKD-POMO on the same instances)."""

from __future__ import annotations

import hashlib
import json

import pytest
import torch

from nco import checkpoint
from nco.datasets import load_dataset
from nco.decode import decode
from nco.inference import check_checkpoint, to_instances
from nco.paths import DATA_DIR

CASES = [  # (name, dataset, search keys, the authors' costs of the first three instances)
    ("am_tsp100", "kool:tsp100_test", {}, [7.612543, 8.537844, 8.047481]),
    ("am_cvrp100", "kool:cvrp100_test", {}, [15.395426, 15.641644, 15.333864]),
    ("pomo_tsp100", "kool:tsp100_test", {"starts": 1}, [7.837987, 8.491902, 8.016989]),
]


@pytest.mark.parametrize(("name", "data", "keys", "expected"), CASES, ids=[c[0] for c in CASES])
def test_shipped_light_checkpoint_gives_the_authors_costs(name, data, keys, expected) -> None:
    torch.set_num_threads(1)
    folder = DATA_DIR / "checkpoints" / name
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["licence"] == "MIT" and (folder / "LICENSE").is_file()
    loaded = checkpoint.load(check_checkpoint(f"shipped:{name}", "test"))
    head = load_dataset(data).head(3)
    instances = to_instances(loaded.env, head.arrays, head.name)
    sols = decode(loaded.policy, loaded.env, instances, {"method": "greedy", **keys})
    cost = loaded.env.cost(sols.best().objective)
    assert torch.allclose(cost, torch.tensor(expected, dtype=cost.dtype), atol=2e-5)


SI_CASES = [  # (shipped name, dataset, its results, the imported model's, the AM's)
    ("tsp100", "kool:tsp100_test", "si_tsp100_ft_e5_greedy", "si_tsp100_pomo_imported_greedy",
     "si_tsp100_am_imported_greedy"),
    ("cvrp100", "kool:cvrp100_test", "si_cvrp100_ft50_e3_greedy", "si_cvrp100_pomo_imported_greedy",
     "si_cvrp100_am_imported_greedy"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "data", "own", "imported", "am"), SI_CASES, ids=["tsp", "cvrp"])
def test_shipped_si_checkpoint_is_the_evaluated_one(name, data, own, imported, am) -> None:
    """shipped:tsp100 / cvrp100 (POMO fine-tuned by SI GD) is the file its manifest names
    (sha256) and decodes the first Kool test instances to the costs of its committed all-10,000
    results, which are below the AM's there; the TSP one also below the imported POMO's, the
    CVRP one within 0.05 points of it (level, as its manifest says)."""
    torch.set_num_threads(1)
    folder = DATA_DIR / "checkpoints" / name
    manifest = json.loads((folder / "manifest.json").read_text())
    digest = hashlib.sha256((folder / "best.pt").read_bytes()).hexdigest()
    assert digest == manifest["sha256"] and (folder / "LICENSE").is_file()
    results = DATA_DIR / "results" / "light"
    files = (own, imported, am)
    mine, start, kool = (json.loads((results / f"{f}.json").read_text()) for f in files)
    assert mine["num_instances"] == start["num_instances"] == kool["num_instances"] == 10_000
    assert mine["mean_gap"] < kool["mean_gap"]
    if name == "tsp100":
        assert mine["mean_gap"] < start["mean_gap"]
    else:
        assert abs(mine["mean_gap"] - start["mean_gap"]) < 0.05
    assert f"{mine['mean_gap']:.3f} %" in json.dumps(manifest["results"])
    loaded = checkpoint.load(check_checkpoint(f"shipped:{name}", "test"))
    head = load_dataset(data).head(3)
    instances = to_instances(loaded.env, head.arrays, head.name)
    cost = loaded.env.cost(
        decode(loaded.policy, loaded.env, instances, {"method": "greedy"}).best().objective
    )
    expected = torch.tensor(mine["objectives"][:3], dtype=cost.dtype).abs()
    assert torch.allclose(cost, expected, atol=1e-5)
