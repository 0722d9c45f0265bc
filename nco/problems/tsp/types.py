"""Batched TSP instances and states in the BQ tail sub-problem form."""

from __future__ import annotations

import dataclasses

import torch

from nco.env import Batch


@dataclasses.dataclass(frozen=True)
class TSPInstances(Batch):
    """Euclidean TSP instances."""

    coords: torch.Tensor  # (N, n, 2) float64


@dataclasses.dataclass(frozen=True)
class TSPState(Batch):
    """Tail sub-problem: go from `origin` through every `remaining` node to `dest`.

    All rows of one batch at one depth have the same number of remaining nodes, so `remaining`
    is a dense index tensor in increasing node order.
    """

    coords: torch.Tensor  # (B, n, 2) node coordinates
    origin: torch.Tensor  # (B,) long, current node
    dest: torch.Tensor  # (B,) long, node the tour must return to
    remaining: torch.Tensor  # (B, r) long, unvisited nodes (excluding origin and dest)
    length: torch.Tensor  # (B,) float64, length of the partial tour so far
