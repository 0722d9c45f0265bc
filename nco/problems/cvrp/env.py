"""CVRP as a constructive process in the BQ tail sub-problem form (paper D.3)."""

from __future__ import annotations

import dataclasses

import torch

from nco.problems.cvrp.augment import reverse_routes, sort_routes
from nco.problems.cvrp.generator import check_instances
from nco.problems.cvrp.kool_env import KoolCVRPEnv
from nco.problems.cvrp.routes import actions_to_routes
from nco.problems.cvrp.subproblems import sample_subproblems
from nco.problems.cvrp.types import CVRPInstances, CVRPState
from nco.problems.tsp.augment import random_augment


def action_mask(state: CVRPState) -> torch.Tensor:
    """Bool (B, 2 (m - 1)): feasible actions of `state` (see CVRPState for the layout).

    Every remaining customer can be reached via the depot; directly only when the vehicle is
    away from the depot and its free capacity covers the customer's demand.
    """
    b, m = state.demands.shape
    demand = state.demands.gather(1, state.remaining)
    direct = (demand <= state.free.unsqueeze(1)) & (state.origin != 0).unsqueeze(1)
    pair = torch.stack([direct, torch.ones_like(direct)], dim=-1)
    mask = torch.zeros(b, m - 1, 2, dtype=torch.bool, device=state.demands.device)
    mask.scatter_(1, (state.remaining - 1).unsqueeze(-1).expand(-1, -1, 2), pair)
    return mask.view(b, 2 * (m - 1))


class CVRPEnv(KoolCVRPEnv[CVRPState]):
    """CVRP with `num_customers` customers; every route starts and ends at the depot.

    Actions (A = 2n): `2 (c - 1)` drives from the origin directly to customer c (1-based) and
    `2 (c - 1) + 1` drives via the depot, refilling the vehicle. Direct moves are masked when the
    demand exceeds the free capacity or the vehicle is at the depot. After n steps the vehicle
    returns to the depot. Objective: minus the total distance. Instances: `KoolCVRPEnv`.
    """

    def reset(self, instances: CVRPInstances) -> CVRPState:
        """Root states: the vehicle is full at the depot and every customer remains."""
        check_instances(instances)
        b, n = instances.demands.shape
        dev = instances.locs.device
        zero = torch.zeros(b, dtype=torch.long, device=dev)
        return CVRPState(
            coords=torch.cat([instances.depot.unsqueeze(1), instances.locs], 1),
            demands=torch.cat([zero.unsqueeze(1), instances.demands.long()], 1),
            capacity=instances.capacity.long(),
            free=instances.capacity.long(),
            origin=zero,
            remaining=torch.arange(1, n + 1, device=dev).expand(b, -1).contiguous(),
            length=torch.zeros(b, dtype=torch.float64, device=dev),
        )

    def step(self, state: CVRPState, actions: torch.Tensor) -> CVRPState:
        b, r = state.remaining.shape
        if bool(((actions < 0) | (actions >= 2 * state.num_customers)).any()):
            raise ValueError("CVRPEnv.step: an action is outside 0..2n-1.")
        if not bool(action_mask(state).gather(1, actions.view(-1, 1)).all()):
            raise ValueError("CVRPEnv.step: an action is infeasible (visited or over capacity).")
        customer = actions // 2 + 1
        via = actions % 2 == 1
        keep = state.remaining != customer.view(-1, 1)
        remaining = state.remaining[keep].view(b, r - 1)
        rows = torch.arange(b, device=actions.device)
        here, there = state.coords[rows, state.origin], state.coords[rows, customer]
        depot = state.coords[:, 0]
        direct = (there - here).norm(dim=-1)
        detour = (depot - here).norm(dim=-1) + (there - depot).norm(dim=-1)
        length = state.length + torch.where(via, detour, direct).to(torch.float64)
        if r == 1:
            length = length + (depot - there).norm(dim=-1).to(torch.float64)
        free = torch.where(via, state.capacity, state.free) - state.demands[rows, customer]
        return dataclasses.replace(
            state, free=free, origin=customer, remaining=remaining, length=length
        )

    def action_mask(self, state: CVRPState) -> torch.Tensor:
        return action_mask(state)

    def is_done(self, state: CVRPState) -> torch.Tensor:
        done = state.remaining.shape[1] == 0
        return torch.full((state.batch_size,), done, dtype=torch.bool, device=state.coords.device)

    def objective(self, state: CVRPState) -> torch.Tensor:
        return -state.length

    def max_steps(self, instances: CVRPInstances) -> int:
        return instances.num_customers

    def to_solution(self, instances: CVRPInstances, actions: list[int]) -> list[list[int]]:
        """Routes from actions `2 (c - 1) + via` (nco.problems.cvrp.routes)."""
        return actions_to_routes(actions)

    def start(self, roots: CVRPState, index: torch.Tensor) -> CVRPState:
        """Roots after driving from the depot to customer `index + 1` first."""
        return self.step(roots, 2 * index + 1)

    def started_actions(self, actions: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """The first move, then the decoded `actions` (pad rows stay pad)."""
        first = torch.where(actions[:, 0] >= 0, 2 * index + 1, -1)
        return torch.cat([first.view(-1, 1), actions], dim=1)

    def training_batch(
        self,
        instances: CVRPInstances,
        actions: torch.Tensor,
        generator: torch.Generator | None = None,
    ) -> tuple[CVRPState, torch.Tensor]:
        """Random tail sub-problems of the expert solutions, augmented (paper D.3.3).

        Routes are reversed at random and sorted by ascending capacity left at their end; one
        sub-problem size r in 1..n is drawn per batch; the segment ends at the depot
        (nco.problems.cvrp.subproblems); coordinates get a random square symmetry and rotation. The
        target is the expert's next action from the sub-problem's origin.
        """
        n = instances.num_customers
        expert = sort_routes(reverse_routes(actions[:, :n], generator), instances.demands)
        r = int(torch.randint(1, n + 1, (1,), generator=generator))
        state, steps = sample_subproblems(instances, expert, r, generator)
        state = dataclasses.replace(state, coords=random_augment(state.coords, generator))
        return state, steps[:, 0]
