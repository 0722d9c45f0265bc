"""The result type of every decoder: all sampled sequences per instance."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import torch


class Best(NamedTuple):
    """The best sequence per instance."""

    actions: torch.Tensor  # (N, T) long, pad -1
    objective: torch.Tensor  # (N,) float64


@dataclasses.dataclass(frozen=True)
class Solutions:
    """Every sequence a decoder produced, per instance.

    `objective` is -inf and `actions` -1 in padded slots (fewer sequences than slots when the
    domain is small). `logprob` is the sequence log-probability under the unmodified policy.
    """

    actions: torch.Tensor  # (N, S, T) long, pad -1
    objective: torch.Tensor  # (N, S) float64, pad -inf
    logprob: torch.Tensor  # (N, S) float64, pad -inf

    @property
    def valid(self) -> torch.Tensor:
        """Bool (N, S): True for real (non-padded) sequences."""
        return self.objective > -torch.inf

    def best(self) -> Best:
        """The sequence with the largest objective per instance."""
        idx = self.objective.argmax(dim=1)
        rows = torch.arange(self.objective.shape[0], device=idx.device)
        return Best(actions=self.actions[rows, idx], objective=self.objective[rows, idx])
