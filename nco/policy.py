"""Optional capabilities of a policy, declared as Protocols instead of probed by name.

A policy is any `nn.Module` mapping states to logits (nco.env). The commands adjust two
settings where a policy has them: its compute precision (`--precision`) and a restriction of the
candidates to the k nearest nodes (`knn`). A policy opts in by having the attribute.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class HasPrecision(Protocol):
    """A policy whose matrix products run in `precision` ("fp32" or "bf16")."""

    precision: str


@runtime_checkable
class HasKnn(Protocol):
    """A policy that scores only the `knn` nearest candidates (None: all of them)."""

    knn: int | None
