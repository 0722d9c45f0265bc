"""Calling the policy on a flat batch of states, with an optional cached encoding.

Cached-encoding protocol: a policy may offer `encode(roots) -> cache` (anything with tensors
indexed by instance along dim 0, computed once from the root states of a decode) and
`decode(states, cache, rows) -> logits`, where `rows` Long[L] names each state row's instance
in the cache. Decoders call `encode` once per instance per decode and `decode` at every step;
a policy without `encode` is called as `policy(states)`, as before. `policy(states)` must equal
`decode(states, encode(states), arange(L))` so that both paths give the same search.

Benchmarks time the policy by installing an observer (`timed()` or `observe`); without one no
clock is read and CUDA is never synchronized.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

from nco.env import B, Batch, Env
from nco.policy import HasCache


@dataclasses.dataclass
class PolicyStats:
    """Cumulative policy calls and rows (always counted) and seconds (under `timed()`)."""

    seconds: float = 0.0
    rows: int = 0
    calls: int = 0

    def reset(self) -> None:
        """Zero all counters."""
        self.seconds, self.rows, self.calls = 0.0, 0, 0

    def __call__(self, rows: int, seconds: float) -> None:
        """Observer form: add one policy call of `rows` rows that took `seconds`."""
        self.seconds += seconds
        self.rows += rows
        self.calls += 1


STATS = PolicyStats()  # calls and rows of every policy call; seconds stay 0 (see `timed`)
_OBSERVERS: list[Callable[[int, float], None]] = []
# Most rows sent to the policy in one call: bounds the activation memory of wide searches
# (Gumbeldore 32 beams x 128 TSP100 instances is 4096 rows x 102 tokens; the paper-size BQ's
# feed-forward alone holds 0.85 GB for them in float32) at no cost in throughput on a CPU.
POLICY_ROWS = 1024


@contextlib.contextmanager
def observe(callback: Callable[[int, float], None]) -> Iterator[None]:
    """Call `callback(rows, seconds)` after every policy call inside the block.

    While any observer is installed, each policy call is timed, synchronizing CUDA first so
    the seconds are the device's.
    """
    _OBSERVERS.append(callback)
    try:
        yield
    finally:
        _OBSERVERS.remove(callback)


@contextlib.contextmanager
def timed() -> Iterator[PolicyStats]:
    """Fresh PolicyStats that add up the policy calls, rows and seconds inside the block."""
    stats = PolicyStats()
    with observe(stats):
        yield stats


def has_cache(policy: torch.nn.Module) -> bool:
    """True when `policy` offers the cached-encoding path (nco.policy.HasCache)."""
    return isinstance(policy, HasCache)


def encode(policy: torch.nn.Module, roots: Batch) -> Any:
    """The policy's encoding of the root states (one row per instance), None without a cache."""
    if not isinstance(policy, HasCache):
        return None
    return policy.encode(roots)


def grouped(cache: B, rows: torch.Tensor) -> tuple[B, int]:
    """`(cache rows of g instances, m)` when `rows` lists g instances m times each, in runs
    (each instance's beams or samples are consecutive; a chunk of them too), else
    `(cache.index(rows), 1)`.

    A policy then computes its rows as (g, m) groups against g cache rows instead of a per-row
    copy of the cache (node embeddings, keys and values are large).
    """
    n = rows.numel()
    first = rows[:1]
    m = int((rows == first).sum()) if n else 1
    if n and n % m == 0:
        heads = rows[::m]
        if torch.equal(rows, heads.repeat_interleave(m)):
            if heads.numel() == cache.batch_size and torch.equal(
                heads, torch.arange(heads.numel(), device=rows.device)
            ):
                return cache, m
            return cache.index(heads), m
    return cache.index(rows), 1


def _call(
    policy: torch.nn.Module, states: Batch, cache: Any, rows: torch.Tensor | None
) -> torch.Tensor:
    if cache is None or rows is None or not isinstance(policy, HasCache):
        return policy(states)
    return policy.decode(states, cache, rows)


def masked_logits(
    policy: torch.nn.Module,
    env: Env,
    states: Batch,
    mask: torch.Tensor,
    cache: Any = None,
    rows: torch.Tensor | None = None,
) -> torch.Tensor:
    """Policy logits (L, A) in float64 with infeasible actions at -inf.

    Rows with a single feasible action are not sent to the policy (their choice is forced).
    A policy may rule out feasible actions with -inf (candidate restriction such as knn), as
    long as one feasible action per row keeps a finite logit. With a `cache` (from `encode`),
    `rows` Long[L] gives each state's instance in it.
    """
    if cache is not None and (rows is None or rows.shape[0] != states.batch_size):
        raise ValueError("masked_logits: a cache needs `rows`, one instance index per state.")
    out = torch.where(mask, 0.0, -torch.inf).to(torch.float64)
    need = (mask.sum(1) > 1).nonzero().squeeze(1)
    if need.numel() == 0:
        return out
    sub = states if need.numel() == states.batch_size else env.index(states, need)
    sub_rows = None if rows is None else rows[need]
    start = time.perf_counter() if _OBSERVERS else 0.0
    if need.numel() <= POLICY_ROWS:
        logits = _call(policy, sub, cache, sub_rows)
    else:
        parts = torch.arange(need.numel(), device=need.device).split(POLICY_ROWS)
        logits = torch.cat(
            [
                _call(policy, env.index(sub, r), cache, None if sub_rows is None else sub_rows[r])
                for r in parts
            ]
        )
    STATS.rows += need.numel()
    STATS.calls += 1
    if _OBSERVERS:
        if logits.device.type == "cuda":
            torch.cuda.synchronize(logits.device)
        seconds = time.perf_counter() - start
        for callback in list(_OBSERVERS):
            callback(need.numel(), seconds)
    logits = torch.where(mask[need], logits.to(torch.float64), -torch.inf)
    if bool(torch.isnan(logits).any() | (logits == torch.inf).any()):
        raise FloatingPointError("Policy returned NaN or +inf logits for feasible actions.")
    if not bool((logits > -torch.inf).any(1).all()):
        raise FloatingPointError("Policy gave -inf to every feasible action of a row.")
    out[need] = logits
    return out


def nucleus(logp: torch.Tensor, top_p: float) -> torch.Tensor:
    """Top-p truncation of normalized log-probabilities (L, A), renormalized.

    Keeps the smallest set of most likely actions whose mass reaches `top_p` (always >= 1).
    """
    if top_p >= 1.0:
        return logp
    srt, idx = logp.sort(dim=1, descending=True)
    probs = srt.exp()
    drop_sorted = (probs.cumsum(1) - probs) >= top_p
    drop = torch.zeros_like(drop_sorted).scatter(1, idx, drop_sorted)
    kept = logp.masked_fill(drop, -torch.inf)
    return kept - torch.logsumexp(kept, dim=1, keepdim=True)
