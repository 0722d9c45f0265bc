"""Optional capabilities of a policy, declared as Protocols instead of probed by name.

A policy is any `nn.Module` mapping states to logits (nco.env). The commands adjust two
settings where a policy has them: its compute precision (`--precision`) and a restriction of the
candidates to the k nearest nodes (`knn`). A policy opts in by having the attribute. A policy
with `encode` / `decode` (`HasCache`) is encoded once per instance by every decoder.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import torch


@runtime_checkable
class HasPrecision(Protocol):
    """A policy whose matrix products run in `precision` ("fp32" or "bf16")."""

    precision: str


@runtime_checkable
class HasKnn(Protocol):
    """A policy that scores only the `knn` nearest candidates (None: all of them)."""

    knn: int | None


@runtime_checkable
class HasCache(Protocol):
    """A policy with a cached encoding (nco.search.policy_eval): `encode(roots)` once per
    instance, `decode(states, cache, rows)` per step, `rows` naming each state's instance.
    `instance_encoding` is True when the encoding reads only the instance (not the state), so
    copies of an instance that differ only in their start may share one."""

    instance_encoding: bool

    def encode(self, roots: Any) -> Any: ...

    def decode(self, states: Any, cache: Any, rows: torch.Tensor) -> torch.Tensor: ...
