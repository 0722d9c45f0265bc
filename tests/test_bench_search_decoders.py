"""benchmarks/bench_adaptive.py and bench_ults.py: the read-outs of their saved results."""

from __future__ import annotations

import pytest
from script_loader import load_script


def _variant(best: list[list[float]], rows: list[int], refs: list[float]) -> dict:
    return {
        "references": refs,
        "anytime": {"best": best, "rows": rows, "rounds": len(rows)},
        "mean_gap": None,
        "policy_rows": rows[-1],
        "sequences": 0,
    }


def test_adaptive_per_round_gap_and_reach_by_hand() -> None:
    """Objectives -11, -10.5 then -10 against reference 10: gaps 10 %, 5 %, 0 %; a 5 % target is
    reached in round 2 after its rows."""
    bench = load_script("bench_adaptive")
    v = _variant([[-11.0], [-10.5], [-10.0]], [100, 180, 250], [10.0])
    assert bench.per_round_gap(v) == pytest.approx([10.0, 5.0, 0.0])
    assert bench.reach(v, 5.0) == (2, 180.0)
    assert bench.reach(v, -1.0) == (None, None)


def test_adaptive_table_names_the_share_of_fixed_rows() -> None:
    """The table gives each variant's rows relative to the fixed run and where it reaches the
    fixed run's final gap."""
    bench = load_script("bench_adaptive")
    fixed = _variant([[-11.0], [-10.0]], [100, 200], [10.0])
    fixed["mean_gap"] = 0.0
    stop = _variant([[-11.0]], [100], [10.0])
    stop["mean_gap"] = 10.0
    text = bench.table({"tsp": {"num_instances": 1, "variants": {"fixed": fixed, "stop": stop}}})
    assert "| tsp (1) | fixed | 0.000 | 200 | 100% |" in text
    assert "| tsp (1) | stop | 10.000 | 100 | 50% | 0 | 1 | not reached |" in text


def test_ults_interpolates_beam_search_at_equal_rows() -> None:
    """Linear in rows between the two widths around, clamped outside."""
    bench = load_script("bench_ults")
    assert bench._interp(75.0, [50.0, 100.0], [-7.0, -6.0]) == pytest.approx(-6.5)
    assert bench._interp(10.0, [50.0, 100.0], [-7.0, -6.0]) == pytest.approx(-7.0)
