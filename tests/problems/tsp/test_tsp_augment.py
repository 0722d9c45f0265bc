"""TSP augmentations: square symmetries keep tour lengths, rotations keep them up to one scale."""

from __future__ import annotations

import pytest
import torch

from nco.problems.tsp.augment import apply_symmetry, random_augment, random_rotation
from nco.problems.tsp.env import tour_length

B, N = 16, 9


def coords_and_tours(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random unit-square coordinates and two different random tours per row."""
    gen = torch.Generator().manual_seed(seed)
    coords = torch.rand(B, N, 2, generator=gen, dtype=torch.float64)
    tour_a = torch.stack([torch.randperm(N, generator=gen) for _ in range(B)])
    tour_b = torch.stack([torch.randperm(N, generator=gen) for _ in range(B)])
    return coords, tour_a, tour_b


@pytest.mark.parametrize("code", range(8))
def test_each_symmetry_preserves_tour_lengths(code: int) -> None:
    """Every one of the eight symmetries keeps every tour's length and the unit square."""
    coords, tour_a, tour_b = coords_and_tours()
    out = apply_symmetry(coords, torch.full((B,), code))
    for tour in (tour_a, tour_b):
        assert torch.allclose(tour_length(out, tour), tour_length(coords, tour), rtol=1e-14, atol=0)
    assert bool((out >= 0).all()) and bool((out <= 1).all())


def test_symmetries_are_the_eight_distinct_maps_of_the_square() -> None:
    """Code 0 is the identity and the eight codes send the point (0.1, 0.3) to eight places."""
    point = torch.tensor([[[0.1, 0.3]]], dtype=torch.float64).expand(8, 1, 2)
    images = apply_symmetry(point, torch.arange(8))[:, 0]
    assert torch.equal(images[0], point[0, 0])
    expected = {
        (0.1, 0.3),
        (0.3, 0.1),
        (0.9, 0.3),
        (0.7, 0.1),
        (0.1, 0.7),
        (0.3, 0.9),
        (0.9, 0.7),
        (0.7, 0.9),
    }
    assert {tuple(round(v, 12) for v in p.tolist()) for p in images} == expected


def test_random_rotation_scales_all_tours_alike() -> None:
    """After a rotation (and any rescale into the square) two different tours of one row keep
    the same length ratio, the points stay in [0, 1], and the shape really moved."""
    coords, tour_a, tour_b = coords_and_tours(1)
    out = random_rotation(coords, torch.Generator().manual_seed(2))
    ratio_a = tour_length(out, tour_a) / tour_length(coords, tour_a)
    ratio_b = tour_length(out, tour_b) / tour_length(coords, tour_b)
    assert torch.allclose(ratio_a, ratio_b, rtol=1e-12, atol=0)
    assert bool((out >= 0).all()) and bool((out <= 1).all())
    assert not torch.allclose(out, coords)


def test_random_augment_is_similarity_and_seeded() -> None:
    """random_augment keeps length ratios across tours, stays in [0, 1] and follows the seed."""
    coords, tour_a, tour_b = coords_and_tours(2)
    out = random_augment(coords, torch.Generator().manual_seed(4))
    again = random_augment(coords, torch.Generator().manual_seed(4))
    assert torch.equal(out, again)
    ratio_a = tour_length(out, tour_a) / tour_length(coords, tour_a)
    ratio_b = tour_length(out, tour_b) / tour_length(coords, tour_b)
    assert torch.allclose(ratio_a, ratio_b, rtol=1e-12, atol=0)
    assert bool((out >= 0).all()) and bool((out <= 1).all())


def pairwise(coords: torch.Tensor) -> torch.Tensor:
    """All pairwise distances per row, (B, n, n)."""
    return torch.cdist(coords, coords)


@pytest.mark.parametrize("spread", [0.02, 0.2, 1.0])
def test_random_augment_never_enlarges_a_distance(spread: float) -> None:
    """Rotation shrinks rows that leave the square and leaves the rest alone: no pairwise
    distance grows, even for tight clusters (the old min-max rescale enlarged those up to ~4x),
    every row keeps one scale factor for all its distances, and points stay in [0, 1]^2."""
    gen = torch.Generator().manual_seed(7)
    centre = 0.5 + (torch.rand(256, 1, 2, generator=gen, dtype=torch.float64) - 0.5) * (1 - spread)
    coords = centre + (torch.rand(256, 6, 2, generator=gen, dtype=torch.float64) - 0.5) * spread
    out = random_augment(coords, torch.Generator().manual_seed(8))
    before, after = pairwise(coords), pairwise(out)
    assert bool((after <= before * (1 + 1e-12) + 1e-15).all())
    ratio = after[:, 0, 1] / before[:, 0, 1]
    assert torch.allclose(after, before * ratio.view(-1, 1, 1), rtol=1e-9, atol=1e-12)
    assert bool((out >= 0).all()) and bool((out <= 1).all())
    if spread <= 0.2:  # a cluster well inside the square is only rotated, never rescaled
        inside = (coords - 0.5).norm(dim=-1).amax(dim=1) < 0.5  # inside under every angle
        assert inside.any() and torch.allclose(ratio[inside], torch.ones_like(ratio[inside]))
