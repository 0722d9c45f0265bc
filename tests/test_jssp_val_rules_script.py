"""scripts/jssp_val_rules.py: the dispatching rules on a JSSP run's own validation set."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

from nco.problems.jssp.dispatching import dispatch
from nco.problems.jssp.env import JSSPEnv
from tests.fake_jssp_run import write_config, write_references
from tests.script_loader import SCRIPTS


def run_script(run: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, str(SCRIPTS / "jssp_val_rules.py"), "--run", str(run), "--out",
           str(run / "rules.json")]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True)


def test_rules_on_the_runs_validation_set_against_its_cached_references(tmp_path: Path) -> None:
    _, instances = write_config(tmp_path, 5)
    assert "expected one reference file with 5 costs" in run_script(tmp_path).stderr

    start = JSSPEnv().schedule(instances, dispatch(instances, "fdd/mwkr"))
    fdd = (start + instances.durations).flatten(1).amax(1).to(torch.float64).numpy()
    write_references(tmp_path, fdd * 0.8)
    run = run_script(tmp_path)
    assert run.returncode == 0, run.stderr
    result = json.loads((tmp_path / "rules.json").read_text())
    assert result["num_instances"] == 5 and np.isclose(result["mean_reference"], 0.8 * fdd.mean())
    assert np.isclose(result["fdd/mwkr"]["mean_gap_percent"], 25.0)  # 1 / 0.8 - 1
    assert set(result) >= {"spt", "mwkr", "mopnr"}
