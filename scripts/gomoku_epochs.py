"""Gomoku (paper C.4): epochs until the greedy white policy beats the bot from every opening.

Trains each variant for each seed as a separate `nco-train` run in a fixed folder
`<out>/runs/<variant>_seed<seed>`, `--parallel` runs at a time (default 1; one torch thread each),
reads `val/wins` per epoch from each run's metrics.csv and writes a JSON summary `<out>.json`
and a plot `<out>.png` of greedy wins vs epoch (every run and the mean) and of the share of
runs that won everywhere by each epoch. Resumable: killing it loses at most
the unfinished epoch, and rerunning the same command continues every unfinished run from its
`checkpoints/last.ckpt` with its metrics intact (nco-train resumes in its own folder); runs
that won everywhere or reached `--max-epochs` are only read. While a run trains, the JSON and
PNG are rewritten every `--snapshot-s` seconds, so they can be committed as progress snapshots.

A run's status: "solved" (all openings won, the run stopped), "censored" (reached
`--max-epochs` without), "running" (training now) or "unfinished" (stopped early; rerun).

Per variant the summary gives the mean and spread over solved runs and the median over all
finished runs (censored ones counting as slower than any solved one); `comparisons` ranks every
pair of variants with Gehan's test for censored data (probability that a run of the first is
faster, permutation p-value), so a censored run counts instead of being dropped.

Variants: wr = sampling with replacement (experiment=gomoku_wr); gd = Gumbeldore as the paper's
text says (gomoku_gumbeldore: sigma 5, summed results); gd_mean = Gumbeldore as the authors'
code (gomoku_gumbeldore_mean: step 1, mean result per edge); gd_mean_first = gd_mean keeping
the first best game as the pseudo-expert (gomoku_gumbeldore_mean_first).

    python scripts/gomoku_epochs.py --variants gd_mean wr gd --seeds 0 1 2 --parallel 2
    python scripts/gomoku_epochs.py --report --max-epochs 100    # JSON + PNG only, no training
    python scripts/gomoku_epochs.py --seeds 0 1 --board 7 --samples 64 --max-epochs 30 \\
        --out /tmp/gomoku_7x7                                          # a reduced setting

`--samples S` sets num_samples = S (WR) and beam_width x rounds = S / rounds (Gumbeldore);
further Hydra overrides for every run follow `--`.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import math
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VARIANTS = {
    "wr": "gomoku_wr",
    "gd": "gomoku_gumbeldore",
    "gd_mean": "gomoku_gumbeldore_mean",
    "gd_mean_first": "gomoku_gumbeldore_mean_first",
}
LABELS = {
    "wr": "sampling with replacement",
    "gd": "Gumbeldore, sigma 5 x summed results",
    "gd_mean": "Gumbeldore, 1 x mean result",
    "gd_mean_first": "Gumbeldore, 1 x mean result, first best game",
}
FRACTIONS = (0.5, 0.75, 0.9)  # milestones of greedy wins (of all openings) also reported
PERMUTATIONS = 20_000  # random relabellings behind each comparison's p-value (seeded)
POLL_S = 2.0  # seconds between checks on the running runs
METRICS = ("val/wins", "val/draws", "sample/objective", "time/sampling_s", "time/training_s")


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


def run_dir(variant: str, seed: int, args: argparse.Namespace) -> Path:
    """The fixed folder of one run (rerunning continues it)."""
    return args.out / "runs" / f"{variant}_seed{seed}"


def read_metrics(path: Path) -> dict[str, list[float]]:
    """Per-epoch values of METRICS from a Lightning CSV log, each in epoch order ({} lists when
    the file does not exist yet).

    sample/objective is the mean over openings of the best sampled game (+1 win, 0 draw, -1
    loss), i.e. whether sampling found anything better than a loss to learn from.
    """
    per_epoch: dict[str, dict[int, float]] = {key: {} for key in METRICS}
    if path.is_file():
        with open(path) as f:
            for row in csv.DictReader(f):
                for key in METRICS:
                    if row.get(key):
                        per_epoch[key][int(row["epoch"])] = float(row[key])
    return {key: [v[e] for e in sorted(v)] for key, v in per_epoch.items()}


def first_epoch(wins: list[float], target: int) -> int | None:
    """The first epoch (1-based) with at least `target` greedy wins, None if never."""
    return next((e + 1 for e, w in enumerate(wins) if w >= target), None)


def mean(values: list[float]) -> float | None:
    """Arithmetic mean, None for no values."""
    return sum(values) / len(values) if values else None


def known(runs: list[dict], key: str) -> list[float]:
    """The runs' values of `key` where they have one: a snapshot can read a running run's
    metrics.csv after its validation row and before its timing row of the same epoch."""
    return [r[key] for r in runs if r[key] is not None]


def collect(variant: str, seed: int, args: argparse.Namespace, running: bool = False) -> dict:
    """One run's per-epoch results read from its metrics.csv, with its status."""
    m = read_metrics(run_dir(variant, seed, args) / "logs" / "metrics.csv")
    wins = m["val/wins"]
    cells = args.board * args.board
    solved = first_epoch(wins, cells)
    if solved is not None:
        status = "solved"
    elif len(wins) >= args.max_epochs:
        status = "censored"
    else:
        status = "running" if running else "unfinished"
    return {
        "variant": variant,
        "seed": seed,
        "status": status,
        "epochs_done": len(wins),
        "epochs_to_all_wins": solved,
        "epochs_to_wins_fraction": {
            str(f): first_epoch(wins, math.ceil(f * cells)) for f in FRACTIONS
        },
        "best_wins": max(wins) if wins else None,
        "wins_per_epoch": wins,
        "draws_per_epoch": m["val/draws"],
        "sample_objective_per_epoch": m["sample/objective"],
        "mean_sampling_s": mean(m["time/sampling_s"]),
        "mean_training_s": mean(m["time/training_s"]),
    }


def finished(run: dict) -> bool:
    """Whether a run needs no more training."""
    return run["status"] in ("solved", "censored")


def launch(variant: str, seed: int, args: argparse.Namespace) -> subprocess.Popen:
    """Start (or continue) one run in the background, one torch thread, its output appended to
    `<out>/<variant>_seed<seed>.log`."""
    folder = run_dir(variant, seed, args)
    folder.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "nco.cli.train", *overrides(variant, args)]
    cmd += [f"seed={seed}", f"hydra.run.dir={folder}"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    with open(args.out / f"{variant}_seed{seed}.log", "a") as log:
        log.write(f"\n# {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(cmd)}\n")
        log.flush()
        return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)


def report(variant: str, seed: int, args: argparse.Namespace) -> None:
    """Print one run's status line."""
    run = collect(variant, seed, args)
    print(
        f"{variant} seed {seed}: {run['status']}, epochs to all wins "
        f"{run['epochs_to_all_wins']}, best wins {run['best_wins']}",
        flush=True,
    )


def epochs_or_inf(run: dict) -> float:
    """Epochs to all wins of a finished run; a censored run's count is unknown beyond its
    epochs and sorts after every solved one (inf)."""
    solved = run["epochs_to_all_wins"]
    return math.inf if solved is None else float(solved)


def median_epochs(runs: list[dict]) -> float | None:
    """Median epochs to all wins over finished runs, censored runs counting as more than any
    solved one; None when the median falls on a censored run (or there is no finished run)."""
    keys = [epochs_or_inf(r) for r in runs if finished(r)]
    if not keys:
        return None
    value = statistics.median(keys)
    return None if math.isinf(value) else value


def faster(a: dict, b: dict) -> int:
    """+1 if run `a` provably won everywhere in fewer epochs than run `b`, -1 if provably in
    more, 0 if equal or undecided (both censored, or a run censored before the other solved):
    the pair score of Gehan's rank test for censored data."""
    ea, eb = a["epochs_to_all_wins"], b["epochs_to_all_wins"]
    if ea is not None and eb is not None:
        return (ea < eb) - (ea > eb)
    if ea is not None:
        return 1 if ea <= b["epochs_done"] else 0
    if eb is not None:
        return -1 if eb <= a["epochs_done"] else 0
    return 0


def compare(first: list[dict], second: list[dict], seed: int = 0) -> dict:
    """Is `first` faster than `second`? Gehan's score U (sum of `faster` over all pairs), the
    probability that a run of `first` is faster than one of `second` (ties count half), and the
    two-sided permutation p-value of U: over every split of the pooled runs into groups of the
    two sizes when there are at most PERMUTATIONS splits, else over PERMUTATIONS seeded ones."""
    pooled, k = first + second, len(first)
    pair = [[faster(x, y) for y in pooled] for x in pooled]

    def score(group: set[int]) -> int:
        rest = [j for j in range(len(pooled)) if j not in group]
        return sum(pair[i][j] for i in group for j in rest)

    observed = score(set(range(k)))
    exact = math.comb(len(pooled), k) <= PERMUTATIONS
    if exact:
        splits = [set(c) for c in itertools.combinations(range(len(pooled)), k)]
    else:  # the observed split counts among the sampled ones, so p is never 0
        rng = random.Random(seed)
        splits = [set(range(k))]
        splits += [set(rng.sample(range(len(pooled)), k)) for _ in range(PERMUTATIONS)]
    extreme = sum(abs(score(group)) >= abs(observed) for group in splits)
    return {
        "runs": [len(first), len(second)],
        "gehan_u": observed,
        "prob_faster": 0.5 + observed / (2 * len(first) * len(second)),
        "p_value": extreme / len(splits),
        "exact": exact,
    }


def compare_variants(runs: list[dict]) -> dict:
    """`compare` for every ordered pair of variants (in VARIANTS order) over finished runs."""
    done = {v: [r for r in runs if r["variant"] == v and finished(r)] for v in VARIANTS}
    names = [v for v in VARIANTS if done[v]]
    return {f"{a} vs {b}": compare(done[a], done[b]) for a, b in itertools.combinations(names, 2)}


def summarize(runs: list[dict], args: argparse.Namespace) -> dict:
    """Per variant: epochs to all wins and to each FRACTIONS milestone (means over the runs
    that got there) and the mean wins and draws per epoch, over the runs that reached the
    epoch, a solved run counting as all wins (no draws) after it stopped."""
    cells = args.board * args.board
    out = {}
    for variant in VARIANTS:
        mine = [r for r in runs if r["variant"] == variant and r["epochs_done"] > 0]
        if not mine:
            continue
        solved = [r["epochs_to_all_wins"] for r in mine if r["epochs_to_all_wins"] is not None]
        length = max(r["epochs_done"] for r in mine)
        curves, draws = [], []
        for e in range(length):
            w = [r["wins_per_epoch"][e] if e < r["epochs_done"] else cells for r in mine
                 if e < r["epochs_done"] or r["status"] == "solved"]  # fmt: skip
            d = [r["draws_per_epoch"][e] if e < r["epochs_done"] else 0.0 for r in mine
                 if e < r["epochs_done"] or r["status"] == "solved"]  # fmt: skip
            curves.append(sum(w) / len(w))
            draws.append(sum(d) / len(d))
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
            "status": [r["status"] for r in mine],
            "epochs_done": [r["epochs_done"] for r in mine],
            "epochs_to_all_wins": [r["epochs_to_all_wins"] for r in mine],
            "epochs_to_wins_fraction": milestones,
            "solved_runs": len(solved),
            "censored_runs": sum(r["status"] == "censored" for r in mine),
            "mean_epochs_solved_runs": sum(solved) / len(solved) if solved else None,
            "std_epochs_solved_runs": statistics.stdev(solved) if len(solved) > 1 else None,
            "median_epochs": median_epochs(mine),
            "best_wins": max(r["best_wins"] for r in mine),
            "mean_wins_per_epoch": curves,
            "mean_draws_per_epoch": draws,
            "mean_sampling_s_per_epoch": mean(known(mine, "mean_sampling_s")),
            "mean_training_s_per_epoch": mean(known(mine, "mean_training_s")),
        }
    return out


def markdown(result: dict) -> str:
    """The snapshot as Markdown: per variant the epochs to all wins of every run (seed order;
    "> E" for a run censored after E epochs, "(E)" for one still going), the mean +- standard
    deviation over solved runs, the median over finished runs and the best greedy wins; then
    every pair of variants compared (P(first faster), p-value)."""
    lines = [
        "| variant | epochs to all wins per seed | solved | mean +- sd (solved) | median "
        "| best wins |",
        "|---|---|---|---|---|---|",
    ]
    for variant, s in result["summary"].items():
        cells = []
        for seed, status, done, epochs in zip(
            s["seeds"], s["status"], s["epochs_done"], s["epochs_to_all_wins"], strict=True
        ):
            text = {"solved": str(epochs), "censored": f"> {done}"}.get(status, f"({done})")
            cells.append(f"{seed}: {text}")
        finished_runs = s["solved_runs"] + s["censored_runs"]
        spread = ""
        if s["mean_epochs_solved_runs"] is not None:
            spread = f"{s['mean_epochs_solved_runs']:.1f}"
            if s["std_epochs_solved_runs"] is not None:
                spread += f" +- {s['std_epochs_solved_runs']:.1f}"
        median = s["median_epochs"]
        median_text = "censored" if median is None and finished_runs else f"{median or ''}"
        lines.append(
            f"| {variant} | {', '.join(cells)} | {s['solved_runs']} of {finished_runs} | "
            f"{spread} | {median_text} | {s['best_wins']:g} |"
        )
    lines += ["", "| comparison | runs | P(first faster) | p-value |", "|---|---|---|---|"]
    for pair, c in result["comparisons"].items():
        exact = "exact" if c["exact"] else "sampled"
        lines.append(
            f"| {pair} | {c['runs'][0]} / {c['runs'][1]} | {c['prob_faster']:.2f} | "
            f"{c['p_value']:.3g} ({exact}) |"
        )
    return "\n".join(lines)


def plot(summary: dict, runs: list[dict], args: argparse.Namespace, path: Path) -> None:
    """Left: greedy wins vs epoch of every run (thin) and their mean (thick), one colour per
    variant. Right: the share of each variant's runs that won from every opening by epoch e."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = args.board**2
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.8))
    for variant, s in summary.items():
        mine = [r for r in runs if r["variant"] == variant]
        mean_curve = s["mean_wins_per_epoch"]
        line = left.plot(range(1, len(mean_curve) + 1), mean_curve, lw=2)
        colour = line[0].get_color()
        for r in mine:
            wins = r["wins_per_epoch"]
            left.plot(range(1, len(wins) + 1), wins, color=colour, lw=0.7, alpha=0.35)
        solved = sorted(r["epochs_to_all_wins"] for r in mine if r["epochs_to_all_wins"])
        last = max(r["epochs_done"] for r in mine)
        steps = [0, *solved, last]
        share = [0, *(i / len(mine) for i in range(1, len(solved) + 1)), len(solved) / len(mine)]
        label = f"{LABELS[variant]} ({len(mine)} runs)"
        right.step(steps, share, where="post", color=colour, label=label)
    left.axhline(cells, color="grey", lw=0.8, ls="--")
    left.set_xlabel("epoch")
    left.set_ylabel(f"greedy white wins of {cells} openings")
    left.set_title("every run (thin) and the mean (thick)")
    right.set_xlabel("epoch")
    right.set_ylabel("share of runs with all openings won")
    right.set_ylim(0, 1.02)
    fig.suptitle(f"Gomoku {args.board}x{args.board} vs bot v1, {args.samples} games per opening")
    fig.legend(loc="lower center", ncol=2, fontsize="small")  # below both panels
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_snapshot(args: argparse.Namespace, running: set[tuple[str, int]] | None = None) -> dict:
    """Read every run under `<out>/runs` so far, whichever command started it (`running`: those
    training now), and write `<out>.json` and `<out>.png`."""
    names = (p.name.rpartition("_seed") for p in (args.out / "runs").glob("*_seed*"))
    found = [(v, int(s)) for v, _, s in names if v in VARIANTS and s.isdigit()]
    found.sort(key=lambda key: (key[1], list(VARIANTS).index(key[0])))
    runs = [
        collect(v, s, args, running=(v, s) in (running or set()))
        for v, s in found
        if (run_dir(v, s, args) / "logs" / "metrics.csv").is_file()
    ]
    summary = summarize(runs, args)
    keep = ("board", "samples", "rounds", "max_epochs", "extra")
    variants = sorted({r["variant"] for r in runs}, key=list(VARIANTS).index)
    result = {
        "setting": {k: getattr(args, k) for k in keep},
        "seeds": sorted({r["seed"] for r in runs}),
        "experiments": {v: VARIANTS[v] for v in variants},
        "written": time.strftime("%Y-%m-%d %H:%M:%S"),
        "summary": summary,
        "comparisons": compare_variants(runs),
        "runs": runs,
    }
    tmp = args.out.parent / f"{args.out.name}.json.{os.getpid()}.tmp"  # two scripts may share out
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.replace(args.out.parent / f"{args.out.name}.json")
    if summary:
        plot(summary, runs, args, args.out.parent / f"{args.out.name}.png")
    return result


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line arguments, with `--out` resolved."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--variants", nargs="+", choices=sorted(VARIANTS), default=["gd_mean", "wr"]
    )
    parser.add_argument("--board", type=int, default=9)
    parser.add_argument("--samples", type=int, default=320, help="games per opening per epoch")
    parser.add_argument("--rounds", type=int, default=10, help="Gumbeldore rounds")
    parser.add_argument("--max-epochs", type=int, default=300, help="cap (censors a run)")
    parser.add_argument("--parallel", type=int, default=1, help="runs at a time (1 thread each)")
    parser.add_argument("--snapshot-s", type=float, default=300.0, help="snapshot interval")
    parser.add_argument(
        "--report",
        action="store_true",
        help="only rewrite the JSON and PNG from the runs so far and print them as Markdown",
    )
    parser.add_argument("--out", type=Path, default=REPO / "data" / "results" / "gomoku_paper")
    parser.add_argument("extra", nargs="*", help="Hydra overrides for every run (after --)")
    args = parser.parse_args(argv)
    args.out = args.out.resolve()
    return args


def main(argv: list[str] | None = None) -> None:
    """Train or continue every unfinished (seed, variant), `--parallel` at a time, rewriting the
    snapshot every `--snapshot-s` seconds and whenever a run ends."""
    args = parse(argv)
    if args.report:
        print(markdown(write_snapshot(args)))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    # `kill PID` ends the script and its nco-train runs cleanly (last.ckpt keeps finished epochs)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    pending = [(v, s) for s in args.seeds for v in args.variants]
    active: dict[tuple[str, int], subprocess.Popen] = {}
    last_snapshot = time.monotonic()
    try:
        while pending or active:
            while pending and len(active) < args.parallel:
                key = pending.pop(0)
                if finished(collect(*key, args)):
                    report(*key, args)
                else:
                    active[key] = launch(*key, args)
            time.sleep(POLL_S)
            for key, proc in list(active.items()):
                if proc.poll() is None:
                    continue
                del active[key]
                if proc.returncode != 0:
                    log = args.out / f"{key[0]}_seed{key[1]}.log"
                    raise SystemExit(f"{key[0]} seed {key[1]}: nco-train failed, see {log}")
                write_snapshot(args, running=set(active))
                report(*key, args)
            if time.monotonic() - last_snapshot >= args.snapshot_s:
                write_snapshot(args, running=set(active))
                last_snapshot = time.monotonic()
    finally:
        for proc in active.values():  # e.g. Ctrl-C: end the runs; last.ckpt keeps their epochs
            proc.terminate()
            proc.wait()
        write_snapshot(args)  # also after a kill, so no run is left marked as running


if __name__ == "__main__":
    main()
