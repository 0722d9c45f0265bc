"""The AM-form TSP env (first node is an action): protocol, lengths by hand, starts, symmetry."""

from __future__ import annotations

import torch

from nco.problems.tsp.am_env import AMTSPEnv
from nco.problems.tsp.types import TSPInstances
from nco.testing import check_env_protocol

SQUARE = TSPInstances(coords=torch.tensor([[[0.0, 0.0], [1.0, 1.0], [1.0, 0.0], [0.0, 1.0]]]))


def test_protocol() -> None:
    env = AMTSPEnv(7)
    check_env_protocol(env, env.generate(5, torch.Generator().manual_seed(0)))


def test_tour_lengths_by_hand() -> None:
    env = AMTSPEnv(4)
    state = env.reset(SQUARE.index(torch.tensor([0, 0])))
    assert env.action_mask(state).all()
    for a, b in ((2, 3), (1, 1), (3, 0), (0, 2)):
        state = env.step(state, torch.tensor([a, b]))
    assert env.is_done(state).all()
    # 2-1-3-0-2: four unit sides; 3-1-0-2-3: 1 + sqrt2 + 1 + sqrt2
    expected = torch.tensor([4.0, 2 + 2 * 2**0.5], dtype=torch.float64)
    assert torch.allclose(env.cost(env.objective(state)), expected)
    assert env.to_solution(SQUARE, [2, 1, 3, 0]) == [2, 1, 3, 0]


def test_start_forces_the_first_node_and_prefixes_it() -> None:
    env = AMTSPEnv(4)
    roots = env.reset(SQUARE.index(torch.tensor([0, 0, 0])))
    started = env.start(roots, torch.tensor([0, 1, 3]))
    assert started.first.tolist() == [0, 1, 3] and started.current.tolist() == [0, 1, 3]
    assert env.action_mask(started).sum(1).tolist() == [3, 3, 3]
    actions = torch.tensor([[1, 2, 3], [-1, -1, -1]])
    full = env.started_actions(actions, torch.tensor([0, 2]))
    assert full.tolist() == [[0, 1, 2, 3], [-1, -1, -1, -1]]


def test_augment_keeps_tour_lengths() -> None:
    env = AMTSPEnv(6)
    inst = env.generate(1, torch.Generator().manual_seed(1)).index(torch.zeros(8, dtype=torch.long))
    aug = env.augment(inst, torch.arange(8))
    state = env.reset(aug)
    for a in (3, 0, 5, 1, 4, 2):
        state = env.step(state, torch.full((8,), a))
    lengths = env.cost(env.objective(state))
    assert torch.allclose(lengths, lengths[0].expand(8), atol=1e-12)
    assert len({tuple(c.flatten().tolist()) for c in aug.coords}) == 8
