"""benchmarks/bench_allocator.py: both settings decode and train alike, and the tuned one took."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_allocator.py"


def test_small_cases_give_the_same_results_in_both_settings(tmp_path: Path) -> None:
    out = tmp_path / "alloc.json"
    args = ["--cases", "beam16:tsp20", "train:cvrp20", "--instances", "4", "--steps", "2"]
    args += ["--batch-size", "8", "--repeats", "1", "--out", str(out)]
    subprocess.run([sys.executable, str(SCRIPT), *args], check=True, timeout=300)
    cases = json.loads(out.read_text())["cases"]
    assert set(cases) == {"beam16:tsp20", "train:cvrp20"}
    for case in cases.values():
        assert case["same_result"]
        assert [r["took"] for r in case["runs"]["tuned"]] == [True]
        assert [r["took"] for r in case["runs"]["default"]] == [False]
        assert case["default"]["user_s"] > 0 and case["tuned"]["max_rss_mib"] > 0
