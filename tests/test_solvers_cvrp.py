"""CVRP baselines: HGS (PyVRP) and OR-Tools against a brute-force optimum and LEHD references."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from nco.problems.cvrp.routes import routes_cost
from nco.problems.cvrp.solvers import SOLVERS, check_routes, solve_hgs

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "reference"
CVRP200 = SHARED / "cvrp200_128.npz"


def brute_force(instance: dict[str, np.ndarray]) -> float:
    """Optimal CVRP cost: best route per feasible customer subset, then the best partition."""
    depot, locs = instance["depot"], instance["locs"]
    demands, capacity = instance["demands"], int(instance["capacity"])
    n = len(locs)
    route = {}
    for mask in range(1, 1 << n):
        members = [c for c in range(n) if mask >> c & 1]
        if demands[members].sum() <= capacity:
            route[mask] = min(
                routes_cost(depot, locs, [[c + 1 for c in order]])
                for order in itertools.permutations(members)
            )
    best = [0.0] + [math.inf] * ((1 << n) - 1)
    for mask in range(1, 1 << n):
        low = mask & -mask  # the route holding the lowest customer of `mask`
        sub = mask
        while sub:
            if sub & low and sub in route:
                best[mask] = min(best[mask], best[mask ^ sub] + route[sub])
            sub = (sub - 1) & mask
    return best[-1]


def small_instance(seed: int, n: int = 7, capacity: int = 10) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "depot": rng.uniform(size=2),
        "locs": rng.uniform(size=(n, 2)),
        "demands": rng.integers(1, 10, size=n),
        "capacity": np.array(capacity),
    }


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", ["hgs", "ortools"])
def test_solvers_match_brute_force(name: str, seed: int) -> None:
    """HGS and OR-Tools find the brute-force optimum of a 7-customer instance."""
    instance = small_instance(seed)
    res = SOLVERS[name](instance, 0.5, seed)
    assert res.cost == pytest.approx(brute_force(instance), abs=1e-5)
    check_routes(instance["demands"], int(instance["capacity"]), res.solution)
    assert res.cost == routes_cost(instance["depot"], instance["locs"], res.solution)


def test_routes_cost_by_hand() -> None:
    """Depot at the origin, customers at (1, 0) and (0, 1): 4 apart, 2 + sqrt(2) together."""
    depot, locs = np.zeros(2), np.array([[1.0, 0.0], [0.0, 1.0]])
    assert routes_cost(depot, locs, [[1], [2]]) == pytest.approx(4.0)
    assert routes_cost(depot, locs, [[1, 2]]) == pytest.approx(2 + math.sqrt(2))


@pytest.mark.parametrize(
    ("routes", "match"),
    [([[1, 2]], "exactly once"), ([[1], [2], [3], [3]], "exactly once"), ([[1, 2, 3]], "capacity")],
)
def test_check_routes_rejects(routes: list[list[int]], match: str) -> None:
    """Missing or repeated customers and overloaded routes are rejected."""
    with pytest.raises(ValueError, match=match):
        check_routes(np.array([3, 4, 5]), 10, routes)


def test_hgs_same_seed_same_routes() -> None:
    """HGS with the same seed returns the same solution."""
    instance = small_instance(4, n=8)
    a, b = solve_hgs(instance, 0.3, 9), solve_hgs(instance, 0.3, 9)
    assert a.solution == b.solution and a.cost == b.cost


def test_hgs_needs_no_fleet_bound() -> None:
    """Customers each filling a vehicle get one route each (the fleet is not a constraint)."""
    instance = small_instance(5, n=6, capacity=9)
    instance["demands"] = np.full(6, 9)
    res = solve_hgs(instance, 0.2, 0)
    assert sorted(map(len, res.solution)) == [1] * 6


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("demands", np.array([1, 2, 30, 1, 1, 1, 1]), "capacity"),
        ("demands", np.array([1.5, 2, 3, 1, 1, 1, 1]), "integer"),
        ("capacity", np.array(0), "capacity"),
        ("locs", np.zeros((7, 3)), "locs"),
        ("depot", None, "missing"),
    ],
)
@pytest.mark.parametrize("name", ["hgs", "ortools"])
def test_bad_instances_raise(name: str, field: str, value: np.ndarray | None, match: str) -> None:
    """Bad demands, capacities, shapes or missing fields raise ValueError."""
    instance = small_instance(0)
    if value is None:
        del instance[field]
    else:
        instance[field] = value
    with pytest.raises(ValueError, match=match):
        SOLVERS[name](instance, 0.2, 0)


@pytest.mark.slow
@pytest.mark.skipif(not CVRP200.is_file(), reason="../shared reference data absent")
def test_hgs_within_one_percent_of_lehd_cvrp200() -> None:
    """HGS (15 s) lands within 1% of the LKH-3 references of three CVRP200 instances."""
    data = np.load(CVRP200)
    for i in range(3):
        nodes = data["nodes"][i]
        instance = {
            "depot": nodes[0],
            "locs": nodes[1:],
            "demands": data["demands"][i, 1:],
            "capacity": data["capacity"][i],
        }
        res = solve_hgs(instance, 15.0, 1234)
        assert res.cost <= 1.01 * data["tour_lengths"][i]
