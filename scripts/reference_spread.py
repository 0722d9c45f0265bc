"""How far one heuristic reference run is from the best of several: seeds x time limits.

    python scripts/reference_spread.py --data kool:cvrp100_test --solver hgs --limit 12 \\
        --seeds 1234 1 2 3 --time-limits 5 --workers 2 \\
        --out data/results/references/cvrp100_hgs_spread.json

Every (time limit, seed) pair solves the first LIMIT instances. Each run's mean gap is taken
to the best cost found for each instance by any run, so it is a lower bound on the run's true
gap to the optimum. The JSON holds every run's per-instance costs and the summary rows.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from nco.baselines import solve_all
from nco.datasets import GENERATED_DIR, load_dataset


def spread(costs: dict[str, np.ndarray]) -> dict:
    """Per run, mean cost and mean percent gap to the per-instance best of all runs."""
    best = np.min(np.stack(list(costs.values())), axis=0)
    rows = {
        name: {
            "mean_cost": float(c.mean()),
            "mean_gap": float(100 * np.mean((c - best) / best)),
            "max_gap": float(100 * np.max((c - best) / best)),
        }
        for name, c in costs.items()
    }
    return {"best_mean_cost": float(best.mean()), "runs": rows}


def main(argv: list[str] | None = None) -> dict:
    """Run every (time limit, seed) pair, print a table and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--solver", required=True)
    parser.add_argument("--limit", type=int, default=12, help="first LIMIT instances")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1234, 1, 2, 3])
    parser.add_argument("--time-limits", type=float, nargs="+", default=[5.0])
    parser.add_argument("--workers", type=int, default=1, help="parallel solver processes")
    parser.add_argument("--cache-dir", type=Path, default=GENERATED_DIR, help="generated sets")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)

    dataset = load_dataset(args.data, cache_dir=args.cache_dir).head(args.limit)
    costs: dict[str, np.ndarray] = {}
    for limit in args.time_limits:
        runs = []
        for seed in args.seeds:
            res = solve_all(dataset, args.solver, limit, seed, args.workers, progress=False)
            runs.append(np.array([res[i].cost for i in range(len(dataset))]))
            costs[f"{limit:g}s_seed{seed}"] = runs[-1]
            print(f"{limit:g} s, seed {seed}: mean {runs[-1].mean():.4f}")
        costs[f"{limit:g}s_best_of_{len(args.seeds)}"] = np.min(np.stack(runs), axis=0)
    summary = spread(costs)
    for name, row in summary["runs"].items():
        print(f"{name:24s} mean {row['mean_cost']:.4f}  gap to best {row['mean_gap']:.3f} %")
    out = {
        "dataset": dataset.name,
        "solver": args.solver,
        "instances": len(dataset),
        **summary,
        "costs": {k: v.tolist() for k, v in costs.items()},
    }
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1) + "\n")
    return out


if __name__ == "__main__":
    main()
