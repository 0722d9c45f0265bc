"""benchmarks/bench_search.py: a tiny case times every decoder, in fp32 and with int8 linears."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_search.py"


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_tiny_case_times_every_decoder(tmp_path: Path, precision: str) -> None:
    out = tmp_path / "bench.json"
    args = ["--tiny", "--nodes", "8", "--instances", "2", "--beam", "3", "--rounds", "2"]
    args += ["--threads", "1", "--precision", precision, "--out", str(out)]
    subprocess.run([sys.executable, str(SCRIPT), *args], check=True, timeout=300)
    report = json.loads(out.read_text())
    assert report["config"]["precision"] == precision
    assert set(report["results"]) == {"greedy", "beam_search_3", "sbs_3", "gumbeldore_3x2"}
    for result in report["results"].values():
        assert result["wall_s"] > 0 and result["states_per_s"] > 0
        assert 0 < result["policy_share"] <= 1
    assert report["ratio_gumbeldore_over_beam"] > 0
