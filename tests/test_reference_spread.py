"""scripts/reference_spread.py: gaps to the per-instance best of several solver runs."""

import json

import numpy as np
import pytest
from script_loader import load_script


def test_spread_gaps_are_to_the_per_instance_best() -> None:
    spread = load_script("reference_spread").spread
    costs = {"a": np.array([10.0, 20.0]), "b": np.array([11.0, 19.0])}
    out = spread(costs)
    assert out["best_mean_cost"] == pytest.approx(14.5)
    assert out["runs"]["a"]["mean_gap"] == pytest.approx(100 * (0 + 1 / 19) / 2)
    assert out["runs"]["b"]["max_gap"] == pytest.approx(10.0)


def test_script_runs_seeds_on_tiny_tsp_set(tmp_path) -> None:
    """Two LKH seeds on two TSP20 instances: both runs and their best appear, gaps >= 0."""
    script = load_script("reference_spread")
    out_path = tmp_path / "spread.json"
    args = "--data kool:tsp20_test --solver lkh --limit 2 --seeds 1 2 --time-limits 1".split()
    out = script.main([*args, "--cache-dir", str(tmp_path), "--out", str(out_path)])
    saved = json.loads(out_path.read_text())
    assert saved["instances"] == 2
    assert set(saved["runs"]) == {"1s_seed1", "1s_seed2", "1s_best_of_2"}
    assert saved["runs"]["1s_best_of_2"]["mean_gap"] == pytest.approx(0.0)
    assert all(r["mean_gap"] >= 0 for r in out["runs"].values())
    assert len(saved["costs"]["1s_seed1"]) == 2
