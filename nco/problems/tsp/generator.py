"""Random TSP instances: nodes uniform in the unit square (Kool et al. 2019)."""

from __future__ import annotations

import torch

from nco.problems.tsp.types import TSPInstances


def generate(num: int, num_nodes: int, generator: torch.Generator | None = None) -> TSPInstances:
    """`num` instances of `num_nodes` nodes with float64 coordinates uniform in [0, 1)^2."""
    coords = torch.rand(num, num_nodes, 2, generator=generator, dtype=torch.float64)
    return TSPInstances(coords=coords)
