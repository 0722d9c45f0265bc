"""Adaptive Gumbeldore (`search.adaptive=true`) against fixed GD k x n, side by side in one run.

    OMP_NUM_THREADS=1 python benchmarks/bench_adaptive.py --problem tsp100 --num 16

decodes the first `--num` instances of the problem's test set with the best shipped checkpoint
three times from the same seed: fixed GD (k x n), adaptive without reallocation (instances
stop, their rows are saved) and adaptive with reallocation (the freed sequences go to the
instances still sampling, within the fixed run's total). It prints the mean gap to the set's
references and the policy rows (evaluations) of each, and writes the results JSON with the
per-round anytime statistics (nco.search.anytime) and a per-round plot under
data/results/search/.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from nco import checkpoint
from nco.datasets import load_dataset
from nco.inference import configure_policy, to_instances
from nco.registry import problem_of_env
from nco.search.adaptive import gumbeldore_rounds
from nco.search.anytime import plot_rounds, write_json
from nco.search.counting import CountingPolicy

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "results" / "search"
# problem -> (test set, checkpoint, GD settings): the best checkpoints nco ships for each
SETUPS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "tsp100": ("kool:tsp100_test", "data/checkpoints/tsp50/best.pt", {"sigma": 0.3, "p_min": 1.0}),
    "cvrp100": (
        "kool:cvrp100_test",
        "data/checkpoints/cvrp50/best.pt",
        {"sigma": 0.3, "p_min": 1.0},
    ),
    "taillard": (
        "taillard:15x15",
        "data/checkpoints/jssp_small/best.pt",
        {"sigma": 0.05, "p_min": 0.8},
    ),
}
VARIANTS: dict[str, dict[str, Any]] = {
    "fixed": {"adaptive": False},
    "adaptive_stop": {"adaptive": True, "reallocate": False},
    "adaptive_realloc": {"adaptive": True, "reallocate": True},
}


def run(
    problem_key: str,
    num: int,
    beam_width: int,
    rounds: int,
    seed: int,
    chunk: int,
    stop_chance: float,
    stop_mass: float,
) -> dict[str, Any]:
    """Decode with every variant; the summary and per-variant results as a dict."""
    data, ckpt, gd = SETUPS[problem_key]
    loaded = checkpoint.load(ROOT / ckpt)
    problem = problem_of_env(loaded.env)
    dataset = load_dataset(data).head(num)
    scaled, scales = dataset.unit_square(problem.coord_fields)
    instances = to_instances(loaded.env, scaled.arrays, dataset.name)
    size = max(problem.size(scaled.instance(i)) for i in range(len(dataset)))
    configure_policy(loaded.policy, problem, size, None, None, saved_knn=loaded.model.get("knn"))
    refs = None if dataset.references is None else np.asarray(dataset.references, dtype=float)
    out: dict[str, Any] = {
        "problem": problem.name,
        "dataset": dataset.name,
        "checkpoint": ckpt,
        "num_instances": len(dataset),
        "beam_width": beam_width,
        "rounds": rounds,
        "seed": seed,
        "gd": gd,
        "stop_chance": stop_chance,
        "stop_mass": stop_mass,
        "variants": {},
    }
    for name, extra in VARIANTS.items():
        counter = CountingPolicy(loaded.policy)
        generator = torch.Generator().manual_seed(seed)
        start = time.perf_counter()
        objectives, log = [], None
        for lo in range(0, len(dataset), chunk):
            idx = torch.arange(lo, min(lo + chunk, len(dataset)))
            sols, part = gumbeldore_rounds(
                counter,
                loaded.env,
                instances.index(idx),
                beam_width,
                rounds,
                gd["sigma"],
                p_min=gd["p_min"],
                generator=generator,
                stop_chance=stop_chance,
                stop_mass=stop_mass,
                **extra,
            )
            objectives.append(sols.best().objective)
            log = part if log is None else log.extend(part)
        wall = time.perf_counter() - start
        costs = (loaded.env.cost(torch.cat(objectives)).numpy() * scales).tolist()
        gaps = None if refs is None else [(c - r) / r for c, r in zip(costs, refs, strict=True)]
        logj = log.to_json()
        out["variants"][name] = {
            "method": f"gumbeldore {beam_width}x{rounds} {name}",
            "objectives": costs,
            "references": None if refs is None else refs.tolist(),
            "gaps": gaps,
            "mean_cost": float(np.mean(costs)),
            "mean_gap": None if gaps is None else 100 * float(np.mean(gaps)),
            "policy_rows": counter.rows,
            "sequences": int(sum(sum(row) for row in logj["width"])),
            "wall_time_s": wall,
            "anytime": logj,
        }
        v = out["variants"][name]
        print(
            f"{problem_key} {name:17s} mean gap {v['mean_gap']:.3f} %  policy rows "
            f"{counter.rows}  sequences {v['sequences']}  rounds {logj['rounds']}  "
            f"{wall:.0f} s",
            flush=True,
        )
    fixed = out["variants"]["fixed"]
    for name in ("adaptive_stop", "adaptive_realloc"):
        v = out["variants"][name]
        v["rows_vs_fixed"] = v["policy_rows"] / fixed["policy_rows"]
        v["gap_minus_fixed"] = v["mean_gap"] - fixed["mean_gap"]
    return out


def per_round_gap(variant: dict[str, Any]) -> list[float]:
    """Mean gap (%) of the best solution so far after every round (natural cost = -objective,
    as in every env nco ships; the test sets here lie in the unit square, scale 1)."""
    refs = np.asarray(variant["references"], dtype=float)
    best = np.asarray(variant["anytime"]["best"], dtype=float)  # (rounds, N)
    return [100 * float(np.mean((-row - refs) / refs)) for row in best]


def reach(variant: dict[str, Any], target_gap: float) -> tuple[int | None, float | None]:
    """First round whose mean gap is <= `target_gap` and the policy rows spent until then."""
    for r, gap in enumerate(per_round_gap(variant)):
        if gap <= target_gap + 1e-12:
            return r + 1, float(variant["anytime"]["rows"][r])
    return None, None


def table(results: dict[str, dict[str, Any]]) -> str:
    """Markdown: each variant's gap and policy rows, and the rows each needs to reach the
    fixed run's final mean gap (its per-round log), relative to the fixed run's rows."""
    lines = [
        "| problem (instances) | variant | mean gap % | policy rows | rows vs fixed "
        "| sequences | rounds | rows to reach fixed's gap (share of fixed) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key, res in results.items():
        fixed = res["variants"]["fixed"]
        for name, v in res["variants"].items():
            r, rows = reach(v, fixed["mean_gap"])
            at = "not reached" if r is None else f"round {r}: {rows / fixed['policy_rows']:.0%}"
            lines.append(
                f"| {key} ({res['num_instances']}) | {name} | {v['mean_gap']:.3f} "
                f"| {v['policy_rows']} | {v['policy_rows'] / fixed['policy_rows']:.0%} "
                f"| {v['sequences']} | {v['anytime']['rounds']} | {at} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Parse flags, run, write JSON and the plot."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", choices=sorted(SETUPS))
    parser.add_argument("--table", action="store_true", help="print the table of saved runs")
    parser.add_argument("--num", type=int, default=16, help="first N test instances")
    parser.add_argument("--beam-width", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chunk", type=int, default=8, help="instances decoded at once")
    parser.add_argument("--stop-chance", type=float, default=0.05)
    parser.add_argument("--stop-mass", type=float, default=0.01)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.table:
        paths = {k: OUT / f"adaptive_{k}.json" for k in SETUPS}
        saved = {k: json.loads(p.read_text()) for k, p in paths.items() if p.exists()}
        print(table(saved))
        return 0
    if args.problem is None:
        print("--problem is required (or --table)", file=sys.stderr)
        return 2
    for flag in ("num", "beam_width", "rounds", "chunk"):
        if getattr(args, flag) < 1:
            print(f"--{flag.replace('_', '-')} must be >= 1", file=sys.stderr)
            return 2
    result = run(
        args.problem,
        args.num,
        args.beam_width,
        args.rounds,
        args.seed,
        args.chunk,
        args.stop_chance,
        args.stop_mass,
    )
    path = args.out or OUT / f"adaptive_{args.problem}.json"
    write_json(result, path)
    logs = {name: v["anytime"] for name, v in result["variants"].items()}
    plot_rounds(logs, path.with_suffix(".png"), f"{args.problem}: GD vs adaptive GD")
    print(f"written {path} and {path.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
