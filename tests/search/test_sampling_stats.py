"""Statistical tests that would catch a wrong sampler (fixed seeds, chi-square at alpha=1e-3)."""

from __future__ import annotations

import math
from collections import Counter

import torch
from scipy.stats import chisquare
from toy_tree import FixedLogits, FlatEnv, TablePolicy, ToyEnv, all_leaves, leaf_distribution

from nco.search import sample, sbs

ALPHA = 1e-3  # a correct sampler fails one of these tests with probability about 1e-3


def _pair_counts(actions: torch.Tensor) -> Counter:
    return Counter(
        (tuple(x for x in a[0] if x >= 0), tuple(x for x in a[1] if x >= 0))
        for a in actions.tolist()
    )


def _chisquare(counts: Counter, probs: dict, total: int) -> float:
    keys = sorted(probs)
    observed = [counts.get(k, 0) for k in keys]
    expected = [probs[k] * total for k in keys]
    assert sum(observed) == total, "a sampled outcome is outside the support"
    return float(chisquare(observed, expected).pvalue)


def test_gumbel_top_k_flat_pairs_match_wor_formula() -> None:
    """Ordered pairs from SBS on one categorical follow p_i p_j / (1 - p_i)."""
    logits = [0.5, -0.3, 1.2, 0.0, -1.0]
    p = torch.softmax(torch.tensor(logits, dtype=torch.float64), 0).tolist()
    env, policy = FlatEnv(len(logits)), FixedLogits(logits)
    n = 40000
    sols = sbs(policy, env, env.generate(n), 2, generator=torch.Generator().manual_seed(1))
    counts = Counter(tuple(r) for r in sols.actions[:, :, 0].tolist())
    probs = {(i, j): p[i] * p[j] / (1 - p[i]) for i in range(5) for j in range(5) if i != j}
    observed = [counts.get(key, 0) for key in sorted(probs)]
    assert sum(observed) == n
    pvalue = chisquare(observed, [probs[k] * n for k in sorted(probs)]).pvalue
    assert pvalue > ALPHA


def test_sbs_first_leaf_follows_policy() -> None:
    """The first (largest-key) leaf of SBS is a sample from the sequence policy."""
    env, policy = ToyEnv(), TablePolicy(seed=3)
    n = 20000
    sols = sbs(policy, env, env.generate(n), 3, generator=torch.Generator().manual_seed(2))
    counts = Counter(tuple(x for x in a if x >= 0) for a in sols.actions[:, 0].tolist())
    assert _chisquare(counts, leaf_distribution(policy), n) > ALPHA


def test_sbs_ordered_pairs_match_wor_formula() -> None:
    """The first two leaves follow P(a, b) = p_a p_b / (1 - p_a) on a tree with masks and
    variable-length episodes."""
    env, policy = ToyEnv(), TablePolicy(seed=4, scale=0.7)
    n = 30000
    sols = sbs(policy, env, env.generate(n), 2, generator=torch.Generator().manual_seed(3))
    dist = leaf_distribution(policy)
    probs = {(a, b): dist[a] * dist[b] / (1 - dist[a]) for a in dist for b in dist if a != b}
    counts = _pair_counts(sols.actions)
    # merge rare cells so every expected count is at least 5
    keys = sorted(probs, key=lambda k: probs[k])
    merged_obs, merged_exp, acc_o, acc_e = [], [], 0, 0.0
    for k in keys:
        acc_o += counts.get(k, 0)
        acc_e += probs[k] * n
        if acc_e >= 5:
            merged_obs.append(acc_o)
            merged_exp.append(acc_e)
            acc_o, acc_e = 0, 0.0
    merged_obs[-1] += acc_o
    merged_exp[-1] += acc_e
    assert sum(merged_obs) == n
    assert chisquare(merged_obs, merged_exp).pvalue > ALPHA


def test_sbs_logprob_is_exact_policy_logprob() -> None:
    """Reported log-probabilities equal the exact sequence log-probability."""
    env, policy = ToyEnv(), TablePolicy(seed=5)
    sols = sbs(policy, env, env.generate(4), 5, generator=torch.Generator().manual_seed(0))
    for row_a, row_lp in zip(sols.actions.tolist(), sols.logprob.tolist(), strict=True):
        for a, lp in zip(row_a, row_lp, strict=True):
            leaf = tuple(x for x in a if x >= 0)
            assert math.isclose(lp, policy.leaf_logprob(leaf), abs_tol=1e-9)


def test_sample_with_replacement_follows_policy_with_temperature_and_top_p() -> None:
    """`sample` draws leaves from the policy; temperature and top-p reshape it as defined."""
    env, policy = FlatEnv(4), FixedLogits([1.0, 0.2, -0.5, 0.0])
    n = 20000
    g = torch.Generator().manual_seed(5)
    sols = sample(policy, env, env.generate(1), n, temperature=2.0, top_p=0.8, generator=g)
    logits = torch.tensor([1.0, 0.2, -0.5, 0.0], dtype=torch.float64) / 2.0
    p = torch.softmax(logits, 0)
    order = p.argsort(descending=True)
    keep = (p[order].cumsum(0) - p[order]) < 0.8
    q = torch.zeros_like(p)
    q[order[keep]] = p[order[keep]]
    q = q / q.sum()
    counts = Counter(sols.actions[0, :, 0].tolist())
    support = [i for i in range(4) if q[i] > 0]
    assert set(counts) <= set(support)
    assert (
        chisquare([counts[i] for i in support], [float(q[i]) * n for i in support]).pvalue > ALPHA
    )


def test_all_leaves_helper_is_consistent() -> None:
    """The toy tree's leaf probabilities sum to one (sanity of the test oracle)."""
    assert math.isclose(sum(leaf_distribution(TablePolicy()).values()), 1.0, abs_tol=1e-12)
    assert len(all_leaves()) == 16
