"""benchmarks/bench_vs_reference.py: nco's and the authors' Gumbeldore timed side by side, with
the sequence-count check, on a tiny model and TSP10 (a few seconds)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from script_loader import BENCHMARKS, load_script

from tests.reference_code import REFERENCE, requires_reference

TINY = "--tiny --nodes 10 --instances 2 --beam 4 --rounds 2 --threads 1".split()


@requires_reference
def test_both_samplers_timed_with_the_expected_sequences(tmp_path: Path) -> None:
    """A subprocess (their code imports Ray and needs an easydict stand-in) times both sides;
    each returns beam x rounds = 8 distinct tours per instance."""
    out = tmp_path / "bench.json"
    root = str(BENCHMARKS.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, str(BENCHMARKS / "bench_vs_reference.py"), *TINY, "--out", str(out)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    nco, ref = report["nco"]["gumbeldore_4x2"], report["reference"]
    assert report["expected_sequences_per_instance"] == 8
    for side in (nco, ref):
        assert side["wall_s"] > 0 and side["states_evaluated"] > 0
        assert side["sequences_per_instance"] == [8, 8]
        assert side["distinct_per_instance"] == [8, 8]
        assert side["sequence_check"] is True
    assert report["nco"]["beam_search_4"]["wall_s"] > 0
    assert ref["path"] == str(REFERENCE)
    assert ref["gumbeldore_config"]["beam_width"] == 4
    assert ref["gumbeldore_config"]["num_rounds"] == 2
    assert ref["gumbeldore_config"]["advantage_constant"] == 0.3
    assert report["ratio_reference_over_nco"] == ref["wall_s"] / nco["wall_s"]
    assert "authors / nco" in done.stdout


def test_without_the_reference_nco_alone_is_timed(tmp_path: Path) -> None:
    """An absent reference folder skips the authors' side with its reason; nco is still timed."""
    script = load_script("bench_vs_reference")
    assert script.expected_sequences(10, 4, 2) == 8
    assert script.expected_sequences(4, 4, 2) == 6  # 3! tours from node 0
    out = tmp_path / "bench.json"
    absent = tmp_path / "absent"
    report = script.main([*TINY, "--reference", str(absent), "--out", str(out)])
    saved = json.loads(out.read_text())
    assert saved["reference"] == {"skipped": f"the authors' reference code is absent ({absent})"}
    assert saved["ratio_reference_over_nco"] is None
    assert saved["nco"]["gumbeldore_4x2"]["sequence_check"] is True
    assert report["nco"]["gumbeldore_4x2"]["wall_s"] > 0
