"""scripts/eval_in_parts.py: a parted nco-eval run gives the single run's results and resumes
from the parts already written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from tests.script_loader import SCRIPTS

CHECKPOINT = "shipped:tsp20_quick"


def nco_eval(cwd: Path, *overrides: str) -> None:
    cmd = [sys.executable, "-m", "nco.cli.evaluate", f"checkpoint={CHECKPOINT}", "data=d.npz",
           "search=greedy", "progress=false", *overrides]  # fmt: skip
    subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=True)


def eval_in_parts(cwd: Path, out: str) -> str:
    cmd = [sys.executable, str(SCRIPTS / "eval_in_parts.py"), "--checkpoint", CHECKPOINT,
           "--data", "d.npz", "--out", out, "--chunk", "3", "--", "search=greedy"]  # fmt: skip
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=True).stdout


def test_parts_merge_to_the_single_run_and_resume(tmp_path: Path) -> None:
    np.savez(tmp_path / "d.npz", coords=np.random.default_rng(1).uniform(size=(5, 12, 2)))
    nco_eval(tmp_path, "out=single.json")
    single = json.loads((tmp_path / "single.json").read_text())["objectives"]

    log = eval_in_parts(tmp_path, "a.json")  # parts 0-2 and 3-4
    merged = json.loads((tmp_path / "a.json").read_text())
    assert log.count(": instances ") == 2 and merged["info"]["parts"] == 2
    assert merged["objectives"] == single and not (tmp_path / "a.parts").exists()
    before = (tmp_path / "a.json").stat().st_mtime_ns
    log = eval_in_parts(tmp_path, "a.json")  # rerun after the merge: nothing to decode
    assert ": instances " not in log and "decoded already" in log
    assert (tmp_path / "a.json").stat().st_mtime_ns == before

    (tmp_path / "b.parts").mkdir()  # a run interrupted after its first part
    nco_eval(tmp_path, "limit=3", "out=b.parts/000000.json")
    log = eval_in_parts(tmp_path, "b.json")
    assert log.count(": instances ") == 1  # only part 3-4 is decoded
    assert json.loads((tmp_path / "b.json").read_text())["objectives"] == single
