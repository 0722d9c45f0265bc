"""Expert data for the supervised (SL) baseline: fresh random instances solved by a classical
solver, in the files `mode=sl` reads; resumable.

    python scripts/make_expert_data.py --problem tsp --size 20 --num 100000 --solver exact \\
        --out data/generated/expert/tsp20_exact.npz
    python scripts/make_expert_data.py --problem cvrp --size 20 --num 20000 --solver hgs \\
        --time-limit 0.5 --workers 2 --out data/generated/expert/cvrp20_hgs.npz

Instances come from the problem's training generator (TSPEnv / CVRPEnv with its standard
capacity) seeded by --seed (default 2024, apart from Kool's 1234 / 4321 test and validation
seeds). They are solved in chunks of --chunk; each finished chunk is saved under `<out>.parts/`,
so an interrupted run continues where it stopped when started again with the same arguments.
The final file holds TSP `coords` + `tours` (0-based) or CVRP `depot`, `locs`, `demands`,
`capacity` + `tour_node_idcs` / `tour_node_flags`, with `reference_costs` (the solver's costs).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
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
    args: argparse.Namespace, arrays: dict[str, np.ndarray], lo: int, hi: int
) -> dict[str, np.ndarray]:
    """Solve instances lo..hi-1; returns their costs and expert fields."""
    tasks = [
        (args.problem, args.solver, {k: v[i] for k, v in arrays.items()}, args.time_limit, i)
        for i in range(lo, hi)
    ]
    if args.workers <= 1:
        results = [solve_one(t) for t in tasks]
    else:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(args.workers, mp_context=context) as pool:
            results = list(pool.map(solve_one, tasks, chunksize=16))
    costs = np.array([c for c, _ in results], dtype=np.float64)
    return {
        "reference_costs": costs,
        **solution_arrays(args.problem, args.size, [s for _, s in results]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problem", choices=PROBLEMS, required=True)
    parser.add_argument("--size", type=int, required=True, help="nodes (TSP) or customers (CVRP)")
    parser.add_argument("--num", type=int, required=True, help="number of instances")
    parser.add_argument("--solver", required=True, help="tsp: exact, lkh; cvrp: hgs")
    parser.add_argument("--time-limit", type=float, default=10.0, help="seconds per instance")
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--chunk", type=int, default=2000, help="instances per saved part")
    parser.add_argument("--out", type=Path, required=True, help="the .npz to write")
    args = parser.parse_args(argv)
    if args.out.suffix != ".npz":
        parser.error(f"--out {args.out}: expected a file name ending in .npz")
    if args.num < 1 or args.chunk < 1:
        parser.error("--num and --chunk must be >= 1")
    arrays = generate(args.problem, args.size, args.num, args.seed)
    parts = args.out.with_name(args.out.name + ".parts")
    parts.mkdir(parents=True, exist_ok=True)
    settings = {k: str(v) for k, v in vars(args).items() if k not in ("out", "workers", "chunk")}
    stamp = parts / "settings.json"
    if stamp.exists() and json.loads(stamp.read_text()) != settings:
        sys.exit(f"{parts}: made with other settings ({stamp}); remove it or change --out.")
    stamp.write_text(json.dumps(settings, indent=1))
    start = time.perf_counter()
    pieces = []
    for lo in range(0, args.num, args.chunk):
        hi = min(lo + args.chunk, args.num)
        path = parts / f"{lo:08d}_{hi:08d}.npz"
        if not path.exists():
            save_npz(path, solve_chunk(args, arrays, lo, hi))
            print(f"{hi}/{args.num} solved ({time.perf_counter() - start:.0f} s)", flush=True)
        with np.load(path, allow_pickle=False) as data:
            pieces.append({k: data[k] for k in data.files})
    out = {**arrays, **{k: np.concatenate([p[k] for p in pieces]) for k in pieces[0]}}
    out["reference_source"] = np.array(f"{args.solver} {args.time_limit} s")
    save_npz(args.out, out)
    costs = out["reference_costs"]
    print(f"wrote {args.out}: {args.num} instances, mean cost {costs.mean():.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
