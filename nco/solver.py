"""The interface every classical baseline implements, so `nco-baseline` can run any of them.

A problem's `solvers.py` exposes `SOLVERS: dict[str, Solver]`. A solver takes one instance as a
dict of numpy arrays (the per-instance slice of the problem's `.npz` fields, e.g. TSP `coords`
(n, 2); CVRP `depot`, `locs`, `demands`, `capacity`; JSSP `durations`, `machines`), a time limit
in seconds and a seed, and returns a `SolverResult`. Plain functions of numpy data pickle cheaply,
so instances can be solved in parallel processes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np


@dataclasses.dataclass
class SolverResult:
    """One solved instance: its cost in the problem's natural unit and how it was obtained."""

    cost: float  # tour length, total distance, makespan
    solution: list[Any]  # tour (TSP), routes (CVRP), per-machine job order or starts (JSSP)
    time_s: float
    bound: float | None = None  # proven lower bound where the solver reports one
    optimal: bool | None = None  # True when proven optimal, None when the solver cannot tell
    status: str = ""


Solver = Callable[[dict[str, np.ndarray], float, int], SolverResult]
