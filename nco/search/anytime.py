"""Anytime statistics of round-wise sampling without replacement (SBS rounds, Gumbeldore).

After each round r, per instance:

- `covered`: policy mass of every sequence sampled in rounds 1..r, sum_i p(y_i) under the
  unmodified policy (the trie removes exactly this mass from the root);
- `estimate`: an unbiased estimate of the policy's expected objective E_p[f], Kool et al.
  (2019) section 4.2, eq. 13, extended over rounds: the sequences D_r of earlier rounds are
  known exactly, the rest of the domain is estimated by round r's sample with the round's
  k-th key kappa as threshold (that leaf excluded),

      est_r = sum_{i in D_r} p_i f_i + sum_{j in S_r \\ last} p_j f_j / q_j,
      q_j = P(G_{phi_j} > kappa) = 1 - exp(-exp(phi_j - kappa)),

  where phi_j is the log-probability of y_j under the round's sampling distribution (the
  remaining mass renormalized, shifted by sigma x advantage in Gumbeldore); given D_r this is
  the priority-sampling (Horvitz-Thompson) estimator of the remaining sum, hence unbiased
  whatever the round's sampling distribution, as long as no nucleus (top_p < 1) removes
  sequences from it. A round that exhausts the domain has no threshold: q_j = 1, exact.
- `stderr`: the square root of the priority-sampling variance estimate
  sum_{j in S_r \\ last} (p_j f_j)^2 (1 - q_j) / q_j^2 (Duffield, Lund and Thorup 2007),
  the spread of `estimate` given the earlier rounds;
- `best`: the best objective found so far;
- `nodes`: trie nodes expanded for the instance so far (each is one policy row, or a forced
  step that skips the policy).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import torch

from nco.search.beam import Leaves
from nco.search.gumbel import log_inclusion_prob

FIELDS = ("covered", "estimate", "stderr", "best", "nodes")


def round_estimate(
    leaves: Leaves, known: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Eq. 13 over rounds for one round's `leaves` (N, k).

    `known` (N,) is sum p_i f_i over the sequences of earlier rounds. Returns the estimate of
    E_p[f], its variance estimate and this round's own sum p_j f_j (to add to `known`).
    """
    valid = leaves.valid
    f = torch.where(valid, leaves.objective, 0.0)
    log_p = torch.where(valid, leaves.logprob, -torch.inf)
    kappa = leaves.key[:, -1:]
    pruned = leaves.pruned.unsqueeze(1)
    log_q = torch.where(valid & pruned, log_inclusion_prob(leaves.phi, kappa), 0.0)
    last = torch.zeros_like(valid)
    last[:, -1] = True
    used = valid & ~(pruned & last)
    # in log space: p and q can both underflow (long episodes) while p / q does not
    ratio = torch.where(used, (log_p - log_q).exp(), 0.0)  # p_j / q_j
    one_minus_q = torch.where(used, -torch.expm1(log_q), 0.0)
    est = known + (ratio * f).sum(1)
    var = ((ratio * f).square() * one_minus_q).sum(1)
    return est, var, (log_p.exp() * f).sum(1)


def improvement_chance(leaves: Leaves, best_before: torch.Tensor) -> torch.Tensor:
    """P(a sample from the round's distribution beats `best_before`) per instance (N,).

    The normalized importance-weighted estimate (Kool et al. 2019 eq. 14) of the indicator
    f > best_before over the round's leaves, the k-th (threshold) leaf excluded; 1 where
    `best_before` is -inf (nothing found yet), 0 where no leaf is included.
    """
    valid = leaves.valid
    kappa = leaves.key[:, -1:]
    log_w = leaves.phi - log_inclusion_prob(leaves.phi, kappa)
    pruned = leaves.pruned.unsqueeze(1)
    log_w = torch.where(pruned, log_w, leaves.phi)
    last = torch.zeros_like(valid)
    last[:, -1] = True
    used = valid & ~(pruned & last)
    log_w = torch.where(used, log_w, -torch.inf)
    has = used.any(1)
    w = torch.softmax(torch.where(has.unsqueeze(1), log_w, 0.0), dim=1)
    better = (leaves.objective > best_before.unsqueeze(1)) & used
    chance = torch.where(better, w, 0.0).sum(1)
    chance = torch.where(has, chance, 0.0)
    return torch.where(best_before == -torch.inf, 1.0, chance)


@dataclasses.dataclass
class AnytimeLog:
    """Per-round statistics, each a list over rounds of (N,) tensors (see the module doc).

    `active` marks the instances that sampled in the round (all, without an adaptive budget);
    `width` is each instance's beam width in the round (0 when stopped); `rows` is the number
    of policy rows the whole batch used up to the end of each round.
    """

    covered: list[torch.Tensor] = dataclasses.field(default_factory=list)
    estimate: list[torch.Tensor] = dataclasses.field(default_factory=list)
    stderr: list[torch.Tensor] = dataclasses.field(default_factory=list)
    best: list[torch.Tensor] = dataclasses.field(default_factory=list)
    nodes: list[torch.Tensor] = dataclasses.field(default_factory=list)
    width: list[torch.Tensor] = dataclasses.field(default_factory=list)
    rows: list[int] = dataclasses.field(default_factory=list)

    def stacked(self, name: str) -> torch.Tensor:
        """One field as a tensor (rounds, N)."""
        return torch.stack([t.to(torch.float64) for t in getattr(self, name)])

    def extend(self, other: AnytimeLog) -> AnytimeLog:
        """Instances of `other` appended to ours (chunks of one decode); rounds are padded by
        repeating an instance's last value (its statistics no longer change) and rows add."""
        if not self.covered:
            return other
        rounds = max(len(self.covered), len(other.covered))
        out = AnytimeLog()
        for name in (*FIELDS, "width"):
            a, b = _padded(getattr(self, name), rounds), _padded(getattr(other, name), rounds)
            if name == "width":
                a = [x if i < len(self.width) else torch.zeros_like(x) for i, x in enumerate(a)]
                b = [x if i < len(other.width) else torch.zeros_like(x) for i, x in enumerate(b)]
            setattr(out, name, [torch.cat([x, y]) for x, y in zip(a, b, strict=True)])
        ra, rb = _padded_int(self.rows, rounds), _padded_int(other.rows, rounds)
        out.rows = [x + y for x, y in zip(ra, rb, strict=True)]
        return out

    def to_json(self) -> dict[str, Any]:
        """Plain lists: every field as [round][instance], plus per-round means."""
        out: dict[str, Any] = {"rounds": len(self.covered), "rows": list(self.rows)}
        for name in (*FIELDS, "width"):
            values = self.stacked(name)
            out[name] = [[_finite(v) for v in row] for row in values.tolist()]
            out[f"mean_{name}"] = [_finite(v) for v in values.mean(1).tolist()]
        return out


def _padded(values: list[torch.Tensor], rounds: int) -> list[torch.Tensor]:
    return values + [values[-1]] * (rounds - len(values))


def _padded_int(values: list[int], rounds: int) -> list[int]:
    return values + [values[-1]] * (rounds - len(values))


def _finite(v: float) -> float | None:
    return v if v == v and abs(v) != float("inf") else None


def plot_rounds(logs: dict[str, dict[str, Any]], path: str | Path, title: str = "") -> Path:
    """Per-round plot of `to_json()` logs by name: mean best objective, mean estimate with
    its mean standard error, and mean covered mass, each against the cumulative policy rows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for name, log in logs.items():
        rows = [r / 1000 for r in log["rows"]]
        axes[0].plot(rows, log["mean_best"], marker="o", label=name)
        est = [math.nan if v is None else v for v in log["mean_estimate"]]
        se = [math.nan if v is None else v for v in log["mean_stderr"]]
        axes[1].errorbar(rows, est, yerr=se, marker="o", capsize=3, label=name)
        axes[2].plot(rows, log["mean_covered"], marker="o", label=name)
    axes[0].set_ylabel("mean best objective so far")
    axes[1].set_ylabel("mean estimate of E_p[f] (+- mean s.e.)")
    axes[2].set_ylabel("mean policy mass covered")
    for ax in axes:
        ax.set_xlabel("policy rows (cumulative, thousands)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_json(data: dict[str, Any], path: str | Path) -> Path:
    """Write `data` as indented JSON, creating the folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path
