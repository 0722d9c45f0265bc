"""The depot-as-action CVRP env: protocol, masks and lengths by hand, starts, symmetry."""

from __future__ import annotations

import pytest
import torch

from nco.problems.cvrp.am_env import AMCVRPEnv
from nco.problems.cvrp.types import CVRPInstances
from nco.testing import check_env_protocol

# depot (0, 0); customers 1 at (0, 1), 2 at (1, 1), 3 at (1, 0); capacity 10
ONE = CVRPInstances(
    depot=torch.tensor([[0.0, 0.0]], dtype=torch.float64),
    locs=torch.tensor([[[0.0, 1.0], [1.0, 1.0], [1.0, 0.0]]], dtype=torch.float64),
    demands=torch.tensor([[6, 4, 5]]),
    capacity=torch.tensor([10]),
)


def test_protocol() -> None:
    env = AMCVRPEnv(10)
    check_env_protocol(env, env.generate(6, torch.Generator().manual_seed(0)))


def test_masks_and_length_by_hand() -> None:
    env = AMCVRPEnv(3, capacity=10)
    state = env.reset(ONE)
    assert env.action_mask(state).tolist() == [[False, True, True, True]]  # not depot twice
    state = env.step(state, torch.tensor([1]))  # load 6
    assert env.action_mask(state).tolist() == [[True, False, True, False]]  # 5 > 4 left
    state = env.step(state, torch.tensor([2]))  # load 10, exactly full
    assert env.action_mask(state).tolist() == [[True, False, False, False]]
    state = env.step(state, torch.tensor([0]))
    assert not env.is_done(state).any()
    state = env.step(state, torch.tensor([3]))
    assert env.is_done(state).all()
    # 0-1-2-0-3-0: 1 + 1 + sqrt2 + 1 + 1
    assert torch.allclose(env.cost(env.objective(state)), torch.tensor([4 + 2**0.5]).double())
    assert env.to_solution(ONE, [1, 2, 0, 3]) == [[1, 2], [3]]


def test_depot_allowed_at_the_depot_only_when_nothing_is_servable() -> None:
    env = AMCVRPEnv(3, capacity=10)
    state = env.reset(ONE)
    for a in (1, 2, 0, 3):
        state = env.step(state, torch.tensor([a]))
    assert env.is_done(state).all()
    assert env.action_mask(state)[0, 0]


def test_start_and_augment() -> None:
    env = AMCVRPEnv(3, capacity=10)
    roots = env.reset(ONE.index(torch.tensor([0, 0])))
    started = env.start(roots, torch.tensor([0, 2]))
    assert started.current.tolist() == [1, 3]
    full = env.started_actions(torch.tensor([[2, 0, 3], [0, 1, 2]]), torch.tensor([0, 2]))
    assert full[:, 0].tolist() == [1, 3]
    aug = env.augment(ONE.index(torch.tensor([0, 0])), torch.tensor([0, 2]))
    assert aug.depot.tolist() == [[0.0, 0.0], [1.0, 0.0]]  # code 2 reflects x
    assert torch.equal(aug.demands, ONE.demands.expand(2, -1))


def test_step_accepts_exactly_the_masked_actions() -> None:
    """`step` raises on every action outside `action_mask` (a served customer, one over the
    capacity left, the depot twice) and accepts every action in it, the depot at the depot
    included once every customer is served."""
    env = AMCVRPEnv(5, capacity=10)
    inst = env.generate(3, torch.Generator().manual_seed(7))
    state, checked = env.reset(inst), 0
    g = torch.Generator().manual_seed(8)
    while True:
        mask = env.action_mask(state)
        for row in range(state.batch_size):
            one = state.index(torch.tensor([row]))
            for a in range(mask.shape[1]):
                if mask[row, a]:
                    env.step(one, torch.tensor([a]))
                else:
                    with pytest.raises(ValueError, match="infeasible"):
                        env.step(one, torch.tensor([a]))
                checked += 1
        if bool(env.is_done(state).all()):
            break
        state = env.step(state, torch.multinomial(mask.double(), 1, generator=g).squeeze(1))
    assert bool(mask[:, 0].all()) and checked > 3 * 6 * 5
