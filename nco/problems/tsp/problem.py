"""The TSP descriptor: what nco-eval, nco-solve, nco-baseline and nco.datasets know of the TSP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from nco.dataset import Dataset, GeneratedSet
from nco.problem import Instance, Problem, kool_sets
from nco.problems.tsp.env import TSPEnv
from nco.problems.tsp.types import TSPInstances

KOOL_SIZES = (20, 50, 100)
GENERALIZATION_NUM = 128
GENERALIZATION_SETS = {  # name: (size, numpy legacy seed, ../shared/data/reference/ file)
    "bq:tsp200": (200, 777, "tsp200_bq_128.npz"),
    "bq:tsp500": (500, 777, "tsp500_bq_128.npz"),
    "bq:tsp1000": (1000, 777, "tsp1000_bq_128.npz"),
}


def kool_tsp(num: int, size: int, seed: int) -> dict[str, np.ndarray]:
    """Kool et al.'s TSP generator: `np.random.seed(seed); uniform(size=(num, size, 2))`."""
    rng = np.random.RandomState(seed)
    return {"coords": rng.uniform(size=(num, size, 2))}


def generated_sets() -> dict[str, GeneratedSet]:
    """Kool's test / validation sets and BQ's generalization sets (Concorde references)."""
    return kool_sets(
        "tsp",
        kool_tsp,
        KOOL_SIZES,
        GENERALIZATION_SETS,
        GENERALIZATION_NUM,
        "Concorde optimal tours (BQ-NCO)",
    )


def read(path: Path) -> Dataset:
    from nco.problems.tsp.io import read_dataset

    return read_dataset(path)


def to_solution(env: Any, instances: Any, actions: list[int]) -> list[int]:
    """The tour, as the checkpoint's env form reads its actions (BQ: node 0 first; AM: as
    decoded)."""
    from nco.problems.tsp.kool_env import KoolTSPEnv

    if not isinstance(env, KoolTSPEnv):
        raise TypeError(f"tsp: expected a TSP env (KoolTSPEnv), got {type(env).__name__}.")
    return env.to_solution(instances, actions)


def score(instance: Instance, tour: list[int]) -> float:
    """Euclidean tour length; ValueError unless `tour` is a permutation of the nodes."""
    from nco.problems.tsp.solvers import tour_length

    return tour_length(np.asarray(instance["coords"], np.float64), tour)


def metric_cost(instance: Instance, tour: list[int], metric: str) -> float:
    from nco.problems.tsp.io import metric_cost as cost

    return cost(instance, tour, metric)


def plot(instance: Instance, tour: list[int], path: Path, title: str) -> None:
    from nco.problems.tsp.plot import plot_tour

    plot_tour(instance["coords"], tour, path, title)


def solvers() -> dict:
    from nco.problems.tsp.solvers import SOLVERS

    return SOLVERS


def recognise(keys: set[str]) -> bool:
    """Project layout (`coords`) or rl4co's TSP files (`locs` without CVRP fields)."""
    return "coords" in keys or ("locs" in keys and not keys & {"depot", "demand", "demands"})


def read_expert(path: Path) -> tuple[TSPInstances, torch.Tensor]:
    """Instances and expert actions for supervised training (`nco-train mode=sl`)."""
    from nco.problems.tsp.expert import load_expert

    return load_expert(path)


PROBLEM = Problem(
    name="tsp",
    env=TSPEnv,
    instances=TSPInstances,
    fields=("coords",),
    coord_fields=("coords",),
    read=read,
    read_expert=read_expert,
    suffixes=(".npz", ".pkl", ".tsp"),
    recognise=recognise,
    library_suffixes=(".tsp",),
    generated_sets=generated_sets,
    make_arrays=kool_tsp,
    solvers=solvers,
    to_solution=to_solution,
    solution_field="tour",
    score=score,
    metric_cost=metric_cost,
    plot=plot,
    size=lambda instance: len(instance["coords"]),
    auto_knn=lambda size: None,  # the paper restricts only CVRP's attention (BQ TSP: full)
    default_model="default_tsp",
)
