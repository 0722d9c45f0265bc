"""Solution-preserving TSP augmentations (paper D.2.3): the eight square symmetries and rotation."""

from __future__ import annotations

import math

import torch


def apply_symmetry(coords: torch.Tensor, code: torch.Tensor) -> torch.Tensor:
    """Apply one of the eight symmetries of the unit square per row.

    `coords` (B, n, 2); `code` Long[B] in 0..7: bit 0 swaps x and y, bit 1 reflects x about 0.5,
    bit 2 reflects y about 0.5. Code 0 is the identity.
    """
    code = code.view(-1, 1)
    x, y = coords[..., 0], coords[..., 1]
    swap = (code & 1).bool()
    x, y = torch.where(swap, y, x), torch.where(swap, x, y)
    x = torch.where((code & 2).bool(), 1 - x, x)
    y = torch.where((code & 4).bool(), 1 - y, y)
    return torch.stack([x, y], dim=-1)


def random_rotation(coords: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Rotate each row about (0.5, 0.5) by a uniform random angle, then shrink back into the square.

    A row with a point outside the unit square after rotation is scaled about the centre by
    0.5 / (largest coordinate offset from 0.5), as the paper does; points are never moved apart,
    so every tour keeps its relative length (and the optimal tour stays optimal) and no distance
    grows. The authors' code takes that offset over the whole instance before cutting the
    sub-tour; here it is the sub-problem's own, as the paper words it (shrink-only either way).
    """
    b = coords.shape[0]
    angle = torch.rand(b, generator=generator, dtype=torch.float64) * 2 * math.pi
    angle = angle.to(coords.device, coords.dtype).view(-1, 1)
    cx, cy = coords[..., 0] - 0.5, coords[..., 1] - 0.5
    cos, sin = torch.cos(angle), torch.sin(angle)
    centred = torch.stack([cos * cx - sin * cy, sin * cx + cos * cy], dim=-1)
    offset = centred.abs().amax(dim=(1, 2), keepdim=True)
    scale = torch.where(offset > 0.5, 0.5 / offset.clamp_min(1e-12), torch.ones_like(offset))
    return (centred * scale + 0.5).clamp(0.0, 1.0)


def random_augment(coords: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """A random square symmetry per row, then a random rotation (paper D.2.3: every sub-tour is
    rotated by a uniform angle, as in the authors' code)."""
    b = coords.shape[0]
    code = torch.randint(0, 8, (b,), generator=generator).to(coords.device)
    return random_rotation(apply_symmetry(coords, code), generator)
