"""scripts/jssp_compare.py: checkpoints side by side on fresh random instances, against a rule."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.script_loader import SCRIPTS

SMALL = Path(__file__).resolve().parents[1] / "data" / "checkpoints" / "jssp_small" / "best.pt"


def compare(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable,
        str(SCRIPTS / "jssp_compare.py"),
        "--out",
        str(tmp_path / "c.json"),
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)


def test_the_same_checkpoint_twice_differs_by_nothing_and_is_measured_against_the_rule(
    tmp_path: Path,
) -> None:
    run = compare(tmp_path, "--checkpoints", f"a={SMALL}", f"b={SMALL}", "--sizes", "4x3", "6x6",
                  "--num", "6", "--rule", "spt")  # fmt: skip
    assert run.returncode == 0, run.stderr
    result = json.loads((tmp_path / "c.json").read_text())
    assert list(result["sizes"]) == ["4x3", "6x6"] and result["rule"] == "spt"
    for row in result["sizes"].values():
        a, b = row["checkpoints"]["a"], row["checkpoints"]["b"]
        assert a["mean_makespan"] == b["mean_makespan"] > 0
        assert row["pairs"]["a-b"] == {"mean_points": 0.0, "stderr": 0.0}
    assert "6x6: vs spt" in run.stdout


def test_bad_sizes_missing_files_and_repeated_names_are_refused(tmp_path: Path) -> None:
    assert (
        "expected a size JxM"
        in compare(tmp_path, "--checkpoints", str(SMALL), "--sizes", "15").stderr
    )
    assert "no such checkpoint file" in compare(tmp_path, "--checkpoints", "x=nope.pt").stderr
    same = compare(tmp_path, "--checkpoints", f"a={SMALL}", f"a={SMALL}")
    assert same.returncode == 2 and "names must differ" in same.stderr
