"""What both CVRP env forms (BQ's and the AM's) share: Kool et al.'s instances with their
capacity settings, the unit-square symmetries and one start per customer."""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from collections.abc import Sequence

import torch

from nco.env import Env, S
from nco.problems.cvrp.generator import capacity_settings, generate
from nco.problems.cvrp.types import CVRPInstances
from nco.problems.tsp.augment import apply_symmetry


class KoolCVRPEnv(Env[CVRPInstances, S]):
    """CVRP with `num_customers` customers.

    Instances follow Kool et al.: `capacity` defaults to the standard one for the size
    (KOOL_CAPACITY); `capacity_range` (lo, hi) instead draws it per instance (paper D.3.4: 40..100).
    """

    name = "cvrp"

    def __init__(
        self,
        num_customers: int = 100,
        capacity: int | None = None,
        capacity_range: Sequence[int] | None = None,
    ) -> None:
        self.num_customers = num_customers
        self.capacity, self.capacity_range = capacity_settings(
            num_customers, capacity, capacity_range
        )

    def generate(self, num: int, generator: torch.Generator | None = None) -> CVRPInstances:
        """Kool-style random instances (see nco.problems.cvrp.generator.generate)."""
        return generate(num, self.num_customers, self.capacity, self.capacity_range, generator)

    def num_augmentations(self) -> int:
        """The eight symmetries of the unit square."""
        return 8

    def augment(self, instances: CVRPInstances, code: torch.Tensor) -> CVRPInstances:
        """Instances under the unit-square symmetries `code` Long[B] (0..7, 0 = identity)."""
        depot = apply_symmetry(instances.depot.unsqueeze(1), code).squeeze(1)
        return dataclasses.replace(
            instances, depot=depot, locs=apply_symmetry(instances.locs, code)
        )

    def num_starts(self, instances: CVRPInstances) -> int:
        """Distinct first customers (search.starts): every customer."""
        return instances.num_customers

    @abstractmethod
    def to_solution(self, instances: CVRPInstances, actions: list[int]) -> list[list[int]]:
        """The routes (lists of 1-based customer ids) that one instance's decoded `actions` mean
        in this form; `nco-solve` and `nco-eval` score and plot them."""
