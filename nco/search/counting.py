"""A policy wrapper that counts the rows the decoders send to the policy.

Decoders skip forced rows (a single feasible action), so the count is the number of policy
evaluations a search paid for. The wrapper keeps the cached-encoding path of a policy that
offers it (`encode` / `decode`, see nco.search.policy_eval) and counts `decode` rows there.
"""

from __future__ import annotations

from typing import Any

import torch

from nco.env import Batch


class CountingPolicy(torch.nn.Module):
    """Calls `inner` and adds the number of state rows of every call to `rows`."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner
        self.rows = 0
        if callable(getattr(inner, "encode", None)) and callable(getattr(inner, "decode", None)):
            self.encode = inner.encode
            self.decode = self._decode

    def forward(self, states: Batch) -> torch.Tensor:
        """The inner policy's logits; counts the rows."""
        self.rows += states.batch_size
        return self.inner(states)

    def _decode(self, states: Batch, cache: Any, rows: torch.Tensor) -> torch.Tensor:
        self.rows += states.batch_size
        decode = getattr(self.inner, "decode")  # noqa: B009 (a method only some policies have)
        return decode(states, cache, rows)


def counting(policy: torch.nn.Module) -> CountingPolicy:
    """`policy` wrapped in a CountingPolicy, or itself when it already is one."""
    return policy if isinstance(policy, CountingPolicy) else CountingPolicy(policy)
