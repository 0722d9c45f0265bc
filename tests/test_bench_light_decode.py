"""benchmarks/bench_light_decode.py: the agreement check between nco's and the authors' best
solutions, and the error on a missing snapshot of the authors' code (the timing itself needs
that snapshot and runs by hand)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from script_loader import load_script


def test_agreement_compares_costs_and_solutions_up_to_start_direction_and_route_order() -> None:
    bench = load_script("bench_light_decode")
    ref = ([1.0, 2.0], [[0, 1, 2, 3], [0, 2, 1, 3]])
    own = ([1.00001, 2.5], [[2, 1, 0, 3], [0, 1, 2, 3]])  # tour 1: same, from 2 backwards
    assert bench._agreement("tsp", ref, own) == {"same_cost_share": 0.5, "same_tour_share": 0.5}
    ref = ([3.0], [[1, 2, 0, 3]])
    own = ([3.0], [[3, 0, 2, 1]])  # the same two routes, the other order, one reversed
    assert bench._agreement("cvrp", ref, own) == {"same_cost_share": 1.0, "same_tour_share": 1.0}


def test_a_missing_reference_snapshot_is_named(tmp_path: Path, monkeypatch) -> None:
    bench = load_script("bench_light_decode")
    monkeypatch.setattr(sys, "argv", ["bench_light_decode.py", "--ref", str(tmp_path)])
    with pytest.raises(SystemExit, match="AMDKD-POMO snapshot"):
        bench.main()
