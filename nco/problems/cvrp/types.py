"""Batched CVRP instances and states in the BQ tail sub-problem form (paper D.3)."""

from __future__ import annotations

import dataclasses

import torch

from nco.env import Batch


@dataclasses.dataclass(frozen=True)
class CVRPInstances(Batch):
    """CVRP instances with integer demands and capacities, as stored on disk."""

    depot: torch.Tensor  # (N, 2) float64
    locs: torch.Tensor  # (N, n, 2) float64, customers 1..n
    demands: torch.Tensor  # (N, n) long, integer demands
    capacity: torch.Tensor  # (N,) long, vehicle capacity

    @property
    def num_customers(self) -> int:
        """Number of customers n per instance."""
        return self.locs.shape[1]


@dataclasses.dataclass(frozen=True)
class CVRPState(Batch):
    """Tail sub-problem: from `origin`, serve every `remaining` customer and return to the depot.

    Node 0 is the depot and nodes 1..m-1 are customers. Customer c (1-based) owns two actions:
    `2 (c - 1)` goes to it directly and `2 (c - 1) + 1` goes to it via the depot (refilling the
    vehicle). Demands and capacities stay integers so feasibility is exact; `norm_demands` and
    `norm_free` are the same quantities normalized by the capacity (capacity = 1), as models see
    them. All rows of one batch at one depth share the number of remaining customers, so
    `remaining` is a dense index tensor in increasing node order.
    """

    coords: torch.Tensor  # (B, m, 2) float64, node 0 = depot
    demands: torch.Tensor  # (B, m) long, depot demand 0
    capacity: torch.Tensor  # (B,) long, vehicle capacity
    free: torch.Tensor  # (B,) long, capacity left in the vehicle at the origin
    origin: torch.Tensor  # (B,) long, current node (0 only before the first customer)
    remaining: torch.Tensor  # (B, r) long, unvisited customers, ascending
    length: torch.Tensor  # (B,) float64, distance travelled so far

    @property
    def num_customers(self) -> int:
        """Number of customer nodes m - 1; the action space has 2 (m - 1) entries."""
        return self.coords.shape[1] - 1

    @property
    def norm_demands(self) -> torch.Tensor:
        """Float64 (B, m): demands divided by the vehicle capacity."""
        return self.demands.double() / self.capacity.double().unsqueeze(1)

    @property
    def norm_free(self) -> torch.Tensor:
        """Float64 (B,): remaining vehicle capacity as a fraction of the capacity."""
        return self.free.double() / self.capacity.double()
