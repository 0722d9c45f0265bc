"""The JSSP descriptor: what nco-eval, nco-solve, nco-baseline and nco.datasets know of JSSP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from nco.dataset import Dataset
from nco.problem import Instance, Problem
from nco.problems.jssp.env import JSSPEnv
from nco.problems.jssp.types import JSSPInstances


def read(path: Path) -> Dataset:
    """An .npz, Taillard or OR-Library file (text files hold no references)."""
    from nco.dataset import npz_reference_source
    from nco.problems.jssp.io import load_jssp

    instances, refs = load_jssp(path)
    durations = instances.durations.cpu().numpy()
    if np.array_equal(durations, np.rint(durations)):
        durations = durations.astype(np.int64)
    arrays = {"durations": durations, "machines": instances.machines.cpu().numpy()}
    source = None
    if refs is not None:
        source = npz_reference_source(path) or path.name
    return Dataset("jssp", str(path), arrays, refs, source)


def taillard(name: str) -> Dataset | None:
    """`taillard:ta01` ... `taillard:ta80` or `taillard:15x15`, best-known upper bounds as refs."""
    if not name.startswith("taillard:"):
        return None
    from nco.problems.jssp.taillard import taillard_group

    spec = name.split(":", 1)[1]
    instances, names, upper = taillard_group(spec)
    durations = instances.durations.cpu().numpy()
    if np.array_equal(durations, np.rint(durations)):
        durations = durations.astype(np.int64)
    arrays = {"durations": durations, "machines": instances.machines.cpu().numpy()}
    refs = upper.cpu().numpy().astype(np.float64)
    source = "best-known upper bounds, data/jssp/taillard_bounds.csv"
    return Dataset("jssp", name, arrays, refs, source, names)


def to_solution(env: Any, instances: Any, actions: list[int]) -> list:
    """Start times (J, M) of the schedule the job sequence builds."""
    start = env.schedule(instances, torch.tensor([actions], dtype=torch.long))
    return start[0].tolist()


def score(instance: Instance, start: list) -> float:
    from nco.problems.jssp.schedule import check_schedule

    return check_schedule(instance["durations"], instance["machines"], np.asarray(start))


def plot(instance: Instance, start: list, path: Path, title: str) -> None:
    from nco.problems.jssp.plot import plot_gantt

    plot_gantt(instance["durations"], instance["machines"], np.asarray(start), path, title)


def solvers() -> dict:
    from nco.problems.jssp.solvers import SOLVERS

    return SOLVERS


def read_expert(path: Path) -> tuple[JSSPInstances, torch.Tensor]:
    """Instances and expert actions for supervised training (`nco-train mode=sl`)."""
    from nco.problems.jssp.io import load_jssp_expert

    return load_jssp_expert(path)


PROBLEM = Problem(
    name="jssp",
    env=JSSPEnv,
    instances=JSSPInstances,
    fields=("durations", "machines"),
    read=read,
    read_expert=read_expert,
    suffixes=(".npz", ".txt"),
    recognise=lambda keys: "durations" in keys,
    dataset=taillard,
    dataset_hint="taillard:ta01, taillard:15x15",
    solvers=solvers,
    to_solution=to_solution,
    solution_field="start_times",
    score=score,
    plot=plot,
    default_model="default_jssp",
)
