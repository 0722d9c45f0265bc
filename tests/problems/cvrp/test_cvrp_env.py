"""Tests for the CVRP env (nco/problems/cvrp/env.py): masks, steps, objective, protocol."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from nco.problems.cvrp import CVRPEnv, CVRPInstances
from nco.testing import check_env_protocol


def feasible_from_routes(routes: list[list[int]], demands: list[int], capacity: int) -> set[int]:
    """Feasible actions after the partial `routes`, computed independently in plain Python."""
    visited = {c for route in routes for c in route}
    load = sum(demands[c - 1] for c in routes[-1]) if routes else 0
    ok = set()
    for c in range(1, len(demands) + 1):
        if c in visited:
            continue
        ok.add(2 * (c - 1) + 1)
        if routes and load + demands[c - 1] <= capacity:
            ok.add(2 * (c - 1))
    return ok


def numpy_cost(depot: np.ndarray, locs: np.ndarray, routes: list[list[int]]) -> float:
    """Total length of depot-to-depot routes, recomputed with numpy."""
    pts = np.vstack([depot, locs])
    total = 0.0
    for route in routes:
        path = pts[[0, *route, 0]]
        total += np.sqrt(((path[1:] - path[:-1]) ** 2).sum(1)).sum()
    return total


def tiny_instance() -> CVRPInstances:
    """Depot (0, 0); customers (1, 0), (1, 1), (0, 1) with demand 2 each; capacity 4."""
    return CVRPInstances(
        depot=torch.zeros(1, 2, dtype=torch.float64),
        locs=torch.tensor([[[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]], dtype=torch.float64),
        demands=torch.tensor([[2, 2, 2]]),
        capacity=torch.tensor([4]),
    )


@pytest.mark.parametrize("seed", range(24))
def test_masks_match_independent_checker(seed: int) -> None:
    """Random rollouts: every mask equals the route-based checker; final routes are valid."""
    g = torch.Generator().manual_seed(seed)
    n = 1 + seed % 12
    env = CVRPEnv(n, capacity=20, capacity_range=(9, 14))
    inst = env.generate(6, g)
    state = env.reset(inst)
    routes: list[list[list[int]]] = [[] for _ in range(6)]
    for _ in range(n):
        mask = env.action_mask(state)
        for i in range(6):
            expected = feasible_from_routes(
                routes[i], inst.demands[i].tolist(), int(inst.capacity[i])
            )
            assert set(mask[i].nonzero().squeeze(1).tolist()) == expected
        actions = torch.multinomial(mask.double(), 1, generator=g).squeeze(1)
        for i, a in enumerate(actions.tolist()):
            if a % 2:
                routes[i].append([])
            routes[i][-1].append(a // 2 + 1)
        state = env.step(state, actions)
    assert env.is_done(state).all()
    for i in range(6):
        flat = sorted(c for route in routes[i] for c in route)
        assert flat == list(range(1, n + 1))
        for route in routes[i]:
            assert sum(inst.demands[i, c - 1] for c in route) <= inst.capacity[i]
        cost = numpy_cost(inst.depot[i].numpy(), inst.locs[i].numpy(), routes[i])
        assert -float(env.objective(state)[i]) == pytest.approx(cost, abs=1e-12)


def test_hand_computed_rollout() -> None:
    """Via 1, direct 2, via 3 on the tiny instance: masks and length 4 + sqrt(2) by hand."""
    env = CVRPEnv(3, capacity=9)
    state = env.reset(tiny_instance())
    assert env.action_mask(state)[0].tolist() == [False, True] * 3
    state = env.step(state, torch.tensor([1]))  # via depot to customer 1
    assert int(state.free[0]) == 2
    assert env.action_mask(state)[0].tolist() == [False, False, True, True, True, True]
    state = env.step(state, torch.tensor([2]))  # directly to customer 2
    assert int(state.free[0]) == 0
    assert env.action_mask(state)[0].tolist() == [False, False, False, False, False, True]
    state = env.step(state, torch.tensor([5]))  # via depot to customer 3, then home
    assert env.is_done(state).all()
    assert float(state.length[0]) == pytest.approx(4 + math.sqrt(2), abs=1e-15)
    assert float(env.objective(state)[0]) == pytest.approx(-(4 + math.sqrt(2)), abs=1e-15)


@pytest.mark.parametrize(
    ("prefix", "action"),
    [([], 0), ([1], 1), ([1, 2], 4), ([], 6), ([], -1)],
    ids=["direct-from-depot", "visited", "over-capacity", "out-of-range", "negative"],
)
def test_step_rejects_infeasible_actions(prefix: list[int], action: int) -> None:
    """Stepping with an infeasible action raises ValueError instead of corrupting the state."""
    env = CVRPEnv(3, capacity=9)
    state = env.reset(tiny_instance())
    for a in prefix:
        state = env.step(state, torch.tensor([a]))
    with pytest.raises(ValueError):
        env.step(state, torch.tensor([action]))


def test_protocol_checks() -> None:
    """The shared protocol check passes: step keeps its input, index handles repeats."""
    env = CVRPEnv(7, capacity=12)
    g = torch.Generator().manual_seed(3)
    state, actions = check_env_protocol(env, env.generate(5, g), g)
    assert (actions >= 0).all() and actions.shape == (5, 7)
    assert env.max_steps(env.generate(1, g)) == 7


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_customers": 0, "capacity": 10},
        {"num_customers": 13},
        {"num_customers": 10, "capacity": 8},
        {"num_customers": 10, "capacity_range": (8, 20)},
        {"num_customers": 10, "capacity_range": (30, 20)},
        {"num_customers": 10, "capacity_range": (10,)},
    ],
)
def test_bad_env_arguments(kwargs: dict) -> None:
    """Invalid sizes, capacities and capacity ranges raise ValueError."""
    with pytest.raises(ValueError):
        CVRPEnv(**kwargs)


@pytest.mark.parametrize("demand", [-1, 5])
def test_reset_rejects_bad_demands(demand: int) -> None:
    """Demands below 0 or above the capacity are refused at reset."""
    inst = tiny_instance()
    bad = CVRPInstances(inst.depot, inst.locs, torch.tensor([[2, demand, 2]]), inst.capacity)
    with pytest.raises(ValueError):
        CVRPEnv(3, capacity=9).reset(bad)
