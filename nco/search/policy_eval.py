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


def rows_per_call(policy: torch.nn.Module) -> int:
    """Most rows `policy` takes in one call: its own `rows_per_call` where it states one (a
    policy whose rows need little activation memory, such as the AM's and POMO's one query
    per row), else POLICY_ROWS."""
    return int(getattr(policy, "rows_per_call", POLICY_ROWS))


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


_NEG_INF_BITS = {  # the bit pattern of -inf, as the signed integer of the same width
    torch.float64: (torch.int64, -(1 << 52)),  # 0xFFF0000000000000
    torch.float32: (torch.int32, -(1 << 23)),  # 0xFF800000
    torch.bfloat16: (torch.int16, -(1 << 7)),  # 0xFF80
    torch.float16: (torch.int16, -(1 << 10)),  # 0xFC00
}


def neg_inf_where(blocked: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """-inf where `blocked`, +0 elsewhere, in `dtype`: added to scores it masks them exactly as
    `masked_fill(blocked, -inf)` (x + 0 = x, x + -inf = -inf for finite x), at a fraction of
    the cost: on a CPU masked_fill and where with a bool mask take ~20x longer than this
    integer product of the mask with -inf's bit pattern plus one add."""
    if dtype not in _NEG_INF_BITS:
        raise ValueError(f"neg_inf_where: expected one of {sorted(map(str, _NEG_INF_BITS))}.")
    int_type, bits = _NEG_INF_BITS[dtype]
    return (blocked.to(int_type) * bits).view(dtype)


@dataclasses.dataclass(frozen=True)
class Groups:
    """Where a step's L state rows sit when laid out as `size` groups of `width` slots, one
    group per cache row: row i goes to flat slot `slot[i]` (group x width + place), or to slot i
    when `slot` is None (the rows fill the layout in order). Unused slots are padding."""

    size: int
    width: int
    slot: torch.Tensor | None  # Long[L]

    def spread(self, x: torch.Tensor, fill: float | bool = 0) -> torch.Tensor:
        """Rows (L, ...) as (size, width, ...), padding slots set to `fill`."""
        shape = (self.size, self.width, *x.shape[1:])
        if self.slot is None:
            return x.view(shape)
        out = x.new_full((self.size * self.width, *x.shape[1:]), fill)
        out[self.slot] = x
        return out.view(shape)

    def collect(self, y: torch.Tensor) -> torch.Tensor:
        """The rows (L, ...) of a (size, width, ...) layout, padding dropped."""
        flat = y.reshape(self.size * self.width, *y.shape[2:])
        return flat if self.slot is None else flat[self.slot]


def grouped(cache: B, rows: torch.Tensor) -> tuple[B, Groups]:
    """`(cache rows of the g instances in `rows`, their Groups)`: the state rows of one instance
    share a group of m = (most rows of one instance) slots, so a policy computes them as (g, m)
    against g cache rows instead of a per-row copy of the cache (node embeddings, keys and
    values are large). Instances with fewer rows (beams or starts that finished, rows whose
    action is forced, a chunk's first and last instance) leave padding slots. Where the padding
    would exceed the rows themselves, each row gets its own copy (`cache.index(rows)`, m = 1).
    """
    n = rows.numel()
    if n == 0:
        return cache.index(rows), Groups(0, 1, None)
    order, ranked = None, rows
    if not bool((rows[1:] >= rows[:-1]).all()):
        ranked, order = torch.sort(rows, stable=True)
    heads, counts = torch.unique_consecutive(ranked, return_counts=True)
    g, m = heads.numel(), int(counts.max())
    if g * m > 2 * n:
        return cache.index(rows), Groups(n, 1, None)
    if g == cache.batch_size and torch.equal(heads, torch.arange(g, device=rows.device)):
        sub = cache
    else:
        sub = cache.index(heads)
    if g * m == n and order is None:
        return sub, Groups(g, m, None)
    group = torch.arange(g, device=rows.device).repeat_interleave(counts, output_size=n)
    first = counts.cumsum(0) - counts
    place = torch.arange(n, device=rows.device) - first.repeat_interleave(counts, output_size=n)
    slot = group * m + place
    if order is not None:
        slot = torch.empty_like(slot).scatter_(0, order, slot)
    return sub, Groups(g, m, slot)


def _call(
    policy: torch.nn.Module, states: Batch, cache: Any, rows: torch.Tensor | None
) -> torch.Tensor:
    if cache is None or rows is None or not isinstance(policy, HasCache):
        return policy(states)
    return policy.decode(states, cache, rows)


def _chunks(count: int, rows: torch.Tensor | None, limit: int) -> list[tuple[int, int]]:
    """Row ranges of at most `limit` rows covering 0..count; with sorted cache `rows`, ranges
    end where the instance changes, where that leaves a non-empty range, so that a grouped
    policy call pads no instance split across two calls."""
    if count <= limit:
        return [(0, count)]
    cuts = None
    if rows is not None and bool((rows[1:] >= rows[:-1]).all()):
        cuts = (rows[1:] != rows[:-1]).nonzero().squeeze(1) + 1
    out, lo = [], 0
    while lo < count:
        hi = min(lo + limit, count)
        if hi < count and cuts is not None:
            at = int(torch.searchsorted(cuts, hi, right=True)) - 1
            if at >= 0 and int(cuts[at]) > lo:
                hi = int(cuts[at])
        out.append((lo, hi))
        lo = hi
    return out


def _check_logits(logits: torch.Tensor) -> None:
    """FloatingPointError unless every row of the masked logits has a finite best logit."""
    if bool(torch.isnan(logits).any() | (logits == torch.inf).any()):
        raise FloatingPointError("Policy returned NaN or +inf logits for feasible actions.")
    if not bool((logits > -torch.inf).any(1).all()):
        raise FloatingPointError("Policy gave -inf to every feasible action of a row.")


def masked_logits(
    policy: torch.nn.Module,
    env: Env,
    states: Batch,
    mask: torch.Tensor,
    cache: Any = None,
    rows: torch.Tensor | None = None,
) -> torch.Tensor:
    """Policy logits (L, A) in float64 with infeasible actions at -inf.

    Rows with a single feasible action get 0 there (their choice is forced) and are not sent to
    the policy, unless the policy sets `score_forced_rows` (a row costs it less than gathering
    the others: the AM's and POMO's one query per row) and at most half the rows are forced;
    then every row is sent and the forced rows' logits are replaced. A policy may rule out
    feasible actions with -inf (candidate restriction such as knn), as long as one feasible
    action per row keeps a finite logit. With a `cache` (from `encode`), `rows` Long[L] gives
    each state's instance in it.
    """
    if cache is not None and (rows is None or rows.shape[0] != states.batch_size):
        raise ValueError("masked_logits: a cache needs `rows`, one instance index per state.")
    total = states.batch_size
    forced = mask.sum(1) <= 1
    free = total - int(forced.sum())
    if free == 0:
        return neg_inf_where(~mask, torch.float64)
    every = free == total or (getattr(policy, "score_forced_rows", False) and 2 * free >= total)
    need = None if every else (~forced).nonzero().squeeze(1)
    sub = states if need is None else env.index(states, need)
    sub_rows = rows if need is None or rows is None else rows[need]
    count = sub.batch_size
    start = time.perf_counter() if _OBSERVERS else 0.0
    parts = _chunks(count, sub_rows if cache is not None else None, rows_per_call(policy))
    if len(parts) == 1:
        logits = _call(policy, sub, cache, sub_rows)
    else:
        logits = torch.cat(
            [
                _call(
                    policy,
                    env.index(sub, torch.arange(lo, hi, device=mask.device)),
                    cache,
                    None if sub_rows is None else sub_rows[lo:hi],
                )
                for lo, hi in parts
            ]
        )
    STATS.rows += count
    STATS.calls += 1
    if _OBSERVERS:
        if logits.device.type == "cuda":
            torch.cuda.synchronize(logits.device)
        seconds = time.perf_counter() - start
        for callback in list(_OBSERVERS):
            callback(count, seconds)
    blocked = ~(mask if need is None else mask[need])
    if logits.dtype not in _NEG_INF_BITS:
        logits = logits.to(torch.float64)
    # Masked in the policy's precision, then widened: the same values, half the float64 passes.
    masked = logits.add(neg_inf_where(blocked, logits.dtype)).to(torch.float64)
    sent_forced = need is None and free < total
    if sent_forced:
        masked[forced] = neg_inf_where(blocked[forced], torch.float64)
    if not bool(torch.isfinite(masked.amax(dim=1)).all()):  # NaN or inf: mask exactly, check
        masked = logits.to(torch.float64, copy=True).masked_fill_(blocked, -torch.inf)
        if sent_forced:
            masked[forced] = neg_inf_where(blocked[forced], torch.float64)
        _check_logits(masked)
    if need is None:
        return masked
    out = neg_inf_where(~mask, torch.float64)
    out[need] = masked
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
