"""An epochs-to-target study (configs/study/<name>.yaml, kind epochs_to_target; the Gomoku
study of the Gumbeldore paper's C.4): epochs until the greedy policy wins from every opening,
per variant and seed, with censored runs compared by Gehan's test.

Each (variant, seed) trains as its own `nco-train` run in a fixed folder
`<out>/runs/<variant>_seed<seed>`, `parallel` at a time with one torch thread each; a snapshot
`<out>.json` + `<out>.png` is rewritten while they train. Resumable: rerunning continues every
unfinished run from its `checkpoints/last.ckpt`; solved or censored runs are only read.

A run's status: "solved" (all openings won, the run stopped), "censored" (reached
`max_epochs` without), "running" (training now) or "unfinished" (stopped early; rerun).
"""

from __future__ import annotations

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
from dataclasses import dataclass, field
from pathlib import Path

from nco.runs import Run
from nco.study.chunks import launch as launch_chunk
from nco.study.spec import EpochsToTarget, StudyError

POLL_S = 2.0  # seconds between checks on the running runs
METRICS = ("val/wins", "val/draws", "sample/objective", "time/sampling_s", "time/training_s")


@dataclass(frozen=True)
class EpochsStudy:
    """An epochs-to-target study in one setting: board size, games per opening per epoch
    (`samples`), Gumbeldore rounds, the epoch cap that censors a run, Hydra overrides for
    every run (`extra`), the output stem `out` and the working directory of training (`root`)."""

    spec: EpochsToTarget
    out: Path
    root: Path
    board: int
    samples: int
    rounds: int
    max_epochs: int
    extra: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.board < 1 or self.samples < 1 or self.rounds < 1 or self.max_epochs < 1:
            raise ValueError(
                f"expected board, samples, rounds and max_epochs >= 1, got {self.board}, "
                f"{self.samples}, {self.rounds}, {self.max_epochs}."
            )

    @property
    def cells(self) -> int:
        """Openings: one per cell of the board."""
        return self.board * self.board

    def run_dir(self, variant: str, seed: int) -> Path:
        """The fixed folder of one run (rerunning continues it)."""
        return self.out / "runs" / f"{variant}_seed{seed}"

    def log(self, variant: str, seed: int) -> Path:
        """Where one run's output goes."""
        return self.out / f"{variant}_seed{seed}.log"


def overrides(study: EpochsStudy, variant: str) -> list[str]:
    """Hydra overrides of one variant for the study's board, samples and epoch cap."""
    out = [
        f"experiment={study.spec.variants[variant].experiment}",
        f"problem.board_size={study.board}",
        f"trainer.max_epochs={study.max_epochs}",
        f"distributed.chunk_size={study.cells}",
        "training.progress=false",
        "trainer.enable_progress_bar=false",
        "trainer.enable_model_summary=false",
    ]
    if variant == "wr":
        out.append(f"search.num_samples={study.samples}")
    else:
        if study.samples % study.rounds:
            raise ValueError(f"--samples: expected a multiple of --rounds {study.rounds}.")
        beam = study.samples // study.rounds
        out += [f"search.rounds={study.rounds}", f"search.beam_width={beam}"]
    return out + study.extra


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


def collect(study: EpochsStudy, variant: str, seed: int, running: bool = False) -> dict:
    """One run's per-epoch results read from its metrics.csv, with its status.

    sample/objective is the mean over openings of the best sampled game (+1 win, 0 draw, -1
    loss), i.e. whether sampling found anything better than a loss to learn from."""
    m = {k: list(v.values()) for k, v in Run(study.run_dir(variant, seed)).metrics(METRICS).items()}
    wins = m["val/wins"]
    solved = first_epoch(wins, study.cells)
    if solved is not None:
        status = "solved"
    elif len(wins) >= study.max_epochs:
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
            str(f): first_epoch(wins, math.ceil(f * study.cells)) for f in study.spec.fractions
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


def launch(study: EpochsStudy, variant: str, seed: int) -> subprocess.Popen:
    """Start (or continue) one run in the background, one torch thread, its output appended to
    `<out>/<variant>_seed<seed>.log`."""
    folder = study.run_dir(variant, seed)
    args = [*overrides(study, variant), f"seed={seed}", f"hydra.run.dir={folder}"]
    return launch_chunk(folder, args, 1, study.root, log=study.log(variant, seed))


def report_run(study: EpochsStudy, variant: str, seed: int) -> None:
    """Print one run's status line."""
    run = collect(study, variant, seed)
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


def compare(first: list[dict], second: list[dict], permutations: int, seed: int = 0) -> dict:
    """Is `first` faster than `second`? Gehan's score U (sum of `faster` over all pairs), the
    probability that a run of `first` is faster than one of `second` (ties count half), and the
    two-sided permutation p-value of U: over every split of the pooled runs into groups of the
    two sizes when there are at most `permutations` splits, else over that many seeded ones."""
    pooled, k = first + second, len(first)
    pair = [[faster(x, y) for y in pooled] for x in pooled]

    def score(group: set[int]) -> int:
        rest = [j for j in range(len(pooled)) if j not in group]
        return sum(pair[i][j] for i in group for j in rest)

    observed = score(set(range(k)))
    exact = math.comb(len(pooled), k) <= permutations
    if exact:
        splits = [set(c) for c in itertools.combinations(range(len(pooled)), k)]
    else:  # the observed split counts among the sampled ones, so p is never 0
        rng = random.Random(seed)
        splits = [set(range(k))]
        splits += [set(rng.sample(range(len(pooled)), k)) for _ in range(permutations)]
    extreme = sum(abs(score(group)) >= abs(observed) for group in splits)
    return {
        "runs": [len(first), len(second)],
        "gehan_u": observed,
        "prob_faster": 0.5 + observed / (2 * len(first) * len(second)),
        "p_value": extreme / len(splits),
        "exact": exact,
    }


def compare_variants(study: EpochsStudy, runs: list[dict]) -> dict:
    """`compare` for every ordered pair of variants (in the study's order) over finished runs."""
    variants = study.spec.variants
    done = {v: [r for r in runs if r["variant"] == v and finished(r)] for v in variants}
    names = [v for v in variants if done[v]]
    return {
        f"{a} vs {b}": compare(done[a], done[b], study.spec.permutations)
        for a, b in itertools.combinations(names, 2)
    }


def summarize(study: EpochsStudy, runs: list[dict]) -> dict:
    """Per variant: epochs to all wins and to each milestone (means over the runs that got
    there) and the mean wins and draws per epoch, over the runs that reached the epoch, a
    solved run counting as all wins (no draws) after it stopped."""
    cells = study.cells
    out = {}
    for variant in study.spec.variants:
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
        for f in study.spec.fractions:
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


def plot(study: EpochsStudy, summary: dict, runs: list[dict], path: Path) -> None:
    """Left: greedy wins vs epoch of every run (thin) and their mean (thick), one colour per
    variant. Right: the share of each variant's runs that won from every opening by epoch e."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = study.cells
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
        label = f"{study.spec.variants[variant].label} ({len(mine)} runs)"
        right.step(steps, share, where="post", color=colour, label=label)
    left.axhline(cells, color="grey", lw=0.8, ls="--")
    left.set_xlabel("epoch")
    left.set_ylabel(f"greedy white wins of {cells} openings")
    left.set_title("every run (thin) and the mean (thick)")
    right.set_xlabel("epoch")
    right.set_ylabel("share of runs with all openings won")
    right.set_ylim(0, 1.02)
    board = f"{study.board}x{study.board}"
    fig.suptitle(f"Gomoku {board} vs bot v1, {study.samples} games per opening")
    fig.legend(loc="lower center", ncol=2, fontsize="small")  # below both panels
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_snapshot(study: EpochsStudy, running: set[tuple[str, int]] | None = None) -> dict:
    """Read every run under `<out>/runs` so far, whichever command started it (`running`: those
    training now), and write `<out>.json` and `<out>.png`."""
    order = list(study.spec.variants)
    names = (p.name.rpartition("_seed") for p in (study.out / "runs").glob("*_seed*"))
    found = [(v, int(s)) for v, _, s in names if v in order and s.isdigit()]
    found.sort(key=lambda key: (key[1], order.index(key[0])))
    runs = [
        collect(study, v, s, running=(v, s) in (running or set()))
        for v, s in found
        if Run(study.run_dir(v, s)).has_metrics()
    ]
    summary = summarize(study, runs)
    variants = sorted({r["variant"] for r in runs}, key=order.index)
    setting = {k: getattr(study, k) for k in ("board", "samples", "rounds", "max_epochs")}
    result = {
        "setting": {**setting, "extra": study.extra},
        "seeds": sorted({r["seed"] for r in runs}),
        "experiments": {v: study.spec.variants[v].experiment for v in variants},
        "written": time.strftime("%Y-%m-%d %H:%M:%S"),
        "summary": summary,
        "comparisons": compare_variants(study, runs),
        "runs": runs,
    }
    parent, stem = study.out.parent, study.out.name
    tmp = parent / f"{stem}.json.{os.getpid()}.tmp"  # two commands may share out
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    tmp.replace(parent / f"{stem}.json")
    if summary:
        plot(study, summary, runs, parent / f"{stem}.png")
    return result


def train(
    study: EpochsStudy, variants: list[str], seeds: list[int], parallel: int, snapshot_s: float
) -> None:
    """Train or continue every unfinished (seed, variant), `parallel` at a time, rewriting the
    snapshot every `snapshot_s` seconds and whenever a run ends."""
    unknown = [v for v in variants if v not in study.spec.variants]
    if unknown:
        raise StudyError(f"variants {unknown}: expected some of {sorted(study.spec.variants)}")
    study.out.mkdir(parents=True, exist_ok=True)
    # `kill PID` ends the command and its nco-train runs cleanly (last.ckpt keeps their epochs)
    previous_sigterm = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    pending = [(v, s) for s in seeds for v in variants]
    active: dict[tuple[str, int], subprocess.Popen] = {}
    last_snapshot = time.monotonic()
    try:
        while pending or active:
            while pending and len(active) < parallel:
                key = pending.pop(0)
                if finished(collect(study, *key)):
                    report_run(study, *key)
                else:
                    active[key] = launch(study, *key)
            time.sleep(POLL_S)
            for key, proc in list(active.items()):
                if proc.poll() is None:
                    continue
                del active[key]
                if proc.returncode != 0:
                    log = study.log(*key)
                    raise StudyError(f"{key[0]} seed {key[1]}: nco-train failed, see {log}")
                write_snapshot(study, running=set(active))
                report_run(study, *key)
            if time.monotonic() - last_snapshot >= snapshot_s:
                write_snapshot(study, running=set(active))
                last_snapshot = time.monotonic()
    finally:
        signal.signal(signal.SIGTERM, previous_sigterm)
        for proc in active.values():  # e.g. Ctrl-C: end the runs; last.ckpt keeps their epochs
            proc.terminate()
            proc.wait()
        write_snapshot(study)  # also after a kill, so no run is left marked as running
