"""The CVRP descriptor: what nco-eval, nco-solve, nco-baseline and nco.datasets know of CVRP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from nco.dataset import Dataset, GeneratedSet
from nco.problem import Instance, Problem, kool_sets
from nco.problems.cvrp.env import CVRPEnv
from nco.problems.cvrp.generator import default_capacity
from nco.problems.cvrp.types import CVRPInstances

KOOL_SIZES = (20, 50, 100)
GENERALIZATION_NUM = 128
GENERALIZATION_SETS = {  # name: (customers, numpy legacy seed, ../shared/data/reference/ file)
    "lehd:cvrp200": (200, 12345, "cvrp200_128.npz"),
    "lehd:cvrp500": (500, 1234, "cvrp500_128.npz"),
    "lehd:cvrp1000": (1000, 1234, "cvrp1000_128.npz"),  # seed found: equals the shared file
}
KNN = 250  # BQ / Gumbeldore (D.3.3): attention restricted to the 250 nearest nodes beyond this


def kool_cvrp(num: int, size: int, seed: int, capacity: int | None = None) -> dict[str, np.ndarray]:
    """Kool et al.'s CVRP generator: depots, then locations, then demands randint(1, 10).

    The capacity defaults to the standard one for `size` (50 for 100 customers).
    """
    if capacity is None:
        capacity = default_capacity(size)
    rng = np.random.RandomState(seed)
    depot = rng.uniform(size=(num, 2))
    locs = rng.uniform(size=(num, size, 2))
    demands = rng.randint(1, 10, size=(num, size)).astype(np.int64)
    return {
        "depot": depot,
        "locs": locs,
        "demands": demands,
        "capacity": np.full(num, capacity, dtype=np.int64),
    }


def generated_sets() -> dict[str, GeneratedSet]:
    """Kool's test / validation sets and LEHD's generalization sets (LKH-3 references)."""
    return kool_sets(
        "cvrp", kool_cvrp, KOOL_SIZES, GENERALIZATION_SETS, GENERALIZATION_NUM, "LKH-3 (LEHD)"
    )


def read(path: Path) -> Dataset:
    from nco.problems.cvrp.io import read_dataset

    return read_dataset(path)


def to_solution(env: Any, instances: Any, actions: list[int]) -> list[list[int]]:
    """The routes, as the checkpoint's env form reads its actions (BQ: `2 (c - 1) + via`;
    AM: node ids with the depot as 0)."""
    from nco.problems.cvrp.kool_env import KoolCVRPEnv

    if not isinstance(env, KoolCVRPEnv):
        raise TypeError(f"cvrp: expected a CVRP env (KoolCVRPEnv), got {type(env).__name__}.")
    return env.to_solution(instances, actions)


def score(instance: Instance, routes: list[list[int]]) -> float:
    """Euclidean length of the routes; ValueError unless they are feasible."""
    from nco.problems.cvrp.routes import routes_cost
    from nco.problems.cvrp.solvers import check_routes

    check_routes(np.asarray(instance["demands"]), int(instance["capacity"]), routes)
    return routes_cost(instance["depot"], instance["locs"], routes)


def metric_cost(instance: Instance, routes: list[list[int]], metric: str) -> float:
    from nco.problems.cvrp.io import metric_cost as cost

    return cost(instance, routes, metric)


def plot(instance: Instance, routes: list[list[int]], path: Path, title: str) -> None:
    from nco.problems.cvrp.plot import plot_routes

    plot_routes(instance["depot"], instance["locs"], routes, path, title)


def solvers() -> dict:
    from nco.problems.cvrp.solvers import SOLVERS

    return SOLVERS


def recognise(keys: set[str]) -> bool:
    """Project / rl4co layout (`depot`, `locs`) or the shared reference layout (`nodes`)."""
    return {"depot", "locs"} <= keys or "nodes" in keys


def read_expert(path: Path) -> tuple[CVRPInstances, torch.Tensor]:
    """Instances and expert actions for supervised training (`nco-train mode=sl`)."""
    from nco.problems.cvrp.io import load_cvrp_expert

    return load_cvrp_expert(path)


PROBLEM = Problem(
    name="cvrp",
    env=CVRPEnv,
    instances=CVRPInstances,
    fields=("depot", "locs", "demands", "capacity"),
    coord_fields=("depot", "locs"),
    read=read,
    read_expert=read_expert,
    suffixes=(".npz", ".pkl", ".pickle", ".txt", ".vrp"),
    recognise=recognise,
    library_suffixes=(".vrp",),
    generated_sets=generated_sets,
    make_arrays=kool_cvrp,
    solvers=solvers,
    to_solution=to_solution,
    solution_field="routes",
    score=score,
    metric_cost=metric_cost,
    plot=plot,
    size=lambda instance: len(instance["locs"]),  # customers
    auto_knn=lambda customers: KNN if customers > KNN else None,
    default_model="default_cvrp",
)
