"""Anytime statistics of round-wise sampling without replacement, against enumeration."""

from __future__ import annotations

import math

import pytest
import torch
from toy_tree import (
    FixedLogits,
    FlatEnv,
    TablePolicy,
    ToyEnv,
    all_leaves,
    leaf_distribution,
    leaf_value,
)

from nco.search import gumbeldore
from nco.search.adaptive import gumbeldore_rounds
from nco.search.anytime import AnytimeLog, improvement_chance
from nco.search.beam import run_round
from nco.search.gumbel import gumbel


def _exact_mean(policy: TablePolicy) -> float:
    return sum(p * leaf_value(leaf) for leaf, p in leaf_distribution(policy).items())


@pytest.mark.parametrize(("update", "sigma"), [("none", 0.0), ("global", 1.0), ("local", 0.5)])
def test_fixed_rounds_equal_gumbeldore(update: str, sigma: float) -> None:
    """Without an adaptive budget the driver draws exactly the sequences of `gumbeldore`."""
    env, policy = ToyEnv(), TablePolicy(seed=5)
    inst = env.generate(7)
    ref = gumbeldore(
        policy, env, inst, 3, 3, sigma, update=update, generator=torch.Generator().manual_seed(9)
    )
    sols, log = gumbeldore_rounds(
        policy, env, inst, 3, 3, sigma, update=update, generator=torch.Generator().manual_seed(9)
    )
    assert torch.equal(sols.actions, ref.actions)
    assert torch.equal(sols.objective, ref.objective)
    assert torch.allclose(sols.logprob, ref.logprob)
    assert len(log.covered) == 3


def test_exhausting_rounds_give_the_exact_mean() -> None:
    """Once every leaf is sampled: mass covered 1, estimate = E_p[f] exactly, spread 0."""
    env, policy = ToyEnv(), TablePolicy(seed=2)
    sols, log = gumbeldore_rounds(
        policy,
        env,
        env.generate(4),
        5,
        4,
        0.0,
        update="none",
        generator=torch.Generator().manual_seed(0),
    )
    assert int(sols.valid.sum(1).min()) == len(all_leaves())
    assert torch.allclose(log.covered[-1], torch.ones(4, dtype=torch.float64))
    assert torch.allclose(
        log.estimate[-1], torch.full((4,), _exact_mean(policy), dtype=torch.float64)
    )
    assert torch.equal(log.stderr[-1], torch.zeros(4, dtype=torch.float64))
    best = max(leaf_value(leaf) for leaf in all_leaves())
    assert torch.allclose(log.best[-1], torch.full((4,), best, dtype=torch.float64))


def test_covered_mass_is_the_mass_of_the_sampled_leaves() -> None:
    """`covered` after each round = sum of the enumerated probabilities of the leaves so far."""
    env, policy = ToyEnv(), TablePolicy(seed=7)
    probs = leaf_distribution(policy)
    sols, log = gumbeldore_rounds(
        policy, env, env.generate(5), 2, 3, 0.5, generator=torch.Generator().manual_seed(3)
    )
    for r in range(3):
        cols = sols.actions[:, : 2 * (r + 1)]
        for i in range(5):
            leaves = [tuple(x for x in a if x >= 0) for a in cols[i].tolist() if a[0] >= 0]
            assert len(set(leaves)) == len(leaves)
            assert math.isclose(
                float(log.covered[r][i]), sum(probs[x] for x in leaves), rel_tol=1e-6
            )


@pytest.mark.parametrize(("update", "sigma"), [("none", 0.0), ("global", 2.0)])
def test_estimate_is_unbiased_and_its_variance_estimate_too(update: str, sigma: float) -> None:
    """Over 20,000 independent runs (one per instance), every round's estimate averages to the
    enumerated E_p[f] within 4 standard errors, and the mean variance estimate matches the
    variance of the estimates within 10 % (also when Gumbeldore shifts the sampling logits)."""
    env, policy = ToyEnv(), TablePolicy(seed=4, scale=1.0)
    n = 20000
    _, log = gumbeldore_rounds(
        policy,
        env,
        env.generate(n),
        3,
        3,
        sigma,
        update=update,
        generator=torch.Generator().manual_seed(11),
    )
    exact = _exact_mean(policy)
    for r in range(3):
        est = log.estimate[r]
        se = float(est.std()) / math.sqrt(n)
        assert abs(float(est.mean()) - exact) < 4 * se + 1e-12, (r, float(est.mean()), exact)
        var = float(est.var())
        if var > 1e-10:
            assert abs(float(log.stderr[r].square().mean()) / var - 1) < 0.1, r


def test_improvement_chance_by_hand() -> None:
    """A round that exhausts one categorical weighs each leaf by its probability, so the
    chance of beating objective 2 is p_3 + p_4."""
    logits = [0.3, -0.2, 1.0, 0.1, -0.7]
    env, policy = FlatEnv(5), FixedLogits(logits)
    roots = env.reset(env.generate(3))
    g = torch.Generator().manual_seed(0)
    leaves = run_round(
        policy,
        env,
        roots,
        5,
        1,
        stochastic=True,
        root_key=gumbel((3,), g, roots.device),
        generator=g,
    )
    p = torch.softmax(torch.tensor(logits, dtype=torch.float64), 0)
    before = torch.tensor([2.0, -torch.inf, 4.0], dtype=torch.float64)
    chance = improvement_chance(leaves, before)
    assert torch.allclose(
        chance,
        torch.stack(
            [
                p[3] + p[4],
                torch.tensor(1.0, dtype=torch.float64),
                torch.tensor(0.0, dtype=torch.float64),
            ]
        ),
    )


def test_log_extend_pads_rounds_and_to_json() -> None:
    """Chunks with different round counts join per instance; JSON has per-round means."""
    a, b = AnytimeLog(), AnytimeLog()
    for r in range(2):
        for name in ("covered", "estimate", "stderr", "best"):
            getattr(a, name).append(torch.full((2,), float(r)))
        a.nodes.append(torch.full((2,), r + 1))
        a.width.append(torch.full((2,), 4))
        a.rows.append(10 * (r + 1))
    for name in ("covered", "estimate", "stderr", "best"):
        getattr(b, name).append(torch.full((1,), 5.0))
    b.nodes.append(torch.full((1,), 3))
    b.width.append(torch.full((1,), 4))
    b.rows.append(7)
    out = a.extend(b).to_json()
    assert out["rounds"] == 2 and out["rows"] == [17, 27]
    assert out["best"] == [[0.0, 0.0, 5.0], [1.0, 1.0, 5.0]]
    assert out["width"] == [[4, 4, 4], [4, 4, 0]]
    assert out["mean_nodes"] == [pytest.approx(5 / 3), pytest.approx(7 / 3)]
