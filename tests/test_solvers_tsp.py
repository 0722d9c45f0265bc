"""TSP baselines: exact branch-and-cut, LKH-3 and OR-Tools against independent optima."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from nco.problems.tsp.solvers import SOLVERS, solve_exact, solve_lkh, tour_length

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "reference"
TSP200 = SHARED / "tsp200_bq_128.npz"


def held_karp(coords: np.ndarray) -> float:
    """Optimal tour length by the Held-Karp dynamic program (independent of the solvers)."""
    n = len(coords)
    dist = np.sqrt(((coords[:, None] - coords[None]) ** 2).sum(-1))
    best = {(1 << (j - 1), j): dist[0, j] for j in range(1, n)}
    for size in range(2, n):
        for subset in itertools.combinations(range(1, n), size):
            mask = sum(1 << (j - 1) for j in subset)
            for j in subset:
                rest = mask & ~(1 << (j - 1))
                best[(mask, j)] = min(best[(rest, k)] + dist[k, j] for k in subset if k != j)
    full = (1 << (n - 1)) - 1
    return min(best[(full, j)] + dist[j, 0] for j in range(1, n))


def random_coords(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(size=(n, 2))


def test_tour_length_by_hand() -> None:
    """The unit square's perimeter is 4; the crossing tour is 2 + 2 sqrt(2)."""
    square = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    assert tour_length(square, [0, 1, 2, 3]) == pytest.approx(4.0, abs=1e-15)
    assert tour_length(square, [0, 2, 1, 3]) == pytest.approx(2 + 2 * math.sqrt(2), abs=1e-15)


def test_tour_length_rejects_non_permutations() -> None:
    """A tour that repeats or misses a node is an error, not a length."""
    square = np.zeros((4, 2))
    with pytest.raises(ValueError, match="permutation"):
        tour_length(square, [0, 1, 1, 3])


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name", ["exact", "lkh", "ortools"])
def test_solvers_match_held_karp(name: str, seed: int) -> None:
    """Every solver finds the Held-Karp optimum of a random 9-node instance."""
    coords = random_coords(9, seed)
    res = SOLVERS[name]({"coords": coords}, 0.3, seed)
    assert res.cost == pytest.approx(held_karp(coords), abs=1e-9)
    assert res.solution[0] == 0 and sorted(res.solution) == list(range(9))
    assert res.cost == tour_length(coords, res.solution)


def test_exact_proves_optimality_with_bound() -> None:
    """The exact solver reports proven optimality and a bound equal to the cost at n = 40."""
    coords = random_coords(40, 7)
    res = solve_exact({"coords": coords}, 60.0, 0)
    assert res.optimal is True and res.status == "optimal"
    assert res.bound == pytest.approx(res.cost, rel=1e-9)
    assert res.cost <= solve_lkh({"coords": coords}, 10.0, 0).cost + 1e-9


def test_exact_on_a_triangle() -> None:
    """Three nodes have one tour, its perimeter, proven optimal."""
    coords = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 4.0]])
    res = solve_exact({"coords": coords}, 5.0, 0)
    assert res.cost == pytest.approx(12.0) and res.optimal


def test_exact_timeout_returns_incumbent_unproven() -> None:
    """With no time left the LKH incumbent comes back, valid but not proven optimal."""
    coords = random_coords(60, 3)
    res = solve_exact({"coords": coords}, 1e-6, 0)
    assert res.optimal is False and res.status == "time_limit" and res.bound is None
    assert res.cost == pytest.approx(tour_length(coords, res.solution))


def test_lkh_same_seed_same_tour() -> None:
    """LKH is deterministic for a given seed."""
    coords = random_coords(80, 5)
    a, b = solve_lkh({"coords": coords}, 5.0, 11), solve_lkh({"coords": coords}, 5.0, 11)
    assert a.solution == b.solution and a.cost == b.cost


@pytest.mark.parametrize(
    "instance",
    [
        {},
        {"coords": np.zeros((5, 3))},
        {"coords": np.zeros((2, 2))},
        {"coords": np.array([[0.0, 0.0], [1.0, np.nan], [0.0, 1.0]])},
    ],
)
@pytest.mark.parametrize("name", ["exact", "lkh", "ortools"])
def test_bad_instances_raise(name: str, instance: dict) -> None:
    """Missing, misshapen, too small or non-finite coordinates raise ValueError."""
    with pytest.raises(ValueError, match="TSP instance"):
        SOLVERS[name](instance, 1.0, 0)


@pytest.mark.skipif(not TSP200.is_file(), reason="../shared reference data absent")
def test_lkh_reaches_tsp200_optima() -> None:
    """LKH-3 on integer-scaled coordinates reproduces Concorde's TSP200 optima to 1e-6."""
    data = np.load(TSP200)
    for i in range(3):
        res = solve_lkh({"coords": data["coords"][i]}, 10.0, 1234)
        assert res.cost == pytest.approx(data["tour_lengths"][i], abs=1e-6)


@pytest.mark.skipif(not TSP200.is_file(), reason="../shared reference data absent")
def test_exact_proves_first_tsp200_optimum() -> None:
    """The exact solver proves Concorde's optimum of the first TSP200 instance to 1e-6."""
    data = np.load(TSP200)
    res = solve_exact({"coords": data["coords"][0]}, 600.0, 1234)
    assert res.optimal, res.status
    assert res.cost == pytest.approx(data["tour_lengths"][0], abs=1e-6)


@pytest.mark.slow
@pytest.mark.skipif(not TSP200.is_file(), reason="../shared reference data absent")
def test_exact_proves_tsp200_optima() -> None:
    """The exact solver proves Concorde's TSP200 optima (about 5-60 s each on 2 cores)."""
    data = np.load(TSP200)
    for i in range(3):
        res = solve_exact({"coords": data["coords"][i]}, 600.0, 1234)
        assert res.optimal, res.status
        assert res.cost == pytest.approx(data["tour_lengths"][i], abs=1e-6)


def test_lkh_without_elkai_names_the_extra(monkeypatch) -> None:
    """elkai is optional (non-commercial licence): without it LKH says how to get it."""
    import sys

    from nco.problems.tsp.solvers import solve_lkh

    monkeypatch.setitem(sys.modules, "elkai", None)
    with pytest.raises(ImportError, match=r"pip install 'nco\[lkh\]'"):
        solve_lkh({"coords": np.random.default_rng(0).uniform(size=(5, 2))}, 1.0, 0)


def test_exact_without_elkai_starts_from_two_opt(monkeypatch) -> None:
    """The exact solver needs no LKH-3: a 2-opt incumbent gives the same proven optimum."""
    import sys

    from nco.problems.tsp.solvers import _two_opt_tour

    square = np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 0.0], [0.0, 1.0]])  # NN order crosses
    assert tour_length(square, _two_opt_tour(square)) == pytest.approx(4.0)
    coords = np.random.default_rng(5).uniform(size=(30, 2))
    with_lkh = solve_exact({"coords": coords}, 30.0, 0)
    monkeypatch.setitem(sys.modules, "elkai", None)
    without = solve_exact({"coords": coords}, 30.0, 0)
    assert without.optimal and with_lkh.optimal
    assert without.cost == pytest.approx(with_lkh.cost, rel=1e-9)
