"""scripts/light_select.py: paired greedy comparison of checkpoints on a validation set."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from tests.script_loader import SCRIPTS


def light_select(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, str(SCRIPTS / "light_select.py"), "--problem", "tsp", "--data", "d.npz",
           "--limit", "4", "--out", "s.json", *args]  # fmt: skip
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)


def test_pairs_each_checkpoint_with_the_first_on_the_head_of_the_set(tmp_path: Path) -> None:
    np.savez(tmp_path / "d.npz", coords=np.random.default_rng(2).uniform(size=(6, 12, 2)))
    run = light_select(tmp_path, "a=shipped:tsp20_quick", "b=shipped:tsp50")
    assert run.returncode == 0, run.stderr
    result = json.loads((tmp_path / "s.json").read_text())
    assert result["base"] == "a" and result["limit"] == 4
    a, b = result["checkpoints"]["a"], result["checkpoints"]["b"]
    assert a["change_percent"] == 0.0 and a["stderr_percent"] == 0.0
    cmd = [sys.executable, "-m", "nco.cli.evaluate", "checkpoint=shipped:tsp50", "data=d.npz",
           "limit=4", "search=greedy", "progress=false", "out=b.json"]  # fmt: skip
    subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, check=True)
    b_costs = np.array(json.loads((tmp_path / "b.json").read_text())["objectives"])
    assert np.isclose(b["mean_cost"], b_costs.mean())
    assert b["stderr_percent"] > 0 and np.isfinite(b["change_percent"])


def test_refuses_a_malformed_or_repeated_checkpoint_argument(tmp_path: Path) -> None:
    run = light_select(tmp_path, "shipped:tsp50")
    assert run.returncode != 0 and "expected NAME=CHECKPOINT" in run.stderr
    run = light_select(tmp_path, "a=shipped:tsp50", "a=shipped:tsp20_quick")
    assert run.returncode != 0 and "'a' given twice" in run.stderr
