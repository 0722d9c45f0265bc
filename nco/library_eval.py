"""`nco-eval data=<TSPLIB .tsp / CVRPLIB .vrp file or a folder of them>`: one row per file.

Each file is its own instance (its own size): scaled into the unit square for the policy
(`Dataset.unit_square`), decoded, and scored in the file's own metric (TSPLIB integer distances
for EUC_2D, CEIL_2D, ATT and GEO: the `objectives` of the results) with the exact Euclidean
length beside it (`info.euclidean_costs`). The reference is the cost of the known optimal or
best-known solution beside the file, in the same metric: `<name>.opt.tour` (TSPLIB) or
`<name>.sol` (CVRPLIB), when present.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from nco.datasets import load_dataset
from nco.decode import decode
from nco.results import Results

SUFFIXES = {".tsp": "tsp", ".vrp": "cvrp"}


def library_files(data: str, problem: str) -> list[Path] | None:
    """The library files `data=` names (a .tsp / .vrp file or a folder of them); None if none."""
    path = Path(data)
    if path.is_file() and path.suffix.lower() in SUFFIXES:
        files = [path]
    elif path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix.lower() in SUFFIXES)
        if not files:
            raise ValueError(f"nco-eval: folder {path} holds no .tsp or .vrp files.")
    else:
        return None
    wrong = [f.name for f in files if SUFFIXES[f.suffix.lower()] != problem]
    if wrong:
        raise ValueError(f"nco-eval: the checkpoint holds a {problem} policy; {wrong} are not.")
    return files


def reference_cost(file: Path, problem: str, instance: dict, weight_type: str) -> float | None:
    """The known solution's cost beside `file` in the file's metric, or None."""
    from nco.solve import rounded_cost

    if problem == "tsp":
        tour_file = file.with_name(file.name[: -len(file.suffix)] + ".opt.tour")
        if not tour_file.is_file():
            return None
        from problems.tsp.io import read_tsplib_tour

        tour = read_tsplib_tour(tour_file)
        if len(tour) != len(instance["coords"]):
            raise ValueError(f"{tour_file}: has {len(tour)} nodes, {file.name} has more or fewer.")
        return float(rounded_cost(problem, instance, tour.tolist(), weight_type))
    sol_file = file.with_suffix(".sol")
    if not sol_file.is_file():
        return None
    import vrplib

    sol = vrplib.read_solution(str(sol_file))
    if "cost" not in sol:
        raise ValueError(f"{sol_file}: field 'Cost' is missing.")
    return float(sol["cost"])


def evaluate_files(
    files: list[Path], loaded: Any, problem: str, search: dict, seed: int
) -> tuple[Results, float]:
    """Decode every file with the checkpoint; results in the files' own metrics."""
    from nco.evaluate import to_instances
    from nco.solve import actions_to_solution, library_header, rounded_cost, score

    names, costs, euclid, refs, types = [], [], [], [], []
    generator = torch.Generator().manual_seed(seed)
    start = time.perf_counter()
    for file in files:
        dataset = load_dataset(file, problem)
        name, weight_type = library_header(file)
        scaled, _ = dataset.unit_square()
        instances = to_instances(loaded.env, scaled.arrays, str(file))
        best = decode(loaded.policy, loaded.env, instances, {**search, "batch_size": None},
                      generator).best()  # fmt: skip
        actions = [a for a in best.actions[0].tolist() if a >= 0]
        solution = actions_to_solution(problem, loaded.env, instances, actions)
        original = dataset.instance(0)
        length = float(score(problem, original, solution))
        metric = weight_type if weight_type in ("EUC_2D", "CEIL_2D", "ATT", "GEO") else None
        names.append(name or file.stem)
        euclid.append(length)
        costs.append(float(rounded_cost(problem, original, solution, metric)) if metric else length)
        types.append(metric or "EUCLIDEAN")
        refs.append(reference_cost(file, problem, original, metric) if metric else None)
    wall = time.perf_counter() - start
    results = Results(
        problem=problem,
        dataset=str(files[0].parent if len(files) > 1 else files[0]),
        method="",
        objectives=costs,
        references=[np.nan if r is None else r for r in refs],
        wall_time_s=wall,
        names=names,
        info={"euclidean_costs": euclid, "metrics": types},
    )
    return results, wall
