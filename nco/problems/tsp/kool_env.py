"""What both TSP env forms (BQ's and the AM's) share: Kool et al.'s instances, their
unit-square symmetries and one start per node; each form adds its own states and actions."""

from __future__ import annotations

from abc import abstractmethod

import torch

from nco.env import Env, S
from nco.problems.tsp.augment import apply_symmetry
from nco.problems.tsp.generator import generate
from nco.problems.tsp.types import TSPInstances


class KoolTSPEnv(Env[TSPInstances, S]):
    """Euclidean TSP on `num_nodes` uniform points (at least `min_nodes`)."""

    name = "tsp"
    min_nodes = 2

    def __init__(self, num_nodes: int = 100) -> None:
        if num_nodes < self.min_nodes:
            raise ValueError(f"Expected num_nodes >= {self.min_nodes}, got {num_nodes}.")
        self.num_nodes = num_nodes

    def generate(self, num: int, generator: torch.Generator | None = None) -> TSPInstances:
        """Uniform coordinates in the unit square (Kool et al.; `generator.generate`)."""
        return generate(num, self.num_nodes, generator)

    def num_augmentations(self) -> int:
        """The eight symmetries of the unit square."""
        return 8

    def augment(self, instances: TSPInstances, code: torch.Tensor) -> TSPInstances:
        """Instances under the unit-square symmetries `code` Long[B] (0..7, 0 = identity)."""
        return TSPInstances(coords=apply_symmetry(instances.coords, code))

    def num_starts(self, instances: TSPInstances) -> int:
        """Distinct start nodes of a tour (search.starts): every node."""
        return instances.coords.shape[1]

    @abstractmethod
    def to_solution(self, instances: TSPInstances, actions: list[int]) -> list[int]:
        """The tour (a permutation of the node ids) that one instance's decoded `actions` mean in
        this form; `nco-solve` and `nco-eval` score and plot it."""
