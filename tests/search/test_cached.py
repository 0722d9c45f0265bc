"""The cached-encoding path: same search as the uncached call, one encoding per instance."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from nco.decode import decode
from nco.problems.tsp import TSPEnv, TSPState
from nco.search import beam_search, greedy, gumbeldore, sample, sbs
from nco.search.policy_eval import has_cache, timed


class CachedPolicy(torch.nn.Module):
    """Encodes each node once (an MLP of its coordinates); a step scores nodes against the
    origin's embedding. Counts the instances it encodes."""

    instance_encoding = True

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embed = torch.nn.Sequential(
            torch.nn.Linear(2, 16), torch.nn.Tanh(), torch.nn.Linear(16, 16)
        )
        self.query = torch.nn.Linear(16, 16)
        self.encoded = 0
        self.encode_calls = 0

    def encode(self, roots: TSPState) -> torch.Tensor:
        self.encoded += roots.batch_size
        self.encode_calls += 1
        return self.embed(roots.coords.float())

    def decode(self, states: TSPState, cache: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        emb = cache[rows]
        here = emb[torch.arange(states.batch_size), states.origin]
        return 3.0 * torch.einsum("bnd,bd->bn", emb, self.query(here))

    def forward(self, states: TSPState) -> torch.Tensor:
        return self.decode(states, self.encode(states), torch.arange(states.batch_size))


class Uncached(torch.nn.Module):
    """The same network seen through `forward` only (no cached path)."""

    def __init__(self, inner: CachedPolicy) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, states: TSPState) -> torch.Tensor:
        return self.inner(states)


DECODERS: dict[str, Callable] = {
    "greedy": lambda p, e, i: greedy(p, e, i),
    "beam": lambda p, e, i: beam_search(p, e, i, 5),
    "sample": lambda p, e, i: sample(p, e, i, 6, generator=torch.Generator().manual_seed(3)),
    "sbs": lambda p, e, i: sbs(p, e, i, 5, generator=torch.Generator().manual_seed(3)),
    "gumbeldore": lambda p, e, i: gumbeldore(
        p, e, i, 4, 3, 0.5, generator=torch.Generator().manual_seed(3)
    ),
}


@pytest.mark.parametrize("name", sorted(DECODERS))
def test_cached_path_gives_the_uncached_search_and_encodes_once(name: str) -> None:
    env = TSPEnv(9)
    instances = env.generate(4, torch.Generator().manual_seed(1))
    policy = CachedPolicy().eval()
    assert has_cache(policy) and not has_cache(Uncached(policy))
    plain = DECODERS[name](Uncached(policy), env, instances)
    uncached_encodes = policy.encoded
    assert uncached_encodes > instances.batch_size  # every uncached step re-encodes
    policy.encoded = policy.encode_calls = 0
    cached = DECODERS[name](policy, env, instances)
    assert policy.encoded == instances.batch_size and policy.encode_calls == 1
    assert torch.equal(plain.actions, cached.actions)
    assert torch.allclose(plain.logprob, cached.logprob, atol=1e-5)
    assert torch.equal(plain.objective, cached.objective)


def test_cached_rows_follow_chunked_policy_calls(monkeypatch) -> None:
    """Beams split over several policy calls (POLICY_ROWS) still read their own instance."""
    from nco.search import policy_eval

    env = TSPEnv(8)
    instances = env.generate(3, torch.Generator().manual_seed(2))
    policy = CachedPolicy().eval()
    whole = beam_search(policy, env, instances, 4)
    monkeypatch.setattr(policy_eval, "POLICY_ROWS", 5)
    chunked = beam_search(policy, env, instances, 4)
    assert torch.equal(whole.actions, chunked.actions)


def test_decode_encodes_each_instance_once_per_chunk() -> None:
    env = TSPEnv(7)
    instances = env.generate(5, torch.Generator().manual_seed(4))
    policy = CachedPolicy()
    decode(policy, env, instances, {"method": "beam_search", "beam_width": 3, "batch_size": 2})
    assert policy.encoded == 5 and policy.encode_calls == 3


def test_timed_observer_counts_calls_and_rows() -> None:
    env = TSPEnv(6)
    instances = env.generate(2, torch.Generator().manual_seed(5))
    with timed() as stats:
        greedy(CachedPolicy(), env, instances)
    # 5 steps; the last has one feasible node and needs no policy call.
    assert stats.calls == 4 and stats.rows == 8 and stats.seconds > 0
    greedy(CachedPolicy(), env, instances)
    assert stats.calls == 4  # the observer is gone after the block


def test_grouped_lays_rows_out_as_instance_groups_with_padding() -> None:
    """Rows of one instance share a group of m slots (m = most rows of one instance); equal
    runs fill the layout in order, ragged or unsorted ones leave padding, and very ragged ones
    get one cache row each. spread / collect put rows into the layout and back."""
    import dataclasses

    from nco.env import Batch
    from nco.search.policy_eval import grouped

    @dataclasses.dataclass(frozen=True)
    class Rows(Batch):
        x: torch.Tensor

    cache = Rows(torch.arange(5.0))
    cases = [  # rows, cache rows, (groups, width), slots (None: in order)
        ([0, 0, 1, 1, 2, 2, 3, 3, 4, 4], [0, 1, 2, 3, 4], (5, 2), None),
        ([1, 1, 1, 2, 2, 2], [1, 2], (2, 3), None),  # a chunk of the rows
        ([3, 3, 3, 3], [3], (1, 4), None),
        ([0, 0, 1], [0, 1], (2, 2), [0, 1, 2]),  # instance 1 has a padding slot
        ([2, 0, 0, 2, 4], [0, 2, 4], (3, 2), [2, 0, 1, 3, 4]),  # unsorted
        ([0, 1, 2, 3, 3, 3, 3, 3], [0, 1, 2, 3, 3, 3, 3, 3], (8, 1), None),  # 20 slots > 2 x 8
    ]
    for rows, expected, shape, slots in cases:
        got, groups = grouped(cache, torch.tensor(rows))
        assert got.x.tolist() == expected
        assert (groups.size, groups.width) == shape
        assert (None if groups.slot is None else groups.slot.tolist()) == slots
        x = torch.tensor(rows, dtype=torch.float32).view(-1, 1) * 10 + 1
        laid = groups.spread(x, fill=-1.0)
        assert laid.shape == (*shape, 1)
        assert int((laid == -1).sum()) == shape[0] * shape[1] - len(rows)
        assert torch.equal(groups.collect(laid), x)
        for g in range(shape[0]):  # a group holds its cache row's rows only
            held = laid[g, :, 0][laid[g, :, 0] >= 0]
            assert bool((held == got.x[g] * 10 + 1).all())
    assert grouped(cache, torch.arange(5))[0] is cache


def test_policy_calls_split_at_instance_boundaries(monkeypatch) -> None:
    """Chunks of at most POLICY_ROWS rows (or the policy's `rows_per_call`) end where the
    instance changes when they can."""
    from nco.search import policy_eval

    rows = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 3])
    assert policy_eval._chunks(14, rows, 5) == [(0, 3), (3, 6), (6, 11), (11, 14)]
    assert policy_eval._chunks(14, None, 5) == [(0, 5), (5, 10), (10, 14)]
    assert policy_eval._chunks(14, rows.flip(0), 5) == [(0, 5), (5, 10), (10, 14)]
    assert policy_eval._chunks(4, rows[:4], 5) == [(0, 4)]
    monkeypatch.setattr(policy_eval, "POLICY_ROWS", 5)
    policy = CachedPolicy()
    assert policy_eval.rows_per_call(policy) == 5
    policy.rows_per_call = 9  # a policy's own limit wins
    assert policy_eval.rows_per_call(policy) == 9


def test_neg_inf_where_masks_like_masked_fill() -> None:
    from nco.search.policy_eval import neg_inf_where

    blocked = torch.rand(6, 9, generator=torch.Generator().manual_seed(7)) < 0.5
    scores = torch.randn(6, 9, generator=torch.Generator().manual_seed(8))
    for dtype in (torch.float64, torch.float32, torch.bfloat16, torch.float16):
        mask = neg_inf_where(blocked, dtype)
        assert mask.dtype == dtype
        assert torch.equal(mask, torch.where(blocked, -torch.inf, 0.0).to(dtype))
        x = scores.to(dtype)
        assert torch.equal(x + mask, x.masked_fill(blocked, -torch.inf))
    with pytest.raises(ValueError, match="expected one of"):
        neg_inf_where(blocked, torch.int32)


@pytest.mark.parametrize(
    ("fill", "error"),
    [
        ("nan_blocked", None),  # NaN or +inf where the env masks is masked, as before
        ("inf_blocked", None),
        ("nan_feasible", "NaN or \\+inf"),
        ("inf_feasible", "NaN or \\+inf"),
        ("all_neg_inf", "every feasible action"),
    ],
)
def test_masked_logits_masks_and_checks_the_policy_output(fill: str, error: str | None) -> None:
    from nco.search.policy_eval import masked_logits

    env = TSPEnv(5)
    state = env.reset(env.generate(2, torch.Generator().manual_seed(9)))
    mask = env.action_mask(state)
    out = torch.zeros(2, 5)
    if fill.endswith("blocked"):
        out[~mask] = torch.nan if fill.startswith("nan") else torch.inf
    elif fill.endswith("feasible"):
        out[1, int(mask[1].nonzero()[0])] = torch.nan if fill.startswith("nan") else torch.inf
    else:
        out[0] = -torch.inf

    class Fixed(torch.nn.Module):
        def forward(self, states: TSPState) -> torch.Tensor:
            return out.clone()

    if error is not None:
        with pytest.raises(FloatingPointError, match=error):
            masked_logits(Fixed(), env, state, mask)
        return
    logits = masked_logits(Fixed(), env, state, mask)
    assert logits.dtype == torch.float64
    assert torch.equal(logits, torch.where(mask, 0.0, -torch.inf).double())


def test_forced_rows_are_scored_or_left_out_with_the_same_logits() -> None:
    """A policy with `score_forced_rows` gets every row while at most half are forced (their
    logits are replaced by the forced choice); the logits equal those of leaving them out."""
    from nco.search.policy_eval import masked_logits

    class Scoring(CachedPolicy):
        score_forced_rows = True

    env = TSPEnv(6)
    state = env.reset(env.generate(4, torch.Generator().manual_seed(10)))
    mask = env.action_mask(state).clone()
    mask[1] = False
    mask[1, 3] = True  # row 1 is forced to node 3
    for forced_rows, sent in (([1], 4), ([0, 1, 2], 1)):
        for r in forced_rows:
            if r != 1:
                mask[r] = False
                mask[r, 2] = True
        with timed() as left_out:
            plain = masked_logits(CachedPolicy().eval(), env, state, mask)
        with timed() as scored:
            logits = masked_logits(Scoring().eval(), env, state, mask)
        assert left_out.rows == 4 - len(forced_rows) and scored.rows == sent
        assert torch.equal(logits == -torch.inf, plain == -torch.inf)
        assert torch.allclose(logits, plain, atol=1e-6)
        assert logits[1].tolist() == [-torch.inf] * 3 + [0.0] + [-torch.inf] * 2


@pytest.mark.parametrize("name", sorted(DECODERS))
def test_decoders_record_no_autograd_graph(name: str) -> None:
    """Every decoder runs without gradients, even when called with grad enabled: a trained
    policy's search builds no graph (memory and time)."""
    env = TSPEnv(9)
    instances = env.generate(2, torch.Generator().manual_seed(1))
    seen: list[bool] = []
    policy = CachedPolicy()
    policy.embed.register_forward_hook(lambda *_: seen.append(torch.is_grad_enabled()))
    with torch.enable_grad():
        sols = DECODERS[name](policy, env, instances)
    assert seen and not any(seen)
    assert not sols.logprob.requires_grad
