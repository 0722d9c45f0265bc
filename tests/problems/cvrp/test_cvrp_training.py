"""Tests for supervised sub-problems (nco/problems/cvrp/subproblems.py, CVRPEnv.training_batch)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nco.problems.cvrp import CVRPEnv, CVRPInstances
from nco.problems.cvrp.routes import routes_to_actions
from nco.problems.cvrp.subproblems import sample_subproblems
from nco.testing import check_env_protocol

N = 10


def expert_data(seed: int, b: int = 12) -> tuple:
    """Instances and random feasible solutions standing in for expert ones."""
    env = CVRPEnv(N, capacity=15)
    g = torch.Generator().manual_seed(seed)
    inst = env.generate(b, g)
    _, actions = check_env_protocol(env, inst, g)
    return env, inst, actions


def replay(env: CVRPEnv, state, steps: torch.Tensor):
    """The state after stepping through `steps` (B, T), checking each step is feasible."""
    for t in range(steps.shape[1]):
        assert env.action_mask(state).gather(1, steps[:, t : t + 1]).all()
        state = env.step(state, steps[:, t])
    return state


@pytest.mark.parametrize("num_remaining", [1, 3, 6, N])
def test_subproblems_are_expert_segments_ending_at_the_depot(num_remaining: int) -> None:
    """Each sub-problem is a contiguous expert segment ending at a route end, checked by hand.

    Customers are identified through their coordinates; the origin's free capacity, the
    expert continuation and its cost are recomputed in plain Python / numpy.
    """
    env, inst, actions = expert_data(seed=num_remaining)
    state, steps = sample_subproblems(
        inst, actions, num_remaining, torch.Generator().manual_seed(0)
    )
    assert state.remaining.shape == (12, num_remaining)
    end = replay(env, state, steps)
    assert env.is_done(end).all()
    for i in range(12):
        order = [a // 2 + 1 for a in actions[i].tolist()]
        flags = [a % 2 for a in actions[i].tolist()]
        flags[0] = 1
        locs = inst.locs[i].numpy()
        ids = [int(np.flatnonzero((locs == p).all(1))[0]) + 1 for p in state.coords[i, 2:].numpy()]
        start = order.index(ids[0])
        stop = start + num_remaining
        assert order[start:stop] == ids
        assert [s % 2 for s in steps[i].tolist()] == flags[start:stop]
        assert stop == N or flags[stop] == 1  # the segment ends at the depot
        route_start = max((j for j in range(start) if flags[j]), default=start)
        served = sum(int(inst.demands[i, c - 1]) for c in order[route_start:start])
        assert int(state.free[i]) == int(inst.capacity[i]) - served
        pts = np.vstack([inst.depot[i].numpy(), locs])
        if start == 0:
            assert int(state.origin[i]) == 0
            here = pts[0]
        else:
            assert int(state.origin[i]) == 1
            here = pts[order[start - 1]]
            assert np.array_equal(state.coords[i, 1].numpy(), here)
        cost = 0.0
        for c, via in zip(ids, flags[start:stop], strict=True):
            hops = [here, pts[0], pts[c]] if via else [here, pts[c]]
            cost += sum(np.linalg.norm(b - a) for a, b in zip(hops[:-1], hops[1:], strict=True))
            here = pts[c]
        cost += np.linalg.norm(pts[0] - here)
        assert float(end.length[i]) == pytest.approx(cost, abs=1e-12)


def test_full_subproblem_reproduces_the_expert_cost() -> None:
    """With every customer remaining, the continuation costs exactly the expert solution."""
    env, inst, actions = expert_data(seed=5)
    state, steps = sample_subproblems(inst, actions, N, torch.Generator().manual_seed(1))
    assert (state.origin == 0).all() and torch.equal(state.free, inst.capacity)
    torch.testing.assert_close(
        replay(env, state, steps).length, replay(env, env.reset(inst), actions).length
    )


def test_training_batch_targets_are_feasible_and_seeded() -> None:
    """Targets are feasible expert moves; equal seeds give equal batches; points stay in [0, 1]."""
    env, inst, actions = expert_data(seed=7, b=64)
    a_state, a_target = env.training_batch(inst, actions, torch.Generator().manual_seed(3))
    b_state, b_target = env.training_batch(inst, actions, torch.Generator().manual_seed(3))
    assert torch.equal(a_target, b_target) and torch.equal(a_state.coords, b_state.coords)
    assert env.action_mask(a_state).gather(1, a_target.view(-1, 1)).all()
    assert float(a_state.coords.min()) >= -1e-12 and float(a_state.coords.max()) <= 1 + 1e-12
    # the target customer is always the first remaining one, reached via the depot iff needed
    assert torch.equal(a_target // 2 + 1, a_state.remaining[:, 0])
    starts = (a_state.origin == 0) | (a_target % 2 == 1)
    assert torch.equal(a_target % 2 == 1, starts)


def test_training_batch_sorts_routes_before_cutting() -> None:
    """Sub-problems are cut from the routes sorted by load: 5,5 | 2,2,2 | 1,1,1 per demand.

    Each route has one demand value, so reversal cannot change the demand sequence, and every
    sampled sub-problem must show a suffix-aligned slice of the sorted sequence.
    """
    routes = [[1, 2, 3], [4, 5], [6, 7, 8]]  # loads 3, 10, 6 -> sorted 10, 6, 3
    inst = CVRPInstances(
        depot=torch.full((1, 2), 0.5, dtype=torch.float64),
        locs=torch.rand(1, 8, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64),
        demands=torch.tensor([[1, 1, 1, 5, 5, 2, 2, 2]]),
        capacity=torch.tensor([15]),
    )
    actions = routes_to_actions(routes, 8).unsqueeze(0)
    ordered = [5, 5, 2, 2, 2, 1, 1, 1]
    sizes = set()
    for seed in range(40):
        state, target = CVRPEnv(8, capacity=15).training_batch(
            inst, actions, torch.Generator().manual_seed(seed)
        )
        got = state.demands.gather(1, state.remaining)[0].tolist()
        r = len(got)
        ends = [e for e in (2, 5, 8) if e >= r and ordered[e - r : e] == got]
        assert ends, f"remaining demands {got} are not a sorted segment"
        assert int(target[0]) % 2 == int(any(e - r in (0, 2, 5) for e in ends))
        sizes.add(r)
    assert len(sizes) > 4
