"""`nco-baseline`'s work: a classical solver over a dataset; table and results JSON.

    nco-baseline problem=tsp solver=lkh data=kool:tsp100_test limit=100 time_limit=10 \\
        workers=2 out=r.json
    python -m nco.cli.baseline problem=jssp solver=cpsat data=taillard:ta01 time_limit=60
    nco-baseline problem=jssp solver=pdr rule=mwkr data=taillard:15x15 workers=1

Solvers come from `nco/problems/<problem>/solvers.py` (`SOLVERS`); instances are solved in parallel
processes, each with the per-instance time limit.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

import numpy as np
from omegaconf import DictConfig

from nco.datasets import Dataset, load_datasets
from nco.progress import progress_bar
from nco.registry import get_problem, problem_name
from nco.results import Results, format_table, write_results
from nco.scoring import rescore
from nco.solver import Solver, SolverResult


def get_solver(problem: str, name: str) -> Solver:
    """The registered problem's solver `name`, with a clear error for unknown names."""
    return get_problem(problem).solver(name)


def solve_one(task: tuple[str, str, int, dict[str, np.ndarray], float, int]) -> SolverResult:
    """Solve one instance: `(problem, solver, index, instance, time_limit, seed)`.

    Module-level so worker processes can unpickle it.
    """
    problem, name, _, instance, time_limit, seed = task
    return get_solver(problem, name)(instance, time_limit, seed)


def solve_all(
    dataset: Dataset,
    solver: str,
    time_limit: float,
    seed: int,
    workers: int = 1,
    indices: Iterable[int] | None = None,
    max_wall_s: float | None = None,
    on_result: Callable[[int, SolverResult], None] | None = None,
    progress: bool = True,
) -> dict[int, SolverResult]:
    """Solve the instances `indices` (default: all) with at most `workers` processes.

    `workers` <= 1 solves in this process. No new instance starts after `max_wall_s` seconds;
    `on_result(index, result)` is called as each instance finishes (in completion order).
    """
    get_solver(dataset.problem, solver)
    todo = list(range(len(dataset)) if indices is None else indices)
    start = time.perf_counter()
    results: dict[int, SolverResult] = {}
    bar = progress_bar(total=len(todo), enabled=progress, desc=f"{solver} on {dataset.name}")

    def tasks() -> Iterable[tuple]:
        for i in todo:
            if max_wall_s is not None and time.perf_counter() - start > max_wall_s:
                return
            yield (dataset.problem, solver, i, dataset.instance(i), time_limit, seed)

    def record(i: int, res: SolverResult) -> None:
        results[i] = res
        if on_result is not None:
            on_result(i, res)
        bar.update()

    try:
        if workers <= 1:
            for task in tasks():
                record(task[2], solve_one(task))
        else:
            _solve_parallel(tasks(), workers, record)
    finally:
        bar.close()
    return results


def _solve_parallel(
    tasks: Iterable[tuple], workers: int, record: Callable[[int, SolverResult], None]
) -> None:
    """Keep `workers` tasks in flight in spawned processes; new tasks are drawn lazily."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        pending: dict[Future, int] = {}
        source = iter(tasks)
        for task in source:
            pending[pool.submit(solve_one, task)] = task[2]
            if len(pending) >= workers:
                break
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                index = pending.pop(future)
                try:
                    result = future.result()
                except Exception as err:
                    raise RuntimeError(f"instance {index}: {err}") from err
                record(index, result)
                following = next(source, None)
                if following is not None:
                    pending[pool.submit(solve_one, following)] = following[2]


def run(cfg: DictConfig) -> Results:
    """Solve `cfg.data` with `cfg.solver`, print the table and write `cfg.out` if set."""
    if not cfg.get("data"):
        raise ValueError("nco-baseline: data= is required (a file or e.g. kool:tsp100_test).")
    if cfg.time_limit <= 0:
        raise ValueError(f"nco-baseline: expected time_limit > 0, got {cfg.time_limit}.")
    problem = problem_name(cfg.problem)
    # A solver with variants is registered once per variant: solver=pdr rule=mwkr is `pdr:mwkr`.
    solver = f"{cfg.solver}:{str(cfg.rule).lower()}" if cfg.get("rule") else str(cfg.solver)
    get_solver(problem, solver)
    # Solvers work on the unit square (LKH and OR-Tools scale to integers, LKH overflows on
    # raw library coordinates); library files also carry their own distances (`weights`), which
    # the solvers optimise. Costs are rescored on the original instances (nco.scoring): a
    # library file's metric first, the Euclidean length in info.euclidean_costs. A folder of
    # library files is one dataset per file.
    originals = [d.head(cfg.get("limit")) for d in load_datasets(cfg.data, problem)]
    start = time.perf_counter()
    ordered, natural = [], []
    for original in originals:
        dataset, scales = original.unit_square(get_problem(original.problem).coord_fields)
        solved = solve_all(dataset, solver, float(cfg.time_limit), int(cfg.seed), int(cfg.workers))
        solved = {i: solved[i] for i in range(len(dataset))}
        natural += rescore(original, scales, solved)
        ordered += list(solved.values())
    wall = time.perf_counter() - start
    dataset = originals[0]
    failed = [i for i, r in enumerate(ordered) if not np.isfinite(r.cost)]
    if failed:
        raise RuntimeError(
            f"nco-baseline: {solver} found no solution for instances {failed[:10]} "
            f"(status {ordered[failed[0]].status}); raise time_limit."
        )
    references = None
    if any(d.references is not None for d in originals):
        references = [
            r
            for d in originals
            for r in (list(d.references) if d.references is not None else [None] * len(d))
        ]
    names = None
    if all(d.names is not None for d in originals):
        names = [n for d in originals for n in d.names or ()]
    metrics = [d.metric or "EUCLIDEAN" for d in originals for _ in range(len(d))]
    proven = [r.optimal for r in ordered if r.optimal is not None]
    bounds = [r.bound for r in ordered]
    results = Results(
        problem=problem,
        dataset=dataset.name if len(originals) == 1 else str(cfg.data),
        method=solver,
        objectives=[r.cost for r in ordered],
        references=references,
        wall_time_s=wall,
        solutions=[r.solution for r in ordered] if cfg.save_solutions else None,
        times_s=[r.time_s for r in ordered],
        names=names,
        info={
            "time_limit": float(cfg.time_limit),
            "seed": int(cfg.seed),
            "workers": int(cfg.workers),
            "reference_source": dataset.reference_source,
            "proven_optimal": sum(proven) if proven else None,
            "bounds": bounds if any(b is not None for b in bounds) else None,
            **(
                {"metrics": metrics, "euclidean_costs": natural}
                if any(d.metric for d in originals)
                else {}
            ),
        },
    )
    print(format_table(results))
    if proven:
        print(f"proven optimal: {sum(proven)} of {len(ordered)}")
    if cfg.get("out"):
        path = write_results(results, cfg.out)
        print(f"results written to {path}")
    return results
