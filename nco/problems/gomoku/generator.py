"""Gomoku instances: the cell of black's opening stone."""

from __future__ import annotations

import torch

from nco.problems.gomoku.types import GomokuInstances


def generate(num: int, num_cells: int, generator: torch.Generator | None = None) -> GomokuInstances:
    """`num` opening cells uniform over the board."""
    return GomokuInstances(opening=torch.randint(0, num_cells, (num,), generator=generator))


def all_openings(num_cells: int, device: torch.device | str = "cpu") -> GomokuInstances:
    """Every opening once, in cell order (the paper's training and evaluation set)."""
    return GomokuInstances(opening=torch.arange(num_cells, device=device))
