"""Reference costs for a validation set from a classical solver (`nco.solver.Solver`)."""

from __future__ import annotations

import torch

from nco.env import Batch
from nco.solver import Solver


def reference_costs(
    solver: Solver, instances: Batch, time_limit: float, seed: int = 0
) -> torch.Tensor:
    """Float64[N] solver costs; each instance goes to the solver as a dict of numpy fields."""
    fields = {k: v.cpu().numpy() for k, v in instances._items()}
    costs = [
        solver({k: v[i] for k, v in fields.items()}, time_limit, seed).cost
        for i in range(instances.batch_size)
    ]
    return torch.tensor(costs, dtype=torch.float64)
