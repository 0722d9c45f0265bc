"""Solution-side CVRP augmentations on complete action sequences (paper D.3.3).

Random subtour reversal and the BQ ordering of subtours by remaining capacity. Both keep the
solution's cost; the geometric augmentations are the TSP ones (nco.problems.tsp.augment).
"""

from __future__ import annotations

from typing import NamedTuple

import torch


class RouteSplit(NamedTuple):
    """Per-position route structure of complete solutions (B, n)."""

    customers: torch.Tensor  # (B, n) long, 1-based customer at each position
    starts: torch.Tensor  # (B, n) bool, True where a route starts (position 0 always)
    route: torch.Tensor  # (B, n) long, 0-based route index of each position
    start: torch.Tensor  # (B, n) long, position where the position's route starts
    size: torch.Tensor  # (B, n) long, number of customers of route k at index k (0 beyond)


def split_routes(actions: torch.Tensor) -> RouteSplit:
    """Route structure of complete solutions `actions` (B, n) (no padding)."""
    b, n = actions.shape
    customers = actions // 2 + 1
    starts = actions % 2 == 1
    starts[:, 0] = True
    pos = torch.arange(n, device=actions.device).expand(b, n)
    route = starts.long().cumsum(1) - 1
    start = torch.where(starts, pos, 0).cummax(1).values
    size = torch.zeros_like(route).scatter_add(1, route, torch.ones_like(route))
    return RouteSplit(customers, starts, route, start, size)


def reverse_routes(
    actions: torch.Tensor, generator: torch.Generator | None = None, prob: float = 0.5
) -> torch.Tensor:
    """Reverse each route of `actions` (B, n) independently with probability `prob`."""
    b, n = actions.shape
    sp = split_routes(actions)
    flip = (torch.rand(b, n, generator=generator) < prob).to(actions.device)
    pos = torch.arange(n, device=actions.device).expand(b, n)
    end = sp.start + sp.size.gather(1, sp.route)
    new_pos = torch.where(flip.gather(1, sp.route), sp.start + end - 1 - pos, pos)
    customers = torch.empty_like(sp.customers).scatter_(1, new_pos, sp.customers)
    return 2 * (customers - 1) + sp.starts.long()


def sort_routes(actions: torch.Tensor, demands: torch.Tensor) -> torch.Tensor:
    """Reorder the routes of `actions` (B, n) by ascending capacity left at their end.

    That is, by descending load; ties keep their order. `demands` (B, n) are the customers'
    demands. BQ (Drakulic et al. 2023) found that learning to schedule the fullest subtours
    first gives clearly better policies.
    """
    b, n = actions.shape
    sp = split_routes(actions)
    dev = actions.device
    load = torch.zeros_like(sp.route).scatter_add(1, sp.route, demands.gather(1, sp.customers - 1))
    idx = torch.arange(n, device=dev).expand(b, n)
    key = torch.where(idx <= sp.route[:, -1:], -load, 1)  # unused route slots go last
    order = torch.sort(key, dim=1, stable=True).indices  # rank -> route
    sorted_size = sp.size.gather(1, order)
    rank_start = sorted_size.cumsum(1) - sorted_size
    rank = torch.empty_like(order).scatter_(1, order, idx)  # route -> rank
    new_start = rank_start.gather(1, rank).gather(1, sp.route)
    new_pos = new_start + idx - sp.start
    customers = torch.empty_like(sp.customers).scatter_(1, new_pos, sp.customers)
    starts = torch.zeros_like(sp.starts).scatter_(1, new_pos, sp.starts)
    return 2 * (customers - 1) + starts.long()
