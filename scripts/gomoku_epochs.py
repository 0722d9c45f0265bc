"""Gomoku (paper C.4): epochs until the greedy white policy beats the bot from every opening.

Trains both variants, sampling with replacement (experiment=gomoku_wr) and Gumbeldore
(experiment=gomoku_gumbeldore), for each seed as separate `nco.train` runs (`--jobs` at a
time, one torch thread each), reads `val/wins` per epoch from each run's metrics.csv and writes
a JSON summary and a plot of wins and draws vs epoch (mean over seeds, a finished run counting
as all wins). A run that never wins everywhere counts as censored at its last epoch. `--reuse`
re-reads runs that already have a metrics.csv (e.g. after an interrupted sweep) instead of
training them again.

    python scripts/gomoku_epochs.py --seeds 0 1 2                      # the paper's setting
    python scripts/gomoku_epochs.py --seeds 0 1 --board 7 --samples 64 --max-epochs 30 \\
        --out data/results/gomoku_7x7                                   # a reduced setting

`--samples S` sets num_samples = S (WR) and beam_width x rounds = S / rounds (Gumbeldore);
further Hydra overrides for both variants follow `--`.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VARIANTS = {"wr": "gomoku_wr", "gumbeldore": "gomoku_gumbeldore"}
FRACTIONS = (0.5, 0.75, 0.9)  # milestones of greedy wins (of all openings) also reported


def overrides(variant: str, args: argparse.Namespace) -> list[str]:
    """Hydra overrides of one variant for the requested board, samples and epoch cap."""
    cells = args.board * args.board
    out = [
        f"experiment={VARIANTS[variant]}",
        f"problem.board_size={args.board}",
        f"trainer.max_epochs={args.max_epochs}",
        f"distributed.chunk_size={cells}",
        "training.progress=false",
        "trainer.enable_progress_bar=false",
        "trainer.enable_model_summary=false",
    ]
    if variant == "wr":
        out.append(f"search.num_samples={args.samples}")
    else:
        if args.samples % args.rounds:
            raise ValueError(f"--samples: expected a multiple of --rounds {args.rounds}.")
        out += [f"search.rounds={args.rounds}", f"search.beam_width={args.samples // args.rounds}"]
    return out + args.extra


def train(variant: str, seed: int, args: argparse.Namespace) -> dict:
    """One training run; returns its per-epoch wins and the epochs needed (None: not reached)."""
    run_dir = args.out / "runs" / f"{variant}_seed{seed}"
    metrics = run_dir / "logs" / "metrics.csv"
    wall = None
    if not (args.reuse and metrics.exists()):
        cmd = [sys.executable, "-m", "nco.train", *overrides(variant, args)]
        cmd += [f"seed={seed}", f"hydra.run.dir={run_dir}"]
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        start = time.perf_counter()
        with open(args.out / f"{variant}_seed{seed}.log", "w") as log:
            subprocess.run(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, check=True)
        wall = time.perf_counter() - start
    m = read_metrics(metrics)
    wins = m["val/wins"]
    cells = args.board * args.board
    solved = first_epoch(wins, cells)
    print(f"{variant} seed {seed}: epochs {solved}, wins {wins[-1]:.0f}/{cells}, wall {wall} s")
    return {
        "variant": variant,
        "seed": seed,
        "epochs_to_all_wins": solved,
        "epochs_to_wins_fraction": {
            str(f): first_epoch(wins, math.ceil(f * cells)) for f in FRACTIONS
        },
        "best_wins": max(wins),
        "wins_per_epoch": wins,
        "draws_per_epoch": m["val/draws"],
        "sample_objective_per_epoch": m["sample/objective"],
        "mean_sampling_s": mean(m["time/sampling_s"]),
        "mean_training_s": mean(m["time/training_s"]),
        "wall_s": wall,
    }


def first_epoch(wins: list[float], target: int) -> int | None:
    """The first epoch (1-based) with at least `target` greedy wins, None if never."""
    return next((e + 1 for e, w in enumerate(wins) if w >= target), None)


def mean(values: list[float]) -> float | None:
    """Arithmetic mean, None for no values."""
    return sum(values) / len(values) if values else None


METRICS = ("val/wins", "val/draws", "sample/objective", "time/sampling_s", "time/training_s")


def read_metrics(path: Path) -> dict[str, list[float]]:
    """Per-epoch values of METRICS from a Lightning CSV log, each in epoch order.

    sample/objective is the mean over openings of the best sampled game (+1 win, 0 draw, -1
    loss), i.e. whether sampling found anything better than a loss to learn from.
    """
    per_epoch: dict[str, dict[int, float]] = {key: {} for key in METRICS}
    with open(path) as f:
        for row in csv.DictReader(f):
            for key in METRICS:
                if row.get(key):
                    per_epoch[key][int(row["epoch"])] = float(row[key])
    return {key: [v[e] for e in sorted(v)] for key, v in per_epoch.items()}


def summarize(runs: list[dict], args: argparse.Namespace) -> dict:
    """Mean epochs to all wins and to each FRACTIONS milestone per variant (over the runs that
    got there) and the mean wins curve, where a run that stopped after winning everywhere keeps
    counting all wins."""
    cells = args.board * args.board
    out = {}
    for variant in VARIANTS:
        mine = [r for r in runs if r["variant"] == variant]
        if not mine:
            continue
        solved = [r["epochs_to_all_wins"] for r in mine if r["epochs_to_all_wins"] is not None]
        curves, draws = [], []
        for r in mine:
            w, d = list(r["wins_per_epoch"]), list(r["draws_per_epoch"])
            finished = r["epochs_to_all_wins"] is not None
            curves.append(w + [cells if finished else w[-1]] * (args.max_epochs - len(w)))
            draws.append(d + [0 if finished else d[-1]] * (args.max_epochs - len(d)))
        milestones = {}
        for f in FRACTIONS:
            reached = [r["epochs_to_wins_fraction"][str(f)] for r in mine]
            hit = [e for e in reached if e is not None]
            milestones[str(f)] = {
                "epochs": reached,
                "mean_epochs_reached_runs": sum(hit) / len(hit) if hit else None,
            }
        out[variant] = {
            "seeds": [r["seed"] for r in mine],
            "epochs_to_all_wins": [r["epochs_to_all_wins"] for r in mine],
            "epochs_to_wins_fraction": milestones,
            "solved_runs": len(solved),
            "mean_epochs_solved_runs": sum(solved) / len(solved) if solved else None,
            "best_wins": max(r["best_wins"] for r in mine),
            "mean_wins_per_epoch": [sum(c) / len(c) for c in zip(*curves, strict=True)],
            "mean_draws_per_epoch": [sum(c) / len(c) for c in zip(*draws, strict=True)],
            "mean_sampling_s_per_epoch": mean([r["mean_sampling_s"] for r in mine]),
            "mean_training_s_per_epoch": mean([r["mean_training_s"] for r in mine]),
        }
    return out


def plot(summary: dict, args: argparse.Namespace, path: Path) -> None:
    """Mean greedy wins (solid) and draws (dashed) vs epoch, one colour per variant."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    labels = {"wr": "sampling with replacement", "gumbeldore": "Gumbeldore"}
    for variant, s in summary.items():
        curve, epochs = s["mean_wins_per_epoch"], range(1, len(s["mean_wins_per_epoch"]) + 1)
        line = ax.plot(epochs, curve, label=f"{labels[variant]}, wins (seeds {s['seeds']})")
        color = line[0].get_color()
        ax.plot(epochs, s["mean_draws_per_epoch"], ls="--", color=color, label="draws")
    ax.axhline(args.board**2, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("epoch")
    ax.set_ylabel(f"greedy white results of {args.board**2} openings")
    ax.set_title(f"Gomoku {args.board}x{args.board}, {args.samples} games per opening")
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    """Parse arguments, train every (variant, seed), write JSON and PNG."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--variants", nargs="+", choices=sorted(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--board", type=int, default=9)
    parser.add_argument("--samples", type=int, default=320, help="games per opening per epoch")
    parser.add_argument("--rounds", type=int, default=10, help="Gumbeldore rounds")
    parser.add_argument("--max-epochs", type=int, default=150)
    parser.add_argument("--jobs", type=int, default=2, help="runs trained at the same time")
    parser.add_argument("--out", type=Path, default=REPO / "data" / "results" / "gomoku")
    parser.add_argument("--reuse", action="store_true", help="re-read finished runs, no training")
    parser.add_argument("extra", nargs="*", help="Hydra overrides for every run (after --)")
    args = parser.parse_args()
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = [(v, s) for s in args.seeds for v in args.variants]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        runs = list(pool.map(lambda job: train(*job, args), jobs))
    summary = summarize(runs, args)
    setting = {k: v for k, v in vars(args).items() if k not in ("out", "jobs") and not callable(v)}
    result = {"setting": setting, "summary": summary, "runs": runs}
    (args.out.parent / f"{args.out.name}.json").write_text(json.dumps(result, indent=1) + "\n")
    plot(summary, args, args.out.parent / f"{args.out.name}.png")
    for variant, s in summary.items():
        print(variant, s["epochs_to_all_wins"], "mean (solved):", s["mean_epochs_solved_runs"])


if __name__ == "__main__":
    main()
