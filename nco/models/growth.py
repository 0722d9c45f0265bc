"""Function-preserving growth of a trained ReZero policy into a deeper, wider one.

A policy built on `nco.models.layers.ReZeroEncoder` computes the same logits after growing:
- added layers keep their ReZero weights at 0, so each is the identity until training moves
  them (how every ReZero layer starts, Bachlechner et al. 2021);
- added feed-forward units get fresh input weights but zero output weights, so they add nothing
  until trained, yet receive gradients (zero input weights would leave them dead).
Everything else is copied. This lets a small model trained to its plateau continue at a larger
size without starting over (docs/reproduction.md measures it on CVRP20).
"""

from __future__ import annotations

import re

import torch
from torch import nn

FF_IN = re.compile(r"(^|\.)ff\.0\.(weight|bias)$")  # first Linear: (ff_dim, dim), (ff_dim,)
FF_OUT = re.compile(r"(^|\.)ff\.2\.weight$")  # second Linear: (dim, ff_dim)
REZERO = re.compile(r"(^|\.)layers\.\d+\.alpha(_attn|_ff)?$")


def grow_into(small: dict[str, torch.Tensor], big: nn.Module) -> None:
    """Load the state dict `small` into the larger, freshly built `big` so that both compute
    the same function. ValueError if `small` has a weight `big` lacks, or one whose shape
    differs other than by a wider feed-forward (dim and heads must match)."""
    target = big.state_dict()
    extra = sorted(set(small) - set(target))
    if extra:
        raise ValueError(f"grow: the small policy has weights the large one lacks: {extra[:5]}")
    with torch.no_grad():
        for key, value in target.items():
            old = small.get(key)
            if old is None:
                if REZERO.search(key):
                    value.zero_()  # an added layer starts as the identity
                continue
            widened = (FF_IN.search(key) or FF_OUT.search(key)) and old.dim() == value.dim()
            if old.shape != value.shape and not (
                widened and all(a <= b for a, b in zip(old.shape, value.shape, strict=True))
            ):
                raise ValueError(
                    f"grow: weight {key!r} of shape {tuple(old.shape)} does not fit "
                    f"{tuple(value.shape)}; only layers and ff_dim may grow"
                )
            if FF_OUT.search(key):
                value.zero_()  # added units contribute nothing until trained
            value[tuple(slice(0, n) for n in old.shape)] = old.to(value.dtype)
    big.load_state_dict(target)
