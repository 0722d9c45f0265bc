"""Classical JSSP baselines: OR-Tools CP-SAT on the interval / no-overlap model, and the
dispatching rules of nco/problems/jssp/dispatching.py as `pdr:<rule>`."""

from __future__ import annotations

import time

import numpy as np
from ortools.sat.python import cp_model

from nco.problems.jssp.dispatching import pdr_solvers
from nco.solver import Solver, SolverResult


def solve_cpsat(
    instance: dict[str, np.ndarray], time_limit: float, seed: int, workers: int = 2
) -> SolverResult:
    """Minimize the makespan with CP-SAT; `solution` holds the start times (J, M) as lists.

    One interval per operation, precedence between consecutive operations of a job, and one
    no-overlap constraint per machine. `bound` is CP-SAT's proven lower bound. Durations must
    be integers (CP-SAT works on integers).
    """
    if "durations" not in instance or "machines" not in instance:
        raise ValueError("solve_cpsat: instance needs fields 'durations' and 'machines' (J, M).")
    p = np.asarray(instance["durations"])
    mach = np.asarray(instance["machines"])
    if p.ndim != 2 or mach.shape != p.shape:
        raise ValueError(
            f"solve_cpsat: expected durations and machines of one shape (J, M), "
            f"got {p.shape} and {mach.shape}."
        )
    if not np.array_equal(p, np.rint(p)) or (p <= 0).any():
        raise ValueError("solve_cpsat: field durations must hold positive integers.")
    if time_limit <= 0 or workers < 1:
        raise ValueError(
            f"solve_cpsat: expected time_limit > 0 and workers >= 1, got {time_limit}, {workers}."
        )
    p = p.astype(np.int64)
    jobs, num_machines = p.shape
    horizon = int(p.sum())
    model = cp_model.CpModel()
    starts = [
        [model.new_int_var(0, horizon, f"s{j}_{l}") for l in range(num_machines)]
        for j in range(jobs)
    ]
    on_machine: list[list[cp_model.IntervalVar]] = [[] for _ in range(num_machines)]
    makespan = model.new_int_var(0, horizon, "makespan")
    for j in range(jobs):
        for l in range(num_machines):
            d = int(p[j, l])
            interval = model.new_fixed_size_interval_var(starts[j][l], d, f"op{j}_{l}")
            on_machine[int(mach[j, l])].append(interval)
            if l > 0:
                model.add(starts[j][l] >= starts[j][l - 1] + int(p[j, l - 1]))
        model.add(makespan >= starts[j][-1] + int(p[j, -1]))
    for intervals in on_machine:
        model.add_no_overlap(intervals)
    model.minimize(makespan)

    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(time_limit)
    solver.parameters.num_workers = int(workers)
    solver.parameters.random_seed = int(seed)
    t0 = time.perf_counter()
    status = solver.solve(model)
    elapsed = time.perf_counter() - t0
    name = solver.status_name(status)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return SolverResult(cost=float("inf"), solution=[], time_s=elapsed, status=name)
    solution = [[int(solver.value(s)) for s in row] for row in starts]
    return SolverResult(
        cost=float(solver.objective_value),
        solution=solution,
        time_s=elapsed,
        bound=float(solver.best_objective_bound),
        optimal=status == cp_model.OPTIMAL,
        status=name,
    )


SOLVERS: dict[str, Solver] = {"cpsat": solve_cpsat, **pdr_solvers()}
