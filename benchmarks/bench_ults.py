"""ULTS against beam search at equal node expansions (policy rows), on shipped checkpoints.

    OMP_NUM_THREADS=1 python benchmarks/bench_ults.py --problem tsp --num 16

decodes the first `--num` test instances with beam search at several widths and with ULTS
(empirical prior from greedy rollouts of `--prior-num` held-out instances) at several
(k_max, epsilon, num_samples) settings,
counting the rows sent to the policy. For each ULTS setting it reports the mean policy rows
per instance, the mean log-likelihood of the most likely sequence found and the mean
objective (best sequence found), beside beam search interpolated linearly at the same mean
rows (between the two widths around it). Writes JSON and a plot under data/results/search/.
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
from nco.search import beam_search
from nco.search.anytime import write_json
from nco.search.counting import CountingPolicy
from nco.search.ults import empirical_categoricals, fit_prior, ults_search

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "results" / "search"
# problem -> (test set, held-out set for the prior or None: the test set's last instances)
SETUPS: dict[str, tuple[str, str | None, str]] = {
    "tsp": ("kool:tsp50_test", "kool:tsp50_val", "data/checkpoints/tsp50/best.pt"),
    "cvrp": ("kool:cvrp50_test", "kool:cvrp50_val", "data/checkpoints/cvrp50/best.pt"),
    "jssp": ("taillard:15x15", None, "data/checkpoints/jssp_small/best.pt"),
}


def _instances(
    loaded: checkpoint.Loaded, name: str, lo: int, hi: int
) -> tuple[Any, np.ndarray, int]:
    """Instances lo..hi-1 of a named set in the unit square, their scales and largest size."""
    problem = problem_of_env(loaded.env)
    dataset = load_dataset(name).head(hi - lo, lo)
    scaled, scales = dataset.unit_square(problem.coord_fields)
    size = max(problem.size(scaled.instance(i)) for i in range(len(dataset)))
    instances = to_instances(loaded.env, scaled.arrays, dataset.name)
    return instances, np.asarray(scales, dtype=float), size


def _interp(x: float, xs: list[float], ys: list[float]) -> float:
    """Linear interpolation of ys at x over increasing xs (clamped at the ends)."""
    return float(np.interp(x, xs, ys))


def run(
    key: str,
    num: int,
    widths: list[int],
    settings: list[tuple[int, float, int]],
    prior_num: int,
    seed: int,
) -> dict[str, Any]:
    """Beam search and ULTS on one problem; the JSON-ready summary."""
    test, held_out, ckpt = SETUPS[key]
    loaded = checkpoint.load(ROOT / ckpt)
    problem = problem_of_env(loaded.env)
    instances, scales, size = _instances(loaded, test, 0, num)
    configure_policy(loaded.policy, problem, size, None, None, saved_knn=loaded.model.get("knn"))
    if held_out is None:
        total = len(load_dataset(test))
        prior_inst = _instances(loaded, test, total - prior_num, total)[0]
        prior_source = f"{test} last {prior_num}"
    else:
        prior_inst = _instances(loaded, held_out, 0, prior_num)[0]
        prior_source = f"{held_out} first {prior_num}"
    start = time.perf_counter()
    cats, steps = empirical_categoricals(loaded.policy, loaded.env, prior_inst)
    prior = fit_prior(cats, steps, seed=seed)
    prior_s = time.perf_counter() - start
    env = loaded.env

    def cost(objective: torch.Tensor) -> list[float]:
        return (env.cost(objective).numpy() * scales).tolist()

    beams = []
    for w in widths:
        counter = CountingPolicy(loaded.policy)
        start = time.perf_counter()
        sols = beam_search(counter, env, instances, w)
        beams.append(
            {
                "beam_width": w,
                "rows_per_instance": counter.rows / num,
                "loglik": sols.logprob.max(1).values.tolist(),
                "mean_loglik": float(sols.logprob.max(1).values.mean()),
                "costs": cost(sols.best().objective),
                "wall_s": time.perf_counter() - start,
            }
        )
        beams[-1]["mean_cost"] = float(np.mean(beams[-1]["costs"]))
        print(
            f"{key} beam {w:3d}: rows/inst {beams[-1]['rows_per_instance']:8.1f} "
            f"loglik {beams[-1]['mean_loglik']:.4f} cost {beams[-1]['mean_cost']:.4f}",
            flush=True,
        )
    xs = [b["rows_per_instance"] for b in beams]
    runs = []
    for k, epsilon, samples in settings:
        counter = CountingPolicy(loaded.policy)
        start = time.perf_counter()
        sols, info = ults_search(
            counter,
            env,
            instances,
            k,
            prior,
            epsilon=epsilon,
            num_samples=samples,
            generator=torch.Generator().manual_seed(seed),
        )
        rows = counter.rows / num
        ll = sols.logprob.max(1).values
        entry = {
            "k_max": k,
            "epsilon": epsilon,
            "num_samples": samples,
            "rows_per_instance": rows,
            "nodes_per_instance": info.nodes.double().mean().item(),
            "loglik": ll.tolist(),
            "mean_loglik": float(ll.mean()),
            "costs": cost(sols.best().objective),
            "wall_s": time.perf_counter() - start,
            "beam_loglik_at_rows": _interp(rows, xs, [b["mean_loglik"] for b in beams]),
            "beam_cost_at_rows": _interp(rows, xs, [b["mean_cost"] for b in beams]),
        }
        entry["mean_cost"] = float(np.mean(entry["costs"]))
        entry["loglik_minus_beam"] = entry["mean_loglik"] - entry["beam_loglik_at_rows"]
        runs.append(entry)
        print(
            f"{key} ULTS k_max {k:3d} eps {epsilon:g} S {samples}: rows/inst {rows:8.1f} "
            f"loglik {entry['mean_loglik']:.4f} "
            f"(beam at equal rows {entry['beam_loglik_at_rows']:.4f}) "
            f"cost {entry['mean_cost']:.4f} "
            f"(beam {entry['beam_cost_at_rows']:.4f}) {entry['wall_s']:.0f} s",
            flush=True,
        )
    return {
        "problem": problem.name,
        "dataset": test,
        "num_instances": num,
        "checkpoint": ckpt,
        "prior": {
            "source": prior_source,
            "steps": steps,
            "rows": int(cats.shape[0]),
            "fit_s": prior_s,
        },
        "seed": seed,
        "beam": beams,
        "ults": runs,
    }


def plot(results: dict[str, dict[str, Any]], path: Path) -> Path:
    """Mean log-likelihood and mean cost against policy rows per instance, per problem."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(results), figsize=(4.5 * len(results), 7), squeeze=False)
    for col, (key, res) in enumerate(results.items()):
        for row, (field, label) in enumerate(
            (("mean_loglik", "mean log-likelihood"), ("mean_cost", "mean cost"))
        ):
            ax = axes[row][col]
            ax.plot(
                [b["rows_per_instance"] for b in res["beam"]],
                [b[field] for b in res["beam"]],
                "o-",
                label="beam search",
            )
            runs = sorted(res["ults"], key=lambda u: u["rows_per_instance"])
            ax.plot(
                [u["rows_per_instance"] for u in runs],
                [u[field] for u in runs],
                "s-",
                label="ULTS",
            )
            ax.set_xscale("log")
            ax.set_xlabel("policy rows per instance")
            ax.set_ylabel(label)
            ax.grid(alpha=0.3)
            if row == 0:
                ax.set_title(f"{key}: {res['dataset']} ({res['num_instances']})")
        axes[0][col].legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _saved() -> dict[str, dict[str, Any]]:
    """The saved results of every problem run so far, by problem key."""
    paths = {k: OUT / f"ults_{k}.json" for k in SETUPS}
    return {k: json.loads(p.read_text()) for k, p in paths.items() if p.exists()}


def table(results: dict[str, dict[str, Any]]) -> str:
    """Markdown table of every ULTS run beside beam search at equal mean policy rows."""
    lines = [
        "| problem | ULTS k_max, epsilon, samples | rows / instance | log-lik ULTS | log-lik beam "
        "| difference | cost ULTS | cost beam |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key, res in results.items():
        for u in sorted(res["ults"], key=lambda u: u["rows_per_instance"]):
            lines.append(
                f"| {key} | {u['k_max']}, {u['epsilon']:g}, {u['num_samples']} "
                f"| {u['rows_per_instance']:.1f} | {u['mean_loglik']:.3f} "
                f"| {u['beam_loglik_at_rows']:.3f} | {u['loglik_minus_beam']:+.3f} "
                f"| {u['mean_cost']:.4g} | {u['beam_cost_at_rows']:.4g} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Parse flags, run, write JSON (and, with every problem present, the plot)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", choices=sorted(SETUPS))
    parser.add_argument("--table", action="store_true", help="print the table of saved runs")
    parser.add_argument("--num", type=int, default=16)
    parser.add_argument("--widths", type=int, nargs="+", default=[1, 2, 3, 4, 6, 8, 12, 16])
    parser.add_argument(
        "--settings",
        nargs="+",
        default=["2,0.1,128", "4,0.1,128", "8,0.1,128", "16,0.1,128", "16,0.01,1000", "64,0,1000"],
        help="ULTS runs as k_max,epsilon,num_samples",
    )
    parser.add_argument("--prior-num", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.table:
        print(table(_saved()))
        print(f"plot: {plot(_saved(), OUT / 'ults_vs_beam.png')}")
        return 0
    if args.problem is None:
        print("--problem is required (or --table)", file=sys.stderr)
        return 2
    try:
        settings = [(int(k), float(e), int(n)) for k, e, n in (s.split(",") for s in args.settings)]
    except ValueError:
        print("--settings: expected k_max,epsilon,num_samples triples", file=sys.stderr)
        return 2
    if min(args.num, args.prior_num, *args.widths, *(k for k, _, _ in settings)) < 1:
        print("--num, --prior-num, --widths and each k_max must be >= 1", file=sys.stderr)
        return 2
    res = run(
        args.problem,
        args.num,
        sorted(args.widths),
        settings,
        args.prior_num,
        args.seed,
    )
    path = write_json(res, OUT / f"ults_{args.problem}.json")
    print(f"written {path}")
    print(f"plot: {plot(_saved(), OUT / 'ults_vs_beam.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
