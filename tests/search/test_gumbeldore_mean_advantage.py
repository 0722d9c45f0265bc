"""Gumbeldore's mean advantage per edge (`advantage="mean"`, the authors' Gomoku setting
`normalize_advantage_by_visit_count`): visit counts, logits, and sampling without replacement."""

from __future__ import annotations

import pytest
import torch
from toy_tree import TablePolicy, ToyEnv, all_leaves, leaf_value

from nco.search import gumbeldore
from nco.search.beam import run_round
from nco.search.decoders import update_trie
from nco.search.trie import Trie


def _leaves_of(actions: torch.Tensor) -> list[tuple[int, ...]]:
    return [tuple(x for x in a if x >= 0) for a in actions.tolist() if a[0] >= 0]


def _one_round(trie: Trie, seed: int) -> tuple[object, int]:
    """One stochastic round of width 4 on one toy instance, recorded in `trie`."""
    env, policy = ToyEnv(), TablePolicy(seed=15)
    lv = run_round(
        policy,
        env,
        env.reset(env.generate(1)),
        4,
        3,
        stochastic=True,
        root_key=torch.zeros(1),
        generator=torch.Generator().manual_seed(seed),
        trie=trie,
    )
    return lv, int(lv.path[0, 0, 0])


def test_visits_count_sequences_and_logits_use_the_mean() -> None:
    """After a round with baseline 0, each root edge has visits = its sampled leaves below,
    adv = their summed values, and logits = logmass + sigma x adv / visits (unvisited: + 0);
    the summed form's logits are logmass + sigma x adv."""
    cpu, f64 = torch.device("cpu"), torch.float64
    mean, plain = Trie(3, cpu, mean_advantage=True, dtype=f64), Trie(3, cpu, dtype=f64)
    assert plain.visits is None
    for trie in (mean, plain):
        lv, root = _one_round(trie, seed=1)
        update_trie(trie, lv, "global", baseline=0.0)
    leaves = _leaves_of(lv.actions[0])
    sigma = 5.0
    ids = torch.tensor([root])
    got, got_plain = mean.logits(ids, sigma)[0], plain.logits(ids, sigma)[0]
    for a in range(3):
        below = [leaf_value(x) for x in leaves if x[0] == a]
        assert float(mean.visits[root, a]) == len(below)
        assert float(mean.adv[root, a]) == pytest.approx(sum(below), abs=1e-12)
        mass = float(mean.logmass[root, a])
        if mass == float("-inf"):
            continue
        avg = sum(below) / len(below) if below else 0.0
        assert float(got[a]) == pytest.approx(mass + sigma * avg, abs=1e-12)
        assert float(got_plain[a]) == pytest.approx(mass + sigma * sum(below), abs=1e-12)


def test_visits_survive_growing_the_trie() -> None:
    """The trie grows past its first capacity without losing visit counts."""
    trie = Trie(3, torch.device("cpu"), capacity=2, mean_advantage=True)
    lv, root = _one_round(trie, seed=2)
    update_trie(trie, lv, "global", baseline=0.0)
    assert trie.visits.shape[0] >= trie.size > 2
    assert float(trie.visits[root].sum()) == int(lv.valid.sum())


def test_mean_advantage_samples_without_replacement_and_enumerates_the_domain() -> None:
    """k x n = number of leaves: every leaf exactly once per instance with the mean form."""
    env, policy = ToyEnv(), TablePolicy(seed=1)
    sols = gumbeldore(
        policy,
        env,
        env.generate(30),
        4,
        4,
        sigma=5.0,
        update="global",
        baseline=0.0,
        advantage="mean",
        generator=torch.Generator().manual_seed(0),
    )
    for row in range(30):
        assert sorted(_leaves_of(sols.actions[row])) == sorted(all_leaves())


def test_first_round_is_the_same_for_both_forms() -> None:
    """The first round reads no advantages: same seed, same sequences, mean or sum."""
    env, policy = ToyEnv(), TablePolicy(seed=3)
    inst = env.generate(5)
    runs = [
        gumbeldore(
            policy,
            env,
            inst,
            3,
            1,
            sigma=5.0,
            baseline=0.0,
            advantage=adv,
            generator=torch.Generator().manual_seed(4),
        )
        for adv in ("sum", "mean")
    ]
    assert torch.equal(runs[0].actions, runs[1].actions)


@pytest.mark.parametrize(
    "kwargs", [{"advantage": "bogus"}, {"advantage": "mean", "update": "local"}]
)
def test_rejects_unknown_advantage_and_mean_without_global(kwargs: dict) -> None:
    """Unknown forms and the mean with another update raise ValueError."""
    env, policy = ToyEnv(), TablePolicy()
    with pytest.raises(ValueError, match="advantage"):
        gumbeldore(policy, env, env.generate(1), 2, 2, sigma=1.0, **kwargs)
