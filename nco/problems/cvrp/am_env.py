"""CVRP in the form of Kool et al.'s Attention Model, POMO and rl4co: the depot is an action.

Node 0 is the depot and nodes 1..n the customers; an action is the next node (A = n + 1).
Visiting the depot refills the vehicle. The depot is infeasible right after the depot while a
customer is still servable, and a customer is infeasible once visited or when its demand
exceeds the capacity left. The episode ends when every customer is served (the return to the
depot is added to the length then), so episodes differ in length.
"""

from __future__ import annotations

import dataclasses

import torch

from nco.env import Batch
from nco.problems.cvrp.generator import check_instances
from nco.problems.cvrp.kool_env import KoolCVRPEnv
from nco.problems.cvrp.types import CVRPInstances


@dataclasses.dataclass(frozen=True)
class AMCVRPState(Batch):
    """A partial solution; demands and loads stay integers so feasibility is exact."""

    coords: torch.Tensor  # (B, n + 1, 2) float64, node 0 = depot
    demands: torch.Tensor  # (B, n + 1) long, depot demand 0
    capacity: torch.Tensor  # (B,) long
    used: torch.Tensor  # (B,) long, load delivered since the last depot visit
    current: torch.Tensor  # (B,) long, current node (0 = depot)
    visited: torch.Tensor  # (B, n + 1) bool, served customers (the depot stays False)
    length: torch.Tensor  # (B,) float64
    used_frac: torch.Tensor  # (B,) float32, `used` as the published models see it (see below)

    @property
    def norm_demands(self) -> torch.Tensor:
        """Float32 (B, n + 1): demands divided by the capacity, as the published models see them."""
        return self.demands.float() / self.capacity.float().unsqueeze(1)

    @property
    def free_fraction(self) -> torch.Tensor:
        """Float32 (B,): capacity left as a fraction of the capacity (the models' input)."""
        return 1.0 - self.used_frac


def am_cvrp_mask(state: AMCVRPState) -> torch.Tensor:
    """Bool (B, n + 1): feasible next nodes of `state`."""
    free = (state.capacity - state.used).unsqueeze(1)
    customers = ~state.visited & (state.demands <= free)
    customers[:, 0] = False
    depot = (state.current != 0) | (customers.sum(1) == 0)  # a count: faster than any(1)
    customers[:, 0] = depot
    return customers


def _feasible_actions(state: AMCVRPState, actions: torch.Tensor) -> torch.Tensor:
    """Bool (B,): `am_cvrp_mask(state)` at `actions` (in range), read per row; the whole mask
    only for the rows that pick the depot at the depot (feasible when no customer fits)."""
    a = actions.view(-1, 1)
    fits = state.demands.gather(1, a).squeeze(1) <= state.capacity - state.used
    customer = (actions > 0) & ~state.visited.gather(1, a).squeeze(1) & fits
    ok = customer | ((actions == 0) & (state.current != 0))
    again = ((actions == 0) & (state.current == 0)).nonzero().squeeze(1)
    if again.numel():
        ok[again] = am_cvrp_mask(state.index(again))[:, 0]
    return ok


def _all_served(visited: torch.Tensor) -> torch.Tensor:
    """Bool (B,): every customer served (a count: faster than `all(1)` on a CPU)."""
    return visited[:, 1:].sum(1) == visited.shape[1] - 1


class AMCVRPEnv(KoolCVRPEnv[AMCVRPState]):
    """CVRP with `num_customers` customers (Kool et al.'s instances) with the depot as action."""

    def reset(self, instances: CVRPInstances) -> AMCVRPState:
        check_instances(instances)
        b, n = instances.demands.shape
        dev = instances.locs.device
        zero = torch.zeros(b, dtype=torch.long, device=dev)
        return AMCVRPState(
            coords=torch.cat([instances.depot.unsqueeze(1), instances.locs], 1),
            demands=torch.cat([zero.unsqueeze(1), instances.demands.long()], 1),
            capacity=instances.capacity.long(),
            used=zero,
            current=zero,
            visited=torch.zeros(b, n + 1, dtype=torch.bool, device=dev),
            length=torch.zeros(b, dtype=torch.float64, device=dev),
            used_frac=torch.zeros(b, dtype=torch.float32, device=dev),
        )

    def step(self, state: AMCVRPState, actions: torch.Tensor) -> AMCVRPState:
        """Serve `actions`; `used_frac` adds the float32 demand fractions in visiting order, as
        Kool et al.'s state does, so a model can see (and mask) the load exactly as in training."""
        b, m = state.demands.shape
        if bool(((actions < 0) | (actions >= m)).any()):
            raise ValueError(f"AMCVRPEnv.step: an action is outside 0..{m - 1}.")
        if not bool(_feasible_actions(state, actions).all()):
            raise ValueError("AMCVRPEnv.step: an action is infeasible (visited, over capacity).")
        rows = torch.arange(b, device=actions.device)
        here, there = state.coords[rows, state.current], state.coords[rows, actions]
        length = state.length + (there - here).norm(dim=-1).double()
        at_depot = actions == 0
        demand = state.demands[rows, actions]
        used = torch.where(at_depot, 0, state.used + demand)
        frac = demand.float() / state.capacity.float()  # = state.norm_demands[rows, actions]
        used_frac = torch.where(at_depot, 0.0, state.used_frac + frac)
        visited = state.visited.clone().scatter_(1, actions.view(-1, 1), ~at_depot.view(-1, 1))
        done = _all_served(visited)
        back = (state.coords[:, 0] - there).norm(dim=-1).double()
        length = length + torch.where(done & ~at_depot, back, 0.0)
        return dataclasses.replace(
            state, used=used, current=actions, visited=visited, length=length, used_frac=used_frac
        )

    def action_mask(self, state: AMCVRPState) -> torch.Tensor:
        return am_cvrp_mask(state)

    def is_done(self, state: AMCVRPState) -> torch.Tensor:
        return _all_served(state.visited)

    def objective(self, state: AMCVRPState) -> torch.Tensor:
        return -state.length

    def max_steps(self, instances: CVRPInstances) -> int:
        return 2 * instances.num_customers

    def to_solution(self, instances: CVRPInstances, actions: list[int]) -> list[list[int]]:
        """Routes of customer ids (1-based), split at the depot visits."""
        routes: list[list[int]] = [[]]
        for a in actions:
            if a == 0:
                routes.append([])
            else:
                routes[-1].append(int(a))
        return [r for r in routes if r]

    def expert_actions(self, instances: CVRPInstances, actions: torch.Tensor) -> torch.Tensor:
        """CVRPEnv's expert actions (`2 (c - 1) + via`, no padding) as this form's: customer ids
        with the depot, 0, before each route but the first (pad -1 after shorter rows)."""
        b, n = actions.shape
        customers, via = actions // 2 + 1, actions % 2
        via[:, 0] = 0  # the first route starts at the depot without a depot action
        at = torch.arange(n, device=actions.device) + via.cumsum(1)  # new position of each
        out = actions.new_full((b, n + int(via.sum(1).max())), -1)
        out.scatter_(1, at, customers)
        rows, cols = via.nonzero(as_tuple=True)
        out[rows, at[rows, cols] - 1] = 0
        return out

    def start(self, roots: AMCVRPState, index: torch.Tensor) -> AMCVRPState:
        """Roots after the forced first customer `index + 1` (POMO's choice)."""
        return self.step(roots, index + 1)

    def started_actions(self, actions: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """Full sequences: the first customer, then the decoded `actions` (pad rows stay pad)."""
        first = torch.where(actions[:, 0] >= 0, index + 1, -1)
        return torch.cat([first.view(-1, 1), actions], dim=1)
