"""scripts/results_table.py: one validated markdown row per results file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from script_loader import load_script

from nco.results import Results, write_results


def test_rows_sorted_with_gaps_times_and_limits(tmp_path: Path) -> None:
    a = Results(
        "tsp",
        "kool:tsp20_test",
        "lkh",
        [4.0, 6.0],
        [4.0, 5.0],
        2.0,
        times_s=[0.5, 1.5],
        info={"time_limit": 10.0},
    )
    b = Results("tsp", "kool:tsp20_test", "greedy", [5.0, 6.0], [4.0, None], 0.5)
    paths = [write_results(a, tmp_path / "a.json"), write_results(b, tmp_path / "b.json")]
    lines = load_script("results_table").table(paths).splitlines()
    assert len(lines) == 4
    assert lines[3] == "| kool:tsp20_test | greedy | 2 | 5.5000 | 25.000 | - | 0.5 | 4.00 |"
    assert lines[2] == (
        "| kool:tsp20_test | lkh (10 s limit) | 2 | 5.0000 | 10.000 | 1.00 | 2.0 | 1.00 |"
    )


def test_inconsistent_file_is_rejected(tmp_path: Path) -> None:
    path = write_results(Results("tsp", "d", "m", [5.0], [4.0], 1.0), tmp_path / "r.json")
    data = json.loads(path.read_text())
    data["mean_gap"] = 1.0
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="r.json: 'mean_cost' or 'mean_gap'"):
        load_script("results_table").table([path])
