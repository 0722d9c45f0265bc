"""Expert data for supervised training (`mode=sl`): fresh random instances solved by a classical
solver, in the .npz layout the problems' expert readers take; resumable (`nco-data expert`).

Instances come from the problem's training generator (TSPEnv / CVRPEnv with its standard
capacity) seeded by `seed`. They are solved in chunks; each finished chunk is saved under
`<out>.parts/`, so an interrupted run continues where it stopped when started again with the
same settings. The final file holds TSP `coords` + `tours` (0-based) or CVRP `depot`, `locs`,
`demands`, `capacity` + `tour_node_idcs` / `tour_node_flags`, with `reference_costs` (the
solver's costs) and `reference_source`.
"""

from __future__ import annotations

import json
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import torch

from nco.datasets import save_npz

PROBLEMS = ("tsp", "cvrp")


def generate(problem: str, size: int, num: int, seed: int) -> dict[str, np.ndarray]:
    """`num` training-distribution instances as numpy arrays (the problem's .npz fields)."""
    gen = torch.Generator().manual_seed(seed)
    if problem == "tsp":
        from nco.problems.tsp import TSPEnv

        return {"coords": TSPEnv(size).generate(num, gen).coords.numpy()}
    from nco.problems.cvrp import CVRPEnv

    inst = CVRPEnv(num_customers=size).generate(num, gen)
    return {
        "depot": inst.depot.numpy(),
        "locs": inst.locs.numpy(),
        "demands": inst.demands.numpy().astype(np.int64),
        "capacity": inst.capacity.numpy().astype(np.int64),
    }


def solve_one(task: tuple[str, str, dict[str, np.ndarray], float, int]) -> tuple[float, list]:
    """Solve one instance in a worker process; returns (cost, solution)."""
    problem, solver, instance, time_limit, seed = task
    if problem == "tsp":
        from nco.problems.tsp.solvers import SOLVERS
    else:
        from nco.problems.cvrp.solvers import SOLVERS
    result = SOLVERS[solver](instance, time_limit, seed)
    return result.cost, result.solution


def solution_arrays(problem: str, size: int, solutions: list[list]) -> dict[str, np.ndarray]:
    """Solver solutions as the expert fields of the problem's .npz layout."""
    if problem == "tsp":
        return {"tours": np.asarray(solutions, dtype=np.int32)}
    from nco.problems.cvrp.routes import routes_to_actions

    actions = torch.stack([routes_to_actions(r, size) for r in solutions]).numpy()
    return {
        "tour_node_idcs": (actions // 2 + 1).astype(np.int32),
        "tour_node_flags": (actions % 2).astype(np.int8),
    }


def solve_chunk(
    problem: str,
    size: int,
    solver: str,
    time_limit: float,
    workers: int,
    arrays: dict[str, np.ndarray],
    lo: int,
    hi: int,
) -> dict[str, np.ndarray]:
    """Solve instances lo..hi-1 (instance i with solver seed i); returns their costs and
    expert fields."""
    tasks = [
        (problem, solver, {k: v[i] for k, v in arrays.items()}, time_limit, i)
        for i in range(lo, hi)
    ]
    if workers <= 1:
        results = [solve_one(t) for t in tasks]
    else:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            results = list(pool.map(solve_one, tasks, chunksize=16))
    costs = np.array([c for c, _ in results], dtype=np.float64)
    return {"reference_costs": costs, **solution_arrays(problem, size, [s for _, s in results])}


def make_expert_data(
    problem: str,
    size: int,
    num: int,
    solver: str,
    out: Path,
    time_limit: float = 10.0,
    seed: int = 2024,
    workers: int = 1,
    chunk: int = 2000,
) -> dict[str, np.ndarray]:
    """Write `num` instances of `problem` (`size` nodes or customers) solved by `solver` within
    `time_limit` seconds each to `out` (.npz), in resumable chunks of `chunk` under
    `<out>.parts/`; returns the written arrays. ValueError for a bad argument, or when the
    parts folder was made with other settings."""
    if problem not in PROBLEMS:
        raise ValueError(f"problem: expected one of {list(PROBLEMS)}, got {problem!r}")
    if out.suffix != ".npz":
        raise ValueError(f"out {out}: expected a file name ending in .npz")
    if num < 1 or chunk < 1:
        raise ValueError(f"expected num >= 1 and chunk >= 1, got {num} and {chunk}")
    arrays = generate(problem, size, num, seed)
    parts = out.with_name(out.name + ".parts")
    parts.mkdir(parents=True, exist_ok=True)
    # the settings the parts depend on, as strings (what the script always recorded)
    settings = {"problem": problem, "size": size, "num": num, "solver": solver}
    settings |= {"time_limit": float(time_limit), "seed": seed}
    settings = {k: str(v) for k, v in settings.items()}
    stamp = parts / "settings.json"
    if stamp.exists() and json.loads(stamp.read_text()) != settings:
        raise ValueError(f"{parts}: made with other settings ({stamp}); remove it or change out.")
    stamp.write_text(json.dumps(settings, indent=1))
    start = time.perf_counter()
    pieces = []
    for lo in range(0, num, chunk):
        hi = min(lo + chunk, num)
        path = parts / f"{lo:08d}_{hi:08d}.npz"
        if not path.exists():
            save_npz(path, solve_chunk(problem, size, solver, time_limit, workers, arrays, lo, hi))
            print(f"{hi}/{num} solved ({time.perf_counter() - start:.0f} s)", flush=True)
        with np.load(path, allow_pickle=False) as data:
            pieces.append({k: data[k] for k in data.files})
    result = {**arrays, **{k: np.concatenate([p[k] for p in pieces]) for k in pieces[0]}}
    result["reference_source"] = np.array(f"{solver} {time_limit} s")
    save_npz(out, result)
    return result
