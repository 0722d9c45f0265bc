"""TSPEnv: objective, masks, errors, the shared protocol check and training sub-tours."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from nco.problems.tsp import TSPEnv, TSPInstances, TSPState
from nco.testing import check_env_protocol

SQUARE = TSPInstances(
    coords=torch.tensor([[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]], dtype=torch.float64)
)


def rollout(env: TSPEnv, instances: TSPInstances, actions: list[list[int]]) -> TSPState:
    """Step `actions` (one list per row) from the root."""
    state = env.reset(instances)
    for column in torch.tensor(actions).T:
        state = env.step(state, column)
    return state


def numpy_tour_length(coords: np.ndarray, tour: np.ndarray) -> float:
    """Closed tour length computed independently with numpy."""
    pts = coords[tour]
    return float(np.sqrt(((pts - np.roll(pts, -1, axis=0)) ** 2).sum(1)).sum())


@pytest.mark.parametrize(
    ("tour", "length"),
    [([1, 2, 3], 4.0), ([3, 2, 1], 4.0), ([2, 1, 3], 2.0 + 2.0 * math.sqrt(2.0))],
)
def test_square_objective_by_hand(tour: list[int], length: float) -> None:
    """On the unit square the perimeter tour has length 4 and the crossing tour 2 + 2*sqrt(2)."""
    env = TSPEnv(4)
    state = rollout(env, SQUARE, [tour])
    assert bool(env.is_done(state).all())
    assert env.objective(state).item() == pytest.approx(-length, rel=1e-15)
    assert env.cost(env.objective(state)).item() == pytest.approx(length, rel=1e-15)


def test_random_rollouts_match_numpy_tour_length() -> None:
    """The objective of random rollouts is minus the numpy-recomputed closed tour length."""
    env = TSPEnv(9)
    gen = torch.Generator().manual_seed(3)
    instances = env.generate(6, gen)
    state, actions = check_env_protocol(env, instances, gen)
    coords = instances.coords.numpy()
    for row in range(6):
        tour = np.concatenate([[0], actions[row].numpy()])
        assert sorted(tour.tolist()) == list(range(9))
        expected = numpy_tour_length(coords[row], tour)
        assert -env.objective(state)[row].item() == pytest.approx(expected, rel=1e-12)


def test_action_mask_excludes_origin_destination_and_visited() -> None:
    """At the root every node but 0 is feasible; after a step the chosen node is not."""
    env = TSPEnv(5)
    instances = env.generate(2, torch.Generator().manual_seed(0))
    state = env.reset(instances)
    root = torch.tensor([[False, True, True, True, True]] * 2)
    assert torch.equal(env.action_mask(state), root)
    state = env.step(state, torch.tensor([2, 4]))
    expected = torch.tensor([[False, True, False, True, True], [False, True, True, True, False]])
    assert torch.equal(env.action_mask(state), expected)
    assert not bool(env.is_done(state).any())


@pytest.mark.parametrize("actions", [[[0]], [[2, 2]], [[1, 7]]])
def test_step_rejects_infeasible_action(actions: list[list[int]]) -> None:
    """Stepping to the start node, a visited node or a node out of range raises ValueError."""
    env = TSPEnv(4)
    *prefix, last = actions[0]
    state = rollout(env, SQUARE, [prefix]) if prefix else env.reset(SQUARE)
    with pytest.raises(ValueError, match="not a remaining node"):
        env.step(state, torch.tensor([last]))


@pytest.mark.parametrize("n", [1, 2])
def test_reset_and_constructor_reject_fewer_than_three_nodes(n: int) -> None:
    """Instances and environments with fewer than 3 nodes are rejected."""
    with pytest.raises(ValueError, match="at least 3 nodes"):
        TSPEnv(3).reset(TSPInstances(coords=torch.zeros(2, n, 2, dtype=torch.float64)))
    with pytest.raises(ValueError, match="num_nodes >= 3"):
        TSPEnv(n)


def test_check_env_protocol_passes_and_is_seeded() -> None:
    """The shared protocol check passes on TSPEnv and the same seed gives the same rollout."""
    env = TSPEnv(6)
    instances = env.generate(5, torch.Generator().manual_seed(1))
    _, first = check_env_protocol(env, instances, torch.Generator().manual_seed(7))
    _, again = check_env_protocol(env, instances, torch.Generator().manual_seed(7))
    assert torch.equal(first, again)
    assert bool((first >= 1).all())


class MutatingTSPEnv(TSPEnv):
    """Breaks the protocol: `step` writes into its input's length tensor."""

    def step(self, state: TSPState, actions: torch.Tensor) -> TSPState:
        new = super().step(state, actions)
        state.length.add_(1.0)
        return new


class NoFeasibleActionTSPEnv(TSPEnv):
    """Breaks the protocol: the mask is empty although rows are not done."""

    def action_mask(self, state: TSPState) -> torch.Tensor:
        return torch.zeros_like(super().action_mask(state))


class ShiftedIndexTSPEnv(TSPEnv):
    """Breaks the protocol: `index` gathers the wrong rows."""

    def index(self, state: TSPState, idx: torch.Tensor) -> TSPState:
        return state.index((idx + 1) % state.batch_size)


class NeverDoneTSPEnv(TSPEnv):
    """Breaks the protocol: claims episodes need one step more than they take."""

    def is_done(self, state: TSPState) -> torch.Tensor:
        return torch.zeros(state.batch_size, dtype=torch.bool)

    def action_mask(self, state: TSPState) -> torch.Tensor:
        return torch.ones(state.batch_size, state.coords.shape[1], dtype=torch.bool)

    def step(self, state: TSPState, actions: torch.Tensor) -> TSPState:
        return state


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (MutatingTSPEnv(5), "step mutated its input"),
        (NoFeasibleActionTSPEnv(5), "no feasible action"),
        (ShiftedIndexTSPEnv(5), "index: field"),
        (NeverDoneTSPEnv(5), "not done after 4 steps"),
    ],
)
def test_check_env_protocol_catches_broken_envs(env: TSPEnv, message: str) -> None:
    """Each protocol violation is reported by check_env_protocol."""
    instances = TSPEnv(5).generate(3, torch.Generator().manual_seed(0))
    with pytest.raises(AssertionError, match=message):
        check_env_protocol(env, instances, torch.Generator().manual_seed(0))


def pairwise(coords: torch.Tensor) -> torch.Tensor:
    """Distance matrix of (t, 2) points."""
    return (coords[:, None] - coords[None]).norm(dim=-1)


def matching_segments(coords: torch.Tensor, tour: list[int], sub: torch.Tensor) -> list[list[int]]:
    """Contiguous segments of the closed `tour` (either direction) whose points are similar to
    `sub`, i.e. whose distance matrix is a uniform multiple of sub's."""
    t, n = sub.shape[0], len(tour)
    target = pairwise(sub)
    found = []
    for order in (tour, tour[::-1]):
        for start in range(n):
            segment = [order[(start + k) % n] for k in range(t)]
            dist = pairwise(coords[segment])
            scale = target[0, 1] / dist[0, 1]
            if torch.allclose(target, scale * dist, rtol=1e-9, atol=1e-12):
                found.append(segment)
    return found


def test_training_batch_maps_back_to_expert_subtours() -> None:
    """Each training state is a similar, never enlarged copy of an expert sub-tour from origin to
    destination with the nodes between them remaining, and its target is the node after the
    origin. Closed sub-tours (t = n + 1) are the root state: origin = destination, n - 1 left."""
    env = TSPEnv(7)
    gen = torch.Generator().manual_seed(11)
    instances = env.generate(8, gen)
    actions = torch.stack([torch.randperm(6, generator=gen) + 1 for _ in range(8)])
    sizes, closed = set(), 0
    for _ in range(12):
        state, target = env.training_batch(instances, actions, gen)
        t = state.coords.shape[1]
        sizes.add(t)
        assert 4 <= t <= 7
        assert bool((state.origin == 0).all())
        if bool((state.dest == 0).all()):
            closed += 1
            assert t == 7 and torch.equal(state.remaining, torch.arange(1, 7).expand(8, -1))
        else:
            assert bool((state.dest == t - 1).all())
            assert torch.equal(state.remaining, torch.arange(1, t - 1).expand(8, -1))
        assert bool((state.coords >= 0).all()) and bool((state.coords <= 1).all())
        for row in range(8):
            tour = [0, *actions[row].tolist()]
            segments = matching_segments(instances.coords[row], tour, state.coords[row])
            assert len(segments) == 1
            segment = segments[0]
            original = pairwise(instances.coords[row][segment])[0, 1]
            assert pairwise(state.coords[row])[0, 1] <= original * (1 + 1e-12)
            origin = segment[int(state.origin[row])]
            position = tour.index(origin)
            # Mapped back, the target is the tour neighbour of the origin that the segment
            # walks to (segments are built in walking order).
            assert segment[int(target[row])] == segment[1]
            assert segment[1] in {tour[(position + 1) % 7], tour[(position - 1) % 7]}
    assert len(sizes) > 1 and closed > 0


def test_training_batch_trains_the_root_state() -> None:
    """Some batches hold the state every decode starts from: origin = destination with all other
    n - 1 nodes remaining, the same state `reset` gives (up to the augmentation)."""
    env = TSPEnv(10)
    gen = torch.Generator().manual_seed(3)
    instances = env.generate(4, gen)
    actions = torch.stack([torch.randperm(9, generator=gen) + 1 for _ in range(4)])
    roots = 0
    for _ in range(60):  # t is uniform on 4..11: P(no root in 60 draws) = (7/8)^60 < 1e-3
        state, _ = env.training_batch(instances, actions, gen)
        if bool((state.origin == state.dest).all()):
            roots += 1
            assert state.remaining.shape == (4, 9)
            assert not bool(env.is_done(state).any())
    assert roots > 0


def test_training_batch_same_seed_same_result() -> None:
    """The same generator seed gives identical training states and targets."""
    env = TSPEnv(8)
    instances = env.generate(4, torch.Generator().manual_seed(0))
    actions = torch.stack(
        [torch.randperm(7, generator=torch.Generator().manual_seed(i)) + 1 for i in range(4)]
    )
    first, target1 = env.training_batch(instances, actions, torch.Generator().manual_seed(5))
    again, target2 = env.training_batch(instances, actions, torch.Generator().manual_seed(5))
    assert torch.equal(target1, target2)
    for field in dataclasses.fields(first):
        assert torch.equal(getattr(first, field.name), getattr(again, field.name))
