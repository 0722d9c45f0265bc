"""benchmarks/bench_memory.py: a small case reports the compact trie and every sequence."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_memory.py"


def test_small_case_reports_trie_and_memory(tmp_path: Path) -> None:
    out = tmp_path / "mem.json"
    args = ["--instances", "3", "--nodes", "12", "--beam", "4", "--rounds", "2", "--out", str(out)]
    subprocess.run([sys.executable, str(SCRIPT), *args], check=True, timeout=300)
    result = json.loads(out.read_text())["result"]
    assert result["sequences"] == 3 * 4 * 2
    assert result["trie_bytes_per_entry"] == 8  # float32 masses and advantages
    # every round expands at most beam_width nodes per depth and instance
    assert 0 < result["trie_rows"] <= 3 * 4 * 2 * 11
    assert result["peak_rss_gib"] > 0
