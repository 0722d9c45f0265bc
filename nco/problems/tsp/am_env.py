"""TSP in the form of Kool et al.'s Attention Model and POMO: the policy picks the first node.

The BQ env (nco.problems.tsp.env) starts every tour at node 0. Here the first action chooses
the start node, every later action the next node, and the tour closes back to the first node
after n actions, as in attention-learn-to-route and POMO. Actions are node indices (A = n).
"""

from __future__ import annotations

import dataclasses

import torch

from nco.env import Batch
from nco.problems.tsp.kool_env import KoolTSPEnv
from nco.problems.tsp.types import TSPInstances


@dataclasses.dataclass(frozen=True)
class AMTSPState(Batch):
    """A partial tour: `first` and `current` are -1 before the first action."""

    coords: torch.Tensor  # (B, n, 2) float64
    first: torch.Tensor  # (B,) long, start node or -1
    current: torch.Tensor  # (B,) long, last visited node or -1
    visited: torch.Tensor  # (B, n) bool
    length: torch.Tensor  # (B,) float64, length so far (closed once every node is visited)


def _all_visited(visited: torch.Tensor) -> torch.Tensor:
    """Bool (B,): every node visited (a count: faster than `all(1)` on a CPU)."""
    return visited.sum(1) == visited.shape[1]


class AMTSPEnv(KoolTSPEnv[AMTSPState]):
    """Euclidean TSP on `num_nodes` uniform points; the first action is the start node.

    Objective: minus the closed tour length. `to_solution` gives the tour as decoded.
    """

    def reset(self, instances: TSPInstances) -> AMTSPState:
        b, n, _ = instances.coords.shape
        if n < 2:
            raise ValueError(f"TSP instances need at least 2 nodes, got {n}.")
        dev = instances.coords.device
        none = torch.full((b,), -1, dtype=torch.long, device=dev)
        return AMTSPState(
            coords=instances.coords,
            first=none,
            current=none,
            visited=torch.zeros(b, n, dtype=torch.bool, device=dev),
            length=torch.zeros(b, dtype=torch.float64, device=dev),
        )

    def step(self, state: AMTSPState, actions: torch.Tensor) -> AMTSPState:
        b, n, _ = state.coords.shape
        if bool(((actions < 0) | (actions >= n)).any()):
            raise ValueError(f"AMTSPEnv.step: an action is outside 0..{n - 1}.")
        rows = torch.arange(b, device=actions.device)
        if bool(state.visited[rows, actions].any()):
            raise ValueError("AMTSPEnv.step: an action is a visited node.")
        started = state.current >= 0
        there = state.coords[rows, actions]
        here = state.coords[rows, state.current.clamp_min(0)]
        length = state.length + torch.where(started, (there - here).norm(dim=-1), 0.0).double()
        visited = state.visited.clone().scatter_(1, actions.view(-1, 1), True)
        first = torch.where(started, state.first, actions)
        closed = _all_visited(visited)
        home = state.coords[rows, first]
        length = length + torch.where(closed, (home - there).norm(dim=-1), 0.0).double()
        return AMTSPState(state.coords, first, actions, visited, length)

    def action_mask(self, state: AMTSPState) -> torch.Tensor:
        return ~state.visited

    def is_done(self, state: AMTSPState) -> torch.Tensor:
        return _all_visited(state.visited)

    def objective(self, state: AMTSPState) -> torch.Tensor:
        return -state.length

    def max_steps(self, instances: TSPInstances) -> int:
        return instances.coords.shape[1]

    def to_solution(self, instances: TSPInstances, actions: list[int]) -> list[int]:
        """The tour is the action sequence itself."""
        return list(actions)

    def expert_actions(self, instances: TSPInstances, actions: torch.Tensor) -> torch.Tensor:
        """TSPEnv's expert actions (the tour after node 0) as this form's: node 0 first."""
        return torch.cat([torch.zeros_like(actions[:, :1]), actions], dim=1)

    def start(self, roots: AMTSPState, index: torch.Tensor) -> AMTSPState:
        """Roots after the forced first action: start `index` is node `index` (POMO's choice)."""
        return self.step(roots, index)

    def started_actions(self, actions: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """Full sequences: the start node, then the decoded `actions` (rows of pad stay pad)."""
        first = torch.where(actions[:, 0] >= 0, index, -1)
        return torch.cat([first.view(-1, 1), actions], dim=1)
