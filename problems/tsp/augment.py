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
    """Rotate each row about (0.5, 0.5) by a uniform random angle.

    Rows that leave the unit square are shifted and scaled uniformly back into it, which keeps
    every tour's relative length and so the optimal tour.
    """
    b = coords.shape[0]
    angle = torch.rand(b, generator=generator, dtype=torch.float64) * 2 * math.pi
    angle = angle.to(coords.device, coords.dtype).view(-1, 1)
    cx, cy = coords[..., 0] - 0.5, coords[..., 1] - 0.5
    cos, sin = torch.cos(angle), torch.sin(angle)
    out = torch.stack([cos * cx - sin * cy + 0.5, sin * cx + cos * cy + 0.5], dim=-1)
    lo = out.amin(dim=(1, 2), keepdim=True)
    hi = out.amax(dim=(1, 2), keepdim=True)
    outside = (lo < 0) | (hi > 1)
    rescaled = (out - lo) / (hi - lo).clamp_min(1e-12)
    return torch.where(outside, rescaled, out)


def random_augment(
    coords: torch.Tensor, generator: torch.Generator | None = None, rotate_prob: float = 0.5
) -> torch.Tensor:
    """A random symmetry per row, then a random rotation with probability `rotate_prob`."""
    b = coords.shape[0]
    code = torch.randint(0, 8, (b,), generator=generator).to(coords.device)
    out = apply_symmetry(coords, code)
    rotate = (torch.rand(b, generator=generator) < rotate_prob).to(coords.device).view(-1, 1, 1)
    return torch.where(rotate, random_rotation(out, generator), out)
