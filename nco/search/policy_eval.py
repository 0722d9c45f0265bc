"""Calling the policy on a flat batch of states, with timing for the benchmarks."""

from __future__ import annotations

import dataclasses
import time

import torch

from nco.env import Batch, Env


@dataclasses.dataclass
class PolicyStats:
    """Cumulative policy-forward time and rows, read by benchmarks/bench_search.py."""

    seconds: float = 0.0
    rows: int = 0
    calls: int = 0

    def reset(self) -> None:
        """Zero all counters."""
        self.seconds, self.rows, self.calls = 0.0, 0, 0


STATS = PolicyStats()
# Most rows sent to the policy in one call: bounds the activation memory of wide searches
# (Gumbeldore 32 beams x 128 TSP100 instances is 4096 rows x 102 tokens; the paper-size BQ's
# feed-forward alone holds 0.85 GB for them in float32) at no cost in throughput on a CPU.
POLICY_ROWS = 1024


def masked_logits(
    policy: torch.nn.Module, env: Env, states: Batch, mask: torch.Tensor
) -> torch.Tensor:
    """Policy logits (L, A) in float64 with infeasible actions at -inf.

    Rows with a single feasible action are not sent to the policy (their choice is forced).
    A policy may rule out feasible actions with -inf (candidate restriction such as knn), as
    long as one feasible action per row keeps a finite logit.
    """
    out = torch.where(mask, 0.0, -torch.inf).to(torch.float64)
    need = (mask.sum(1) > 1).nonzero().squeeze(1)
    if need.numel() == 0:
        return out
    sub = states if need.numel() == states.batch_size else env.index(states, need)
    start = time.perf_counter()
    if need.numel() <= POLICY_ROWS:
        logits = policy(sub)
    else:
        rows = torch.arange(need.numel(), device=need.device).split(POLICY_ROWS)
        logits = torch.cat([policy(env.index(sub, r)) for r in rows])
    if logits.device.type == "cuda":
        torch.cuda.synchronize(logits.device)
    STATS.seconds += time.perf_counter() - start
    STATS.rows += need.numel()
    STATS.calls += 1
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
