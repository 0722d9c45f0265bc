"""Tests for route conversions and route augmentations (nco/problems/cvrp/routes.py, augment.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from nco.problems.cvrp import CVRPEnv
from nco.problems.cvrp.augment import reverse_routes, sort_routes
from nco.problems.cvrp.routes import (
    actions_to_routes,
    routes_cost,
    routes_to_actions,
    tour_to_actions,
)
from nco.testing import check_env_protocol

PAPER_ROUTES = [[1, 4, 5], [2, 3], [6, 7, 8]]  # tour (0,1,4,5,0,2,3,0,6,7,8,0) of paper D.3.1


def test_paper_example_both_forms() -> None:
    """The paper's (permutation, flag) example gives the same actions as its routes."""
    nodes = torch.tensor([1, 4, 5, 2, 3, 6, 7, 8])
    flags = torch.tensor([1, 0, 0, 1, 0, 1, 0, 0])
    expected = [1, 6, 8, 3, 4, 11, 12, 14]
    assert tour_to_actions(nodes, flags).tolist() == expected
    assert routes_to_actions(PAPER_ROUTES, 8).tolist() == expected
    assert actions_to_routes(torch.tensor(expected + [-1, -1])) == PAPER_ROUTES


def test_first_flag_is_forced() -> None:
    """A tour whose first flag is 0 still starts from the depot (flag read as 1)."""
    assert tour_to_actions(torch.tensor([[2, 1]]), torch.tensor([[0, 0]])).tolist() == [[3, 0]]


def test_round_trip_on_random_solutions() -> None:
    """actions -> routes -> actions is the identity on random feasible solutions."""
    env = CVRPEnv(15, capacity=20)
    g = torch.Generator().manual_seed(0)
    _, actions = check_env_protocol(env, env.generate(20, g), g)
    for row in actions:
        routes = actions_to_routes(row)
        assert torch.equal(routes_to_actions(routes, 15), row)


def test_routes_cost_by_hand() -> None:
    """Unit-square corners: route [1, 2] costs 1 + 1 + sqrt(2); an empty route costs 0."""
    depot = np.zeros(2)
    locs = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    assert routes_cost(depot, locs, [[1, 2], [], [3]]) == pytest.approx(4 + math.sqrt(2))


@pytest.mark.parametrize(
    "routes", [[[1, 2], [2, 3]], [[1, 2]], [[1, 2, 3, 4]], [[0, 1, 2, 3]]], ids=str
)
def test_routes_to_actions_rejects_bad_routes(routes: list[list[int]]) -> None:
    """Duplicates, missing customers and ids outside 1..n raise ValueError."""
    with pytest.raises(ValueError):
        routes_to_actions(routes, 3)


def random_solutions(seed: int, n: int = 12, b: int = 16) -> tuple:
    """Random instances and random feasible solutions of them."""
    env = CVRPEnv(n, capacity=15)
    g = torch.Generator().manual_seed(seed)
    inst = env.generate(b, g)
    _, actions = check_env_protocol(env, inst, g)
    return env, inst, actions


def cost_of(env: CVRPEnv, inst, actions: torch.Tensor) -> torch.Tensor:
    """Rollout cost of complete action sequences."""
    state = env.reset(inst)
    for t in range(actions.shape[1]):
        state = env.step(state, actions[:, t])
    return -env.objective(state)


def test_reverse_routes_keeps_routes_and_cost() -> None:
    """Reversal keeps each route's customers and position, and the total cost."""
    env, inst, actions = random_solutions(1)
    out = reverse_routes(actions, torch.Generator().manual_seed(2))
    changed = 0
    for a, b in zip(actions, out, strict=True):
        ra, rb = actions_to_routes(a), actions_to_routes(b)
        assert [sorted(r) for r in ra] == [sorted(r) for r in rb]
        assert all(x == y or x == y[::-1] for x, y in zip(ra, rb, strict=True))
        changed += ra != rb
    assert changed > 0
    torch.testing.assert_close(cost_of(env, inst, out), cost_of(env, inst, actions))


def test_sort_routes_orders_by_remaining_capacity() -> None:
    """Sorted routes have non-increasing load (ascending free capacity), same routes and cost."""
    env, inst, actions = random_solutions(3)
    out = sort_routes(actions, inst.demands)
    for i, (a, b) in enumerate(zip(actions, out, strict=True)):
        ra, rb = actions_to_routes(a), actions_to_routes(b)
        loads = [sum(int(inst.demands[i, c - 1]) for c in r) for r in rb]
        assert loads == sorted(loads, reverse=True)
        assert sorted(map(tuple, ra)) == sorted(map(tuple, rb))
    torch.testing.assert_close(cost_of(env, inst, out), cost_of(env, inst, actions))


def test_sort_routes_by_hand_is_stable() -> None:
    """Loads 3, 5, 3, 6 sort to 6, 5, 3, 3 with the two 3-routes in their original order."""
    demands = torch.tensor([[1, 2, 5, 3, 6]])  # customers 1..5
    routes = [[1, 2], [3], [4], [5]]
    out = sort_routes(routes_to_actions(routes, 5).unsqueeze(0), demands)
    assert actions_to_routes(out[0]) == [[5], [3], [1, 2], [4]]
