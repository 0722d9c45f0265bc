"""ULTS (nco.search.ults): the prior of Algorithm 1, exactness limits, batching, the config."""

from __future__ import annotations

import math

import pytest
import torch
from toy_tree import BiasedBitPolicy, BitEnv, TablePolicy, ToyEnv, all_leaves, leaf_value

from nco.decode import decode, decoder_kwargs
from nco.search import greedy
from nco.search.counting import CountingPolicy
from nco.search.ults import (
    dirichlet_categoricals,
    empirical_categoricals,
    fit_prior,
    ults,
    ults_search,
)


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_prior_of_uniform_categoricals_by_hand() -> None:
    """Uniform over 4 actions: Delta is exactly 1/4 one step from a leaf and 1/16 two steps
    away (degenerate levels are point masses); one-hot categoricals give Delta = 1."""
    uniform = fit_prior(torch.full((5, 4), 0.25, dtype=torch.float64), 3)
    assert uniform.point[1:].tolist() == pytest.approx([0.25, 0.25**2, 0.25**3])
    onehot = fit_prior(torch.eye(3, dtype=torch.float64), 4)
    assert onehot.point.tolist() == [1.0] * 5
    assert torch.equal(onehot.log_pool(8, 0), torch.zeros(5, 8))


def test_prior_fits_a_beta_where_delta_varies() -> None:
    """Random categoricals: level 1 is a fitted Beta whose mean is near the mean of max_j c_j."""
    cats = dirichlet_categoricals(0.5, 6, 400, seed=1)
    prior = fit_prior(cats, 2, num_samples=4000, seed=2)
    a, b = float(prior.a[1]), float(prior.b[1])
    assert math.isnan(float(prior.point[1])) and a > 0 and b > 0
    assert a / (a + b) == pytest.approx(float(cats.max(1).values.mean()), abs=0.02)
    assert float(prior.a[2] / (prior.a[2] + prior.b[2])) < a / (a + b)


@pytest.mark.parametrize("seed", range(12))
def test_optimistic_prior_and_epsilon_zero_find_the_most_likely_leaf(seed: int) -> None:
    """With Delta = 1 (an upper bound) the samples are the path likelihoods, so stopping at
    P(c* >= v_root) = 1 proves c* optimal: ULTS returns the enumerated most likely leaf,
    also where greedy does not (variable-length episodes included)."""
    env, policy = ToyEnv(), TablePolicy(seed=seed, scale=0.7)
    prior = fit_prior(torch.eye(3, dtype=torch.float64), 3)
    sols, info = ults_search(policy, env, env.generate(2), 9, prior, epsilon=0.0, generator=_gen())
    best = max(policy.leaf_logprob(leaf) for leaf in all_leaves())
    assert sols.logprob.max(1).values.tolist() == pytest.approx([best, best])
    top = sols.logprob.argmax(1)
    for i in range(2):
        leaf = tuple(a for a in sols.actions[i, top[i]].tolist() if a >= 0)
        assert policy.leaf_logprob(leaf) == pytest.approx(best)
        assert float(sols.objective[i, top[i]]) == pytest.approx(leaf_value(leaf))
    assert info.nodes.tolist()[0] == info.nodes.tolist()[1]


@pytest.mark.parametrize("seed", range(6))
def test_k_max_one_is_greedy(seed: int) -> None:
    """One node per level and one child per expansion: the greedy sequence, one row a step."""
    env, policy = ToyEnv(), TablePolicy(seed=seed)
    inst = env.generate(3)
    sols = ults(policy, env, inst, k_max=1, epsilon=0.0, generator=_gen())
    ref = greedy(policy, env, inst)
    assert torch.equal(sols.actions[:, 0], ref.actions[:, 0])
    assert torch.allclose(sols.logprob[:, 0], ref.logprob[:, 0])


def test_counts_expansions_and_policy_rows() -> None:
    """Bits of length 6 with p(0) = e / (1 + e): with the optimistic prior ULTS expands every
    open prefix likelier than the best leaf 000000 (log 0.731^6 = -1.88) before it stops:
    the root, 0, 00, 000, 0000, 00000, then 1 (-1.31) and one of 10 / 01 (-1.63 each), whose
    level then holds k_max = 2 expansions, so the other is dropped: 8 nodes, 8 policy rows."""
    env, policy = BitEnv(6), CountingPolicy(BiasedBitPolicy(gap=1.0))
    prior = fit_prior(torch.eye(2, dtype=torch.float64), 6)
    sols, info = ults_search(policy, env, env.generate(4), 2, prior, epsilon=0.0, generator=_gen())
    assert info.nodes.tolist() == [8, 8, 8, 8] and info.policy_rows == 32 == policy.rows
    best = sols.logprob.argmax(1)
    assert sols.actions[torch.arange(4), best].tolist() == [[0] * 6] * 4
    assert sols.logprob.max(1).values.tolist() == pytest.approx(
        [6 * math.log(math.e / (1 + math.e))] * 4
    )


def test_instances_are_searched_independently() -> None:
    """A batch gives each instance the search it gets alone (same prior and seed)."""
    env = ToyEnv()
    policy = TablePolicy(seed=5, scale=0.7)
    cats, steps = empirical_categoricals(policy, env, env.generate(2))
    prior = fit_prior(cats, steps, seed=0)
    both, _ = ults_search(policy, env, env.generate(2), 3, prior, epsilon=0.05, generator=_gen(1))
    one, _ = ults_search(policy, env, env.generate(1), 3, prior, epsilon=0.05, generator=_gen(1))
    assert both.logprob.max(1).values[0] == one.logprob.max(1).values[0]


def test_search_config_and_errors() -> None:
    """`method: ults` decodes through nco.decode; bad settings raise ValueError."""
    fn, kwargs = decoder_kwargs({"method": "ults", "k_max": 2, "epsilon": 0.2})
    assert fn is ults and kwargs == {"k_max": 2, "epsilon": 0.2}
    env, policy = ToyEnv(), TablePolicy(seed=1)
    sols = decode(policy, env, env.generate(3), {"method": "ults", "k_max": 2}, _gen())
    assert sols.actions.shape[0] == 3 and bool(sols.valid.any(1).all())
    for bad in ({"k_max": 0}, {"epsilon": 1.0}, {"prior": "flat"}, {"alpha": 0.0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            ults(policy, env, env.generate(1), **bad)
