"""decode(): search-config dispatch, parameter checks, chunking and eval mode."""

from __future__ import annotations

import pytest
import torch

from nco.decode import METHODS, cat_solutions, decode
from nco.models.bq import BQPolicy
from nco.problems.tsp import TSPEnv
from nco.problems.tsp.env import tour_length
from nco.search import Solutions


@pytest.fixture(scope="module")
def setup() -> tuple[BQPolicy, TSPEnv, object]:
    """A tiny seeded policy with TSP8 instances."""
    torch.manual_seed(0)
    policy = BQPolicy(dim=16, layers=1, heads=2, ff_dim=32)
    env = TSPEnv(8)
    return policy, env, env.generate(5, torch.Generator().manual_seed(3))


CONFIGS = [
    {"method": "greedy"},
    {"method": "beam_search", "beam_width": 3},
    {"method": "sample", "num_samples": 4},
    {"method": "sbs", "beam_width": 4, "top_p": 0.9},
    {"method": "gumbeldore", "beam_width": 2, "rounds": 3, "sigma": 0.3, "p_min": 1.0},
]


@pytest.mark.parametrize("cfg", CONFIGS, ids=[c["method"] for c in CONFIGS])
def test_every_method_decodes_valid_tours(setup, cfg) -> None:
    """Each method returns tours whose objective is minus their recomputed length."""
    policy, env, instances = setup
    sols = decode(policy, env, instances, cfg, torch.Generator().manual_seed(0))
    best = sols.best()
    tours = torch.cat([torch.zeros(5, 1, dtype=torch.long), best.actions], 1)
    assert torch.equal(tours.sort(1).values, torch.arange(8).expand(5, -1))
    assert torch.allclose(-tour_length(instances.coords, tours), best.objective)


def test_chunking_matches_one_batch(setup) -> None:
    """Greedy and beam search give the same results in chunks of 2 as all at once."""
    policy, env, instances = setup
    for cfg in CONFIGS[:2]:
        whole = decode(policy, env, instances, cfg)
        parts = decode(policy, env, instances, {**cfg, "batch_size": 2})
        assert torch.equal(whole.actions, parts.actions)
        assert torch.allclose(whole.objective, parts.objective)


def test_same_seed_same_result(setup) -> None:
    """Stochastic decoding is reproducible from the generator's seed."""
    policy, env, instances = setup
    cfg = CONFIGS[4]
    a = decode(policy, env, instances, cfg, torch.Generator().manual_seed(7))
    b = decode(policy, env, instances, cfg, torch.Generator().manual_seed(7))
    assert torch.equal(a.actions, b.actions)


def test_policy_mode_is_restored(setup) -> None:
    """decode runs the policy in eval mode and restores training mode afterwards."""
    policy, env, instances = setup
    seen = []
    hook = policy.register_forward_pre_hook(lambda m, args: seen.append(m.training))
    policy.train()
    try:
        decode(policy, env, instances, {"method": "greedy"})
    finally:
        hook.remove()
    assert seen and not any(seen)
    assert policy.training


def test_unknown_method_lists_valid_ones(setup) -> None:
    """An unknown method raises ValueError naming every valid method."""
    policy, env, instances = setup
    with pytest.raises(ValueError, match="unknown method 'beam'") as err:
        decode(policy, env, instances, {"method": "beam"})
    for name in METHODS:
        assert name in str(err.value)


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ({"method": "greedy", "beam_width": 3}, "takes no parameter"),
        ({"method": "sample"}, "needs parameters \\['num_samples'\\]"),
        ({"method": "greedy", "batch_size": 0}, "batch_size >= 1"),
        ({"beam_width": 3}, "unknown method None"),
    ],
)
def test_bad_search_config_raises(setup, cfg, message) -> None:
    """Unknown or missing parameters and a bad batch_size raise ValueError."""
    policy, env, instances = setup
    with pytest.raises(ValueError, match=message):
        decode(policy, env, instances, cfg)


def test_cat_solutions_pads_sequences_and_steps() -> None:
    """Parts with fewer sequences or steps are padded with -1 / -inf."""
    a = Solutions(torch.ones(1, 2, 3, dtype=torch.long), torch.zeros(1, 2), torch.zeros(1, 2))
    b = Solutions(torch.ones(1, 1, 2, dtype=torch.long), torch.ones(1, 1), torch.ones(1, 1))
    out = cat_solutions([a, b])
    assert out.actions[1].tolist() == [[1, 1, -1], [-1, -1, -1]]
    assert out.objective[1].tolist() == [1.0, float("-inf")]
    assert out.logprob[1].tolist() == [1.0, float("-inf")]
