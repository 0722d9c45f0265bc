"""Supervised training of the AM env forms: the problem's expert data (BQ-form actions) is
rewritten in the env's form (`Env.expert_actions`), and a masked expert action is an error,
not an infinite loss that turns the weights to NaN."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nco.expert_data import make_expert_data
from nco.models.am import AMCVRPPolicy
from nco.problems.cvrp.am_env import AMCVRPEnv
from nco.problems.cvrp.routes import routes_to_actions
from nco.problems.cvrp.types import CVRPInstances
from nco.problems.tsp.am_env import AMTSPEnv
from nco.training.module import imitation_loss
from nco.training.runner import expert_data
from nco.training.trajectories import trajectory_loss


@pytest.mark.parametrize("problem", ["tsp", "cvrp"])
def test_expert_file_replays_in_the_am_form(tmp_path, problem: str) -> None:
    """`nco-data expert` output read for an AM env: every row replays to its end, to the
    solver's cost, and `to_solution` gives a tour / routes covering every node once."""
    out = tmp_path / "e.npz"
    size = 12 if problem == "tsp" else 10
    solver = "lkh" if problem == "tsp" else "hgs"
    arrays = make_expert_data(problem, size, 6, solver, out, time_limit=0.2, seed=3)
    env = AMTSPEnv(size) if problem == "tsp" else AMCVRPEnv(size)
    instances, actions = expert_data(str(out), env)
    if problem == "tsp":
        assert actions.shape == (6, size) and bool((actions[:, 0] == 0).all())
    costs = []
    for i in range(6):  # one row at a time: CVRP rows end after different numbers of steps
        row = actions[i][actions[i] >= 0].view(1, -1)
        state = env.reset(instances.index(torch.tensor([i])))
        for t in range(row.shape[1]):
            state = env.step(state, row[:, t])
        assert bool(env.is_done(state).all())
        costs.append(float(-env.objective(state)))
        solution = env.to_solution(instances, row[0].tolist())
        visited = [c for r in solution for c in r] if problem == "cvrp" else solution
        first = 1 if problem == "cvrp" else 0
        assert sorted(visited) == list(range(first, size + first))
    assert np.allclose(costs, arrays["reference_costs"], rtol=1e-6)


def test_cvrp_expert_actions_by_hand() -> None:
    """Routes [1, 2] [3] [5, 4] as BQ actions become 1 2 0 3 0 5 4; a shorter row is padded."""
    env = AMCVRPEnv(5, capacity=20)
    inst = env.generate(2, torch.Generator().manual_seed(0))
    bq = torch.stack(
        [routes_to_actions([[1, 2], [3], [5, 4]], 5), routes_to_actions([[1, 2, 3, 4, 5]], 5)]
    )
    assert env.expert_actions(inst, bq).tolist() == [
        [1, 2, 0, 3, 0, 5, 4],
        [1, 2, 3, 4, 5, -1, -1],
    ]


def exact_fill() -> tuple[AMCVRPEnv, CVRPInstances, torch.Tensor]:
    """One route of demands 7 + 9 + 8 + 6 = 30, the capacity: exact, but over 1 in float32
    fractions (the AM code's test), then a route of customer 5."""
    env = AMCVRPEnv(5, capacity=30)
    inst = CVRPInstances(
        depot=torch.tensor([[0.5, 0.5]]),
        locs=torch.rand(1, 5, 2, generator=torch.Generator().manual_seed(0)),
        demands=torch.tensor([[7, 9, 8, 6, 3]]),
        capacity=torch.tensor([30]),
    )
    actions = env.expert_actions(inst, routes_to_actions([[1, 2, 3, 4], [5]], 5)[None])
    return env, inst, actions


def loss(way: str, float32_capacity: bool) -> torch.Tensor:
    """A tiny AM CVRP's imitation loss on the exact-fill route, the sub-trajectory way (the
    state before customer 4) or over whole trajectories."""
    env, inst, actions = exact_fill()
    torch.manual_seed(0)
    policy = AMCVRPPolicy(embed_dim=16, num_heads=2, num_layers=1, ff_hidden=32)
    policy.float32_capacity = float32_capacity
    if way == "trajectories":
        return trajectory_loss(policy, env, inst, actions)
    state = env.reset(inst)
    for t in range(3):
        state = env.step(state, actions[:, t])
    return imitation_loss(policy, env, state, actions[:, 3])


@pytest.mark.parametrize("way", ["sub-trajectory", "trajectories"])
def test_a_masked_expert_action_is_an_error_naming_the_fix(way: str) -> None:
    """With the float32 capacity test the AM CVRP masks customer 4 of the exact route: both
    imitation losses raise instead of returning inf; with model.float32_capacity=false the
    loss is finite."""
    with pytest.raises(ValueError, match="float32_capacity=false"):
        loss(way, True)
    assert torch.isfinite(loss(way, False))
