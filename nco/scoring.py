"""Scoring solutions on the instances as the files give them, through the problem descriptor.

Every command (nco-eval, nco-solve, nco-baseline) scores a solution the same way: the problem's
checker recomputes the natural cost (Euclidean length, makespan) from the original, unscaled
instance, and a library file's own metric (`Dataset.metric`, e.g. TSPLIB EUC_2D) gives the
primary cost, with the natural one beside it.
"""

from __future__ import annotations

from typing import Any

from nco.dataset import Dataset
from nco.registry import get_problem


def score(dataset: Dataset, index: int, solution: Any) -> tuple[float, float]:
    """(cost, natural cost) of `solution` on instance `index`: cost is in the dataset's metric
    when it has one, else equal to the natural cost. ValueError when the solution is infeasible."""
    problem = get_problem(dataset.problem)
    if problem.score is None:
        raise ValueError(f"Problem {problem.name} has no solution checker (`score`).")
    instance = dataset.instance(index)
    natural = float(problem.score(instance, solution))
    if dataset.metric is None or problem.metric_cost is None:
        return natural, natural
    return float(problem.metric_cost(instance, solution, dataset.metric)), natural


def describe_metric(dataset: Dataset) -> str:
    """A short note on the cost unit, e.g. "EUC_2D (the file's metric)"."""
    if dataset.metric is None:
        return "the problem's natural cost"
    return f"{dataset.metric} (the file's own metric)"


def rescore(original: Dataset, scales: Any, solved: dict[int, Any]) -> list[float]:
    """Rescore solver results (`nco.solver.SolverResult` by index) computed on the scaled
    dataset: `cost` becomes the cost on `original` (its metric), `bound` is brought back to
    file units where the solver worked on scaled coordinates (no `weights`). Returns the
    natural costs (Euclidean length) per index, in the order of `solved`'s keys."""
    natural = []
    for i, result in solved.items():
        if result.solution is None or not result.solution:
            natural.append(result.cost)
            continue
        result.cost, length = score(original, i, result.solution)
        natural.append(length)
        if result.bound is not None and "weights" not in original.arrays:
            result.bound *= float(scales[i])
    return natural
