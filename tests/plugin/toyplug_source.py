"""A toy problem package living outside nco/ and problems/: order n items to minimise the
weighted completion sum sum_k (k + 1) * w[pick_k] (the optimum takes the heaviest first).

tests/test_plugin_problem.py copies this file as `toyplug/__init__.py` into a temporary folder
on sys.path; importing it registers the package, its env, instances, policy and descriptor.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import torch
from torch import nn

from nco.dataset import Dataset
from nco.env import Batch, Env
from nco.problem import Problem
from nco.registry import add_plugin_package, register, register_problem
from nco.solver import SolverResult


@dataclasses.dataclass(frozen=True)
class ToyInstances(Batch):
    weights: torch.Tensor  # (B, n) float


@dataclasses.dataclass(frozen=True)
class ToyState(Batch):
    weights: torch.Tensor  # (B, n) float
    picked: torch.Tensor  # (B, n) bool
    cost: torch.Tensor  # (B,) float


class ToyEnv(Env):
    """Pick every item once; step k costs (k + 1) * weight."""

    name = "toy"

    def __init__(self, num_items: int = 5) -> None:
        self.num_items = num_items

    def generate(self, num: int, generator: torch.Generator | None = None) -> ToyInstances:
        return ToyInstances(torch.rand(num, self.num_items, generator=generator))

    def reset(self, instances: ToyInstances) -> ToyState:
        b, n = instances.weights.shape
        return ToyState(
            instances.weights,
            torch.zeros(b, n, dtype=torch.bool),
            torch.zeros(b, dtype=torch.float64),
        )

    def step(self, state: ToyState, actions: torch.Tensor) -> ToyState:
        rows = torch.arange(len(actions))
        k = state.picked.sum(1).to(torch.float64) + 1
        picked = state.picked.clone()
        picked[rows, actions] = True
        cost = state.cost + k * state.weights[rows, actions].to(torch.float64)
        return ToyState(state.weights, picked, cost)

    def action_mask(self, state: ToyState) -> torch.Tensor:
        return ~state.picked

    def is_done(self, state: ToyState) -> torch.Tensor:
        return state.picked.all(1)

    def objective(self, state: ToyState) -> torch.Tensor:
        return -state.cost

    def max_steps(self, instances: ToyInstances) -> int:
        return instances.weights.shape[1]


class ToyPolicy(nn.Module):
    """Logits = scale * weight: a positive scale picks the heaviest item first."""

    def __init__(self, scale: float = 1.0) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(float(scale)))

    def forward(self, state: ToyState) -> torch.Tensor:
        return self.scale * state.weights.to(torch.float32)


def read(path: Path) -> Dataset:
    """A .toy file: one instance per line of whitespace-separated weights."""
    rows = [[float(t) for t in line.split()] for line in path.read_text().splitlines() if line]
    return Dataset("toy", str(path), {"weights": np.array(rows)})


def score(instance: dict, order: list[int]) -> float:
    w = np.asarray(instance["weights"])
    if sorted(order) != list(range(len(w))):
        raise ValueError(f"toy: expected a permutation of 0..{len(w) - 1}, got {order}.")
    return float(sum((k + 1) * w[i] for k, i in enumerate(order)))


def solve_sorted(instance: dict, time_limit: float, seed: int) -> SolverResult:
    order = np.argsort(-np.asarray(instance["weights"]), kind="stable").tolist()
    return SolverResult(score(instance, order), order, 0.0, optimal=True, status="optimal")


add_plugin_package("toyplug")
register("policy", ToyPolicy, reads=("toy",))
register_problem(
    Problem(
        name="toy",
        env=ToyEnv,
        instances=ToyInstances,
        fields=("weights",),
        read=read,
        suffixes=(".toy",),
        recognise=lambda keys: "weights" in keys and "coords" not in keys,
        solvers=lambda: {"sorted": solve_sorted},
        to_solution=lambda env, instances, actions: list(actions),
        solution_field="order",
        score=score,
        size=lambda instance: len(instance["weights"]),
    )
)
