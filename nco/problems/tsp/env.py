"""TSP as a constructive process in the BQ tail sub-problem form (paper D.2.2)."""

from __future__ import annotations

import torch

from nco.problems.tsp.augment import random_augment
from nco.problems.tsp.kool_env import KoolTSPEnv
from nco.problems.tsp.types import TSPInstances, TSPState


def tour_length(coords: torch.Tensor, tour: torch.Tensor) -> torch.Tensor:
    """Closed tour length per row; `coords` (B, n, 2), `tour` Long[B, n] a permutation."""
    pts = coords.gather(1, tour.unsqueeze(-1).expand(-1, -1, 2))
    return (pts - pts.roll(-1, dims=1)).norm(dim=-1).sum(-1)


class TSPEnv(KoolTSPEnv[TSPState]):
    """Euclidean TSP on `num_nodes` uniform points; the tour starts and ends at node 0.

    Actions are node indices (A = n). Each step moves the origin to the chosen node; after
    n - 1 steps the tour closes back to the destination. Objective: minus tour length.
    """

    min_nodes = 3

    def reset(self, instances: TSPInstances) -> TSPState:
        coords = instances.coords
        b, n, _ = coords.shape
        if n < 3:
            raise ValueError(f"TSP instances need at least 3 nodes, got {n}.")
        dev = coords.device
        zero = torch.zeros(b, dtype=torch.long, device=dev)
        remaining = torch.arange(1, n, device=dev).expand(b, -1).contiguous()
        length = torch.zeros(b, dtype=torch.float64, device=dev)
        return TSPState(coords=coords, origin=zero, dest=zero, remaining=remaining, length=length)

    def step(self, state: TSPState, actions: torch.Tensor) -> TSPState:
        b, r = state.remaining.shape
        keep = state.remaining != actions.view(-1, 1)
        if not bool((keep.sum(1) == r - 1).all()):
            raise ValueError("TSPEnv.step: an action is not a remaining node.")
        remaining = state.remaining[keep].view(b, r - 1)
        rows = torch.arange(b, device=state.coords.device)
        here = state.coords[rows, state.origin]
        there = state.coords[rows, actions]
        length = state.length + (there - here).norm(dim=-1).to(torch.float64)
        if r == 1:
            home = state.coords[rows, state.dest]
            length = length + (home - there).norm(dim=-1).to(torch.float64)
        return TSPState(
            coords=state.coords, origin=actions, dest=state.dest, remaining=remaining, length=length
        )

    def action_mask(self, state: TSPState) -> torch.Tensor:
        b, n, _ = state.coords.shape
        mask = torch.zeros(b, n, dtype=torch.bool, device=state.coords.device)
        return mask.scatter(1, state.remaining, True)

    def is_done(self, state: TSPState) -> torch.Tensor:
        done = state.remaining.shape[1] == 0
        return torch.full((state.batch_size,), done, dtype=torch.bool, device=state.coords.device)

    def objective(self, state: TSPState) -> torch.Tensor:
        return -state.length

    def max_steps(self, instances: TSPInstances) -> int:
        return instances.coords.shape[1] - 1

    def to_solution(self, instances: TSPInstances, actions: list[int]) -> list[int]:
        """The tour: node 0 (the fixed start), then the decoded nodes."""
        return [0, *actions]

    def start(self, roots: TSPState, index: torch.Tensor) -> TSPState:
        """Roots whose tour starts and ends at node `index` instead of node 0 (a rotation)."""
        b, n, _ = roots.coords.shape
        nodes = torch.arange(n, device=index.device).expand(b, n)
        remaining = nodes[nodes != index.view(-1, 1)].view(b, n - 1)
        return TSPState(roots.coords, index, index, remaining, roots.length)

    def started_actions(self, actions: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """The tour `index`, `actions` rotated to start at node 0, less that 0 (pad rows stay)."""
        tour = torch.cat([index.view(-1, 1), actions], dim=1)
        n = tour.shape[1]
        at = (tour == 0).long().argmax(1, keepdim=True)
        rotated = tour.gather(1, (at + torch.arange(n, device=tour.device)) % n)[:, 1:]
        return torch.where(actions[:, :1] >= 0, rotated, actions)

    def training_batch(
        self,
        instances: TSPInstances,
        actions: torch.Tensor,
        generator: torch.Generator | None = None,
    ) -> tuple[TSPState, torch.Tensor]:
        """Random sub-tours of one random length t in 4..n+1 (paper D.2.3), augmented.

        The sub-tour's first node is the origin, its last the destination, and the target is
        the node after the origin. t = n + 1 closes the tour on its first node: origin equals
        destination with the n - 1 other nodes remaining, the root state every decode starts
        from (the authors' code draws t from 4..n+1 too; the paper's "4..N" counts it apart).
        Direction, square symmetry and rotation are randomized.
        """
        coords = instances.coords
        b, n, _ = coords.shape
        dev = coords.device
        tour = torch.cat([torch.zeros(b, 1, dtype=torch.long, device=dev), actions[:, : n - 1]], 1)
        t = int(torch.randint(min(4, n + 1), n + 2, (1,), generator=generator))
        start = torch.randint(0, n, (b, 1), generator=generator).to(dev)
        sub = tour.gather(1, (start + torch.arange(t, device=dev)) % n)
        flip = (torch.rand(b, generator=generator) < 0.5).to(dev).view(-1, 1)
        sub = torch.where(flip, sub.flip(1), sub)
        nodes = min(t, n)  # a closed tour lists its first node once
        sub_coords = coords.gather(1, sub[:, :nodes].unsqueeze(-1).expand(-1, -1, 2))
        sub_coords = random_augment(sub_coords, generator)
        state = TSPState(
            coords=sub_coords,
            origin=torch.zeros(b, dtype=torch.long, device=dev),
            dest=torch.full((b,), (t - 1) % n, dtype=torch.long, device=dev),
            remaining=torch.arange(1, min(t - 1, n), device=dev).expand(b, -1).contiguous(),
            length=torch.zeros(b, dtype=torch.float64, device=dev),
        )
        return state, torch.ones(b, dtype=torch.long, device=dev)
