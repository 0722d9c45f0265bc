"""Problem descriptors: everything the core commands need to know about one problem.

Each `nco/problems/<p>/__init__.py` (or a package outside this tree, after
`nco.registry.add_plugin_package`) builds one `Problem` and calls `nco.registry.register_problem`.
`nco-eval`, `nco-solve`, `nco-baseline` and `nco.datasets` dispatch through it and name no
problem themselves. Only `name`, `env` and `instances` are required; a problem without file
readers simply has no dataset files, one without `solvers` no classical baselines.

Callables are given as functions so that heavy imports (solvers, plotting) happen on first use.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

if TYPE_CHECKING:
    from nco.dataset import Dataset, GeneratedSet
    from nco.env import Batch, Env
    from nco.solver import Solver

Instance = Mapping[str, np.ndarray]  # one instance: the per-instance slices of `fields`


def _no_sets() -> dict[str, GeneratedSet]:
    return {}


def _no_solvers() -> dict[str, Solver]:
    return {}


def _no_knn(size: int) -> int | None:
    return None


@dataclasses.dataclass(frozen=True)
class Problem:
    """One problem's descriptor.

    Attributes:
        name: the registry key and the env's `name` ("tsp").
        env: the env class (allowlisted for checkpoints).
        instances: the instance batch class (allowlisted for buffers).
        fields: the `.npz` arrays of one dataset, leading dim = instances.
        coord_fields: fields holding 2-D coordinates, mapped into the unit square for policies.
        read: a dataset file -> `Dataset` (references and names included where the file has
            them); library files set `Dataset.metric` and `weights`.
        read_expert: a file of instances with expert solutions -> (instances, actions Long[N, T])
            for supervised training (`nco-train mode=sl sl_data=...`).
        suffixes: the file suffixes `read` takes (".npz" files are matched by `recognise`).
        recognise: the `.npz` field names -> True when they are this problem's layout.
        library_suffixes: one-instance library files (TSPLIB .tsp) evaluated file by file.
        generated_sets: named sets generated bit for bit: name -> `nco.dataset.GeneratedSet`.
        dataset: any other named set (e.g. "taillard:ta01") -> Dataset, or None if not its.
        dataset_hint: examples of `dataset` names, for error messages.
        make_arrays: (count, size, seed) -> a dataset's arrays by the named sets' recipe
            (nco-data generate --custom).
        solvers: classical baselines, name -> `nco.solver.Solver`.
        to_solution: (env, instances [1], actions) -> the natural solution (tour, routes, ...).
        solution_field: the solution's key in nco-solve's JSON ("tour").
        score: (instance, solution) -> the natural cost, ValueError when infeasible.
        metric_cost: (instance, solution, metric) -> the cost in a library file's metric.
        plot: (instance, solution, path, title) -> writes a PNG.
        size: one instance -> its graph size (what `auto_knn` reads); 0 when meaningless.
        auto_knn: graph size -> the kNN restriction policies use at `knn=null` (None = none).
        default_model: the model config group option trained for it ("default_tsp").
    """

    name: str
    env: type
    instances: type
    fields: tuple[str, ...] = ()
    coord_fields: tuple[str, ...] = ()
    read: Callable[[Path], Dataset] | None = None
    read_expert: Callable[[Path], tuple[Batch, torch.Tensor]] | None = None
    suffixes: tuple[str, ...] = ()
    recognise: Callable[[set[str]], bool] | None = None
    library_suffixes: tuple[str, ...] = ()
    generated_sets: Callable[[], dict[str, GeneratedSet]] = _no_sets
    dataset: Callable[[str], Dataset | None] | None = None
    dataset_hint: str = ""
    make_arrays: Callable[[int, int, int], dict[str, np.ndarray]] | None = None
    solvers: Callable[[], dict[str, Solver]] = _no_solvers
    to_solution: Callable[[Env, Batch, list[int]], Any] | None = None
    solution_field: str = "solution"
    score: Callable[[Instance, Any], float] | None = None
    metric_cost: Callable[[Instance, Any, str], float] | None = None
    plot: Callable[[Instance, Any, Path, str], None] | None = None
    size: Callable[[Instance], int] = lambda instance: 0
    auto_knn: Callable[[int], int | None] = _no_knn
    default_model: str = ""

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"Problem: expected an identifier as name, got {self.name!r}.")
        if not isinstance(self.env, type) or not isinstance(self.instances, type):
            raise ValueError(f"Problem {self.name}: env and instances must be classes.")
        if self.read is not None and not self.fields:
            raise ValueError(f"Problem {self.name}: a file reader needs `fields`.")

    def solver(self, name: str) -> Solver:
        """The classical solver `name`; ValueError listing the valid ones."""
        solvers = self.solvers()
        if name not in solvers:
            raise ValueError(
                f"Unknown {self.name} solver {name!r}; expected one of {sorted(solvers)}."
            )
        return solvers[name]
