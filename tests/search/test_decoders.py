"""Decoders on the toy tree and on small TSP instances."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from toy_tree import TablePolicy, ToyEnv, all_leaves

from nco.problems.tsp import TSPEnv, TSPState
from nco.search import beam_search, greedy, gumbeldore, sample, sbs


class NearestPolicy(torch.nn.Module):
    """Logits = -10 x distance from the origin: greedy decoding is nearest neighbour."""

    def forward(self, state: TSPState) -> torch.Tensor:
        rows = torch.arange(state.batch_size)
        here = state.coords[rows, state.origin].unsqueeze(1)
        return -10.0 * (state.coords - here).norm(dim=-1)


def _nearest_neighbour(coords: np.ndarray) -> float:
    n = len(coords)
    tour, left = [0], set(range(1, n))
    while left:
        here = coords[tour[-1]]
        nxt = min(left, key=lambda j: (np.linalg.norm(coords[j] - here), j))
        tour.append(nxt)
        left.remove(nxt)
    pts = coords[tour]
    return float(np.linalg.norm(pts - np.roll(pts, -1, axis=0), axis=1).sum())


def _tour_cost(coords: np.ndarray, actions: list[int]) -> float:
    pts = coords[[0] + actions]
    return float(np.linalg.norm(pts - np.roll(pts, -1, axis=0), axis=1).sum())


def test_greedy_is_nearest_neighbour_on_tsp() -> None:
    """With distance logits, greedy reproduces an independent nearest-neighbour tour."""
    env = TSPEnv(12)
    inst = env.generate(5, torch.Generator().manual_seed(0))
    sols = greedy(NearestPolicy(), env, inst)
    for i in range(5):
        coords = inst.coords[i].numpy()
        assert math.isclose(-float(sols.objective[i, 0]), _nearest_neighbour(coords), rel_tol=1e-12)


@pytest.mark.parametrize("decoder", ["beam", "sbs", "sample", "gumbeldore"])
def test_decoders_return_valid_tours_with_exact_objectives(decoder: str) -> None:
    """Every returned sequence is a permutation whose recomputed length equals -objective."""
    env = TSPEnv(8)
    inst = env.generate(3, torch.Generator().manual_seed(1))
    policy, g = NearestPolicy(), torch.Generator().manual_seed(2)
    sols = {
        "beam": lambda: beam_search(policy, env, inst, 4),
        "sbs": lambda: sbs(policy, env, inst, 4, generator=g),
        "sample": lambda: sample(policy, env, inst, 4, generator=g),
        "gumbeldore": lambda: gumbeldore(policy, env, inst, 4, 3, sigma=0.5, generator=g),
    }[decoder]()
    for i in range(3):
        for s in range(sols.actions.shape[1]):
            acts = sols.actions[i, s].tolist()
            assert sorted(acts) == list(range(1, 8))
            cost = _tour_cost(inst.coords[i].numpy(), acts)
            assert math.isclose(-float(sols.objective[i, s]), cost, rel_tol=1e-12)


def test_gumbeldore_enumerating_all_tours_finds_the_optimum() -> None:
    """TSP6 has 5! = 120 sequences: 30 x 4 rounds visits each once, so best() is optimal."""
    env = TSPEnv(6)
    inst = env.generate(2, torch.Generator().manual_seed(3))
    sols = gumbeldore(NearestPolicy(), env, inst, 30, 4, sigma=0.2)
    best = sols.best()
    for i in range(2):
        coords = inst.coords[i].numpy()
        optimum = min(_tour_cost(coords, list(p)) for p in itertools.permutations(range(1, 6)))
        assert math.isclose(-float(best.objective[i]), optimum, rel_tol=1e-12)
        tours = {tuple(a) for a in sols.actions[i].tolist()}
        assert len(tours) == 120


def test_beam_search_wide_enough_returns_all_leaves_by_probability() -> None:
    """A beam as wide as the domain returns every leaf, sorted by exact log-probability."""
    env, policy = ToyEnv(), TablePolicy(seed=3)
    sols = beam_search(policy, env, env.generate(1), 16)
    leaves = [tuple(x for x in a if x >= 0) for a in sols.actions[0].tolist()]
    assert sorted(leaves) == sorted(all_leaves())
    exact = [policy.leaf_logprob(x) for x in leaves]
    assert exact == sorted(exact, reverse=True)
    assert np.allclose(sols.logprob[0].numpy(), exact, atol=1e-12)


def test_greedy_follows_argmax() -> None:
    """Greedy picks the most likely feasible action at every step."""
    env, policy = ToyEnv(), TablePolicy(seed=4)
    leaf = tuple(x for x in greedy(policy, env, env.generate(1)).actions[0, 0].tolist() if x >= 0)
    prefix: tuple[int, ...] = ()
    while len(prefix) < len(leaf):
        nxt = {p[len(prefix)] for p in all_leaves() if p[: len(prefix)] == prefix}
        best = max(nxt, key=lambda a: _prefix_logprob(policy, prefix + (a,)))
        assert leaf[len(prefix)] == best
        prefix = prefix + (best,)


def _prefix_logprob(policy: TablePolicy, prefix: tuple[int, ...]) -> float:
    return math.log(
        sum(math.exp(policy.leaf_logprob(p)) for p in all_leaves() if p[: len(prefix)] == prefix)
    )


def test_same_seed_same_result() -> None:
    """Stochastic decoders are reproducible with a seeded generator."""
    env = TSPEnv(10)
    inst = env.generate(2, torch.Generator().manual_seed(5))
    runs = [
        gumbeldore(
            NearestPolicy(), env, inst, 4, 2, sigma=1.0, generator=torch.Generator().manual_seed(9)
        )
        for _ in range(2)
    ]
    assert torch.equal(runs[0].actions, runs[1].actions)
    other = gumbeldore(
        NearestPolicy(), env, inst, 4, 2, sigma=1.0, generator=torch.Generator().manual_seed(10)
    )
    assert not torch.equal(runs[0].actions, other.actions)


@pytest.mark.parametrize(
    "call",
    [
        lambda p, e, i: beam_search(p, e, i, 0),
        lambda p, e, i: sbs(p, e, i, 2, top_p=0.0),
        lambda p, e, i: sbs(p, e, i, 2, top_p=None),  # search.top_p=null from a command line
        lambda p, e, i: sample(p, e, i, 0),
        lambda p, e, i: sample(p, e, i, 2, temperature=0.0),
    ],
)
def test_bad_arguments_raise(call) -> None:
    """Non-positive widths, empty or missing nuclei and zero temperature are rejected."""
    env = ToyEnv()
    with pytest.raises(ValueError):
        call(TablePolicy(), env, env.generate(1))


def test_policy_rows_in_chunks_give_the_same_search(monkeypatch) -> None:
    """Sending the policy at most POLICY_ROWS rows per call (activation memory) changes no
    decoded sequence or log-probability."""
    from nco.models.bq import BQPolicy
    from nco.problems.tsp import TSPEnv
    from nco.search import policy_eval

    torch.manual_seed(0)
    policy, env = BQPolicy(16, 1, 2, 32).eval(), TSPEnv(9)
    instances = env.generate(5, torch.Generator().manual_seed(4))

    def run() -> tuple[torch.Tensor, torch.Tensor, int]:
        policy_eval.STATS.reset()
        sols = gumbeldore(
            policy, env, instances, 6, 2, 0.3, generator=torch.Generator().manual_seed(5)
        )
        return sols.actions, sols.logprob, policy_eval.STATS.calls

    whole = run()
    monkeypatch.setattr(policy_eval, "POLICY_ROWS", 7)
    chunked = run()
    assert torch.equal(whole[0], chunked[0])
    assert torch.allclose(whole[1], chunked[1], atol=1e-6)
    assert chunked[2] == whole[2]  # one logical call per depth, chunked inside
