"""Random CVRP instances in the style of Kool et al. (2019), as used by BQ, LEHD and Gumbeldore."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from nco.problems.cvrp.types import CVRPInstances

KOOL_CAPACITY = {10: 20, 20: 30, 50: 40, 100: 50, 200: 80, 500: 100, 1000: 250}
"""Vehicle capacity per number of customers (Kool et al.; paper D.3.1 for N >= 100)."""

MAX_DEMAND = 9


def default_capacity(num_customers: int) -> int:
    """The standard capacity for `num_customers`, or ValueError for sizes without one."""
    if num_customers not in KOOL_CAPACITY:
        raise ValueError(
            f"No standard capacity for {num_customers} customers; pass capacity explicitly "
            f"(standard sizes: {sorted(KOOL_CAPACITY)})."
        )
    return KOOL_CAPACITY[num_customers]


def capacity_settings(
    num_customers: int, capacity: int | None, capacity_range: Sequence[int] | None
) -> tuple[int, tuple[int, int] | None]:
    """The checked (capacity, capacity_range) of a CVRP env: `capacity` defaults to the
    standard one for the size; `capacity_range` (lo, hi) draws one per instance (paper D.3.4)."""
    if num_customers < 1:
        raise ValueError(f"Expected num_customers >= 1, got {num_customers}.")
    if capacity is not None and capacity < MAX_DEMAND:
        raise ValueError(f"Expected capacity >= {MAX_DEMAND} (max demand), got {capacity}.")
    if capacity_range is None:
        return capacity if capacity is not None else default_capacity(num_customers), None
    if len(capacity_range) != 2 or not MAX_DEMAND <= capacity_range[0] <= capacity_range[1]:
        raise ValueError(
            f"Expected capacity_range (lo, hi) with {MAX_DEMAND} <= lo <= hi, got {capacity_range}."
        )
    fixed = capacity if capacity is not None else default_capacity(num_customers)
    return fixed, (int(capacity_range[0]), int(capacity_range[1]))


def check_instances(instances: CVRPInstances) -> None:
    """ValueError unless every instance has a customer and demands in 0..capacity."""
    if instances.demands.shape[1] < 1:
        raise ValueError("CVRP instances need at least one customer.")
    if bool((instances.demands < 0).any()) or bool(
        (instances.demands > instances.capacity.unsqueeze(1)).any()
    ):
        raise ValueError("CVRP instances need demands in 0..capacity.")


def generate(
    num: int,
    num_customers: int,
    capacity: int,
    capacity_range: tuple[int, int] | None = None,
    generator: torch.Generator | None = None,
) -> CVRPInstances:
    """`num` instances: depot and customers uniform in the unit square, demands uniform in 1..9.

    The capacity is `capacity`, or uniform in the inclusive `capacity_range` per instance
    (paper D.3.4 samples 40..100 during Gumbeldore training to help generalization).
    """
    depot = torch.rand(num, 2, generator=generator, dtype=torch.float64)
    locs = torch.rand(num, num_customers, 2, generator=generator, dtype=torch.float64)
    demands = torch.randint(1, MAX_DEMAND + 1, (num, num_customers), generator=generator)
    if capacity_range is None:
        cap = torch.full((num,), capacity, dtype=torch.long)
    else:
        lo, hi = capacity_range
        cap = torch.randint(lo, hi + 1, (num,), generator=generator)
    return CVRPInstances(depot=depot, locs=locs, demands=demands, capacity=cap)
