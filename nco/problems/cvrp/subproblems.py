"""Tail sub-problems cut from expert CVRP solutions, for supervised next-action training.

Following LEHD and the Gumbeldore paper (D.3.3), a sampled segment of a solution must end at the
depot: it starts at some customer (the origin, or at the depot itself) and runs to the end of a
route, so the customers after it form whole routes that do not interact with the segment.
"""

from __future__ import annotations

import torch

from nco.problems.cvrp.augment import split_routes
from nco.problems.cvrp.types import CVRPInstances, CVRPState


def sample_subproblems(
    instances: CVRPInstances,
    actions: torch.Tensor,
    num_remaining: int,
    generator: torch.Generator | None = None,
) -> tuple[CVRPState, torch.Tensor]:
    """Random tail sub-problems with `num_remaining` customers and the expert's continuation.

    Per row, the segment end is drawn uniformly among the route ends that leave room for
    `num_remaining` customers before them; the customer just before those is the origin (or the
    depot, with a full vehicle, when the segment starts the solution). Each sub-problem is a
    compact instance with nodes [depot, origin, remaining customers in expert order]: when the
    origin is the depot, node 1 is an unused copy of the depot. Returns the root state of the
    sub-problems and the expert's actions in it, Long (B, num_remaining).

    `actions` (B, T >= n) are complete feasible solutions (any padding after n is ignored).
    """
    b, n = instances.demands.shape
    if not 1 <= num_remaining <= n:
        raise ValueError(f"Expected num_remaining in 1..{n}, got {num_remaining}.")
    dev = instances.locs.device
    sp = split_routes(actions[:, :n])
    ends = torch.arange(n + 1, device=dev)
    is_end = torch.cat([torch.zeros(b, 1, dtype=torch.bool, device=dev), sp.starts[:, 1:]], 1)
    is_end = torch.cat([is_end, torch.ones(b, 1, dtype=torch.bool, device=dev)], 1)
    allowed = is_end & (ends >= num_remaining)
    score = torch.rand(b, n + 1, generator=generator, dtype=torch.float64).to(dev)
    end = torch.where(allowed, score, -1.0).argmax(1)
    before = end - num_remaining - 1  # origin position, -1 = depot
    seg = (before + 1).unsqueeze(1) + torch.arange(num_remaining, device=dev)
    seg_customers = sp.customers.gather(1, seg)
    seg_starts = sp.starts.gather(1, seg)

    has_origin = before >= 0
    at = before.clamp_min(0).unsqueeze(1)
    origin_customer = sp.customers.gather(1, at)
    served = instances.demands.gather(1, sp.customers - 1).cumsum(1)
    route_start = sp.start.gather(1, at)
    before_route = served.gather(1, (route_start - 1).clamp_min(0))
    load = served.gather(1, at) - torch.where(route_start > 0, before_route, 0)
    free = torch.where(has_origin, instances.capacity - load.squeeze(1), instances.capacity)

    depot = instances.depot.unsqueeze(1)
    origin_xy = instances.locs.gather(1, (origin_customer - 1).unsqueeze(-1).expand(-1, -1, 2))
    origin_xy = torch.where(has_origin.view(-1, 1, 1), origin_xy, depot)
    seg_xy = instances.locs.gather(1, (seg_customers - 1).unsqueeze(-1).expand(-1, -1, 2))
    origin_demand = instances.demands.gather(1, origin_customer - 1)
    origin_demand = torch.where(has_origin.unsqueeze(1), origin_demand, 0)
    state = CVRPState(
        coords=torch.cat([depot, origin_xy, seg_xy], 1),
        demands=torch.cat(
            [
                torch.zeros_like(origin_demand),
                origin_demand,
                instances.demands.gather(1, seg_customers - 1),
            ],
            1,
        ),
        capacity=instances.capacity,
        free=free,
        origin=has_origin.long(),
        remaining=torch.arange(2, num_remaining + 2, device=dev).expand(b, -1).contiguous(),
        length=torch.zeros(b, dtype=torch.float64, device=dev),
    )
    steps = 2 * torch.arange(1, num_remaining + 1, device=dev) + seg_starts.long()
    return state, steps
