"""Conversions between CVRP action sequences, routes and (node, flag) tours, and route costs.

Routes are lists of 1-based customer ids (the depot, 0, is implicit at both ends of each route),
the form classical solvers return. Actions are the env's: `2 (c - 1) + via` for customer c, where
`via` = 1 when c starts a new route. The (node, flag) form is the LEHD / BQ data format: a
permutation of customers and a 0/1 flag per position, 1 = reached via the depot.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch


def actions_to_routes(actions: torch.Tensor | Sequence[int]) -> list[list[int]]:
    """Routes of one solution from its actions (entries < 0 are padding and skipped)."""
    routes: list[list[int]] = []
    for a in torch.as_tensor(actions).tolist():
        if a < 0:
            continue
        customer, via = a // 2 + 1, a % 2
        if via or not routes:
            routes.append([])
        routes[-1].append(customer)
    return routes


def routes_to_actions(routes: Sequence[Sequence[int]], num_customers: int) -> torch.Tensor:
    """Long (n,) actions of one solution; every customer 1..n must appear in exactly one route.

    Empty routes are skipped. The first customer of each route is reached via the depot.
    """
    seen = np.zeros(num_customers + 1, dtype=bool)
    actions: list[int] = []
    for route in routes:
        for i, c in enumerate(route):
            c = int(c)
            if not 1 <= c <= num_customers:
                raise ValueError(f"routes: expected customer ids in 1..{num_customers}, got {c}.")
            if seen[c]:
                raise ValueError(f"routes: customer {c} appears more than once.")
            seen[c] = True
            actions.append(2 * (c - 1) + int(i == 0))
    if len(actions) != num_customers:
        missing = np.flatnonzero(~seen[1:])[:5] + 1
        raise ValueError(f"routes: expected every customer once, missing {missing.tolist()}.")
    return torch.tensor(actions, dtype=torch.long)


def tour_to_actions(nodes: torch.Tensor, flags: torch.Tensor) -> torch.Tensor:
    """Actions (..., n) from 1-based customer order `nodes` and via-depot `flags` (..., n).

    The first customer is always reached from the depot, so its flag is taken as 1 whatever the
    file says (both readings describe the same solution).
    """
    nodes, flags = torch.as_tensor(nodes).long(), torch.as_tensor(flags).long().clone()
    flags[..., 0] = 1
    return 2 * (nodes - 1) + flags


def routes_cost(depot: np.ndarray, locs: np.ndarray, routes: Sequence[Sequence[int]]) -> float:
    """Total Euclidean length of `routes`, each from the depot and back, in float64."""
    pts = np.concatenate([np.asarray(depot, np.float64)[None], np.asarray(locs, np.float64)])
    total = 0.0
    for route in routes:
        if len(route) == 0:
            continue
        path = pts[np.concatenate([[0], np.asarray(route, dtype=np.int64), [0]])]
        total += float(np.linalg.norm(np.diff(path, axis=0), axis=1).sum())
    return total
