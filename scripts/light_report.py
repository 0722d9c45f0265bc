"""Tables and learning curves of the light-decoder SI runs (issue 38, docs/light_si.md).

    python scripts/light_report.py                 # prints both markdown tables
    python scripts/light_report.py --plot docs/light_si_curves.png

Reads data/results/light/si_*.json (nco-eval results, scripts/light_eval.sh) and
data/light/<run>/logs/metrics.csv (nco-train's CSV log, scripts/light_runs.sh).
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "data" / "results" / "light"
RUNS = ROOT / "data" / "light"


def epoch_rows(metrics: Path) -> list[dict[str, float]]:
    """One row per finished epoch: the epoch's validation and timing metrics merged."""
    epochs: dict[int, dict[str, float]] = {}
    with metrics.open() as f:
        for row in csv.DictReader(f):
            if not row.get("epoch"):
                continue
            merged = epochs.setdefault(int(float(row["epoch"])), {})
            merged.update({k: float(v) for k, v in row.items() if v and k != "epoch"})
    return [{"epoch": e, **epochs[e]} for e in sorted(epochs) if "val/objective" in epochs[e]]


def runs_table() -> str:
    """Markdown: per run, epochs done, initial, last and best validation gap (the mean cost where
    the validation set has no references, e.g. `training.val_data=kool:cvrp100_val`), and the
    last epoch's times."""
    lines = [
        "| run | epochs | validation | initial | last | best (epoch) "
        "| sampling s | training s | validation s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for metrics in sorted(RUNS.glob("*/logs/metrics.csv")):
        rows = epoch_rows(metrics)
        if not rows:
            continue
        gaps = all("val/gap" in r for r in rows)
        key, label = ("val/gap", "gap %") if gaps else ("val/cost", "mean cost")
        initial = rows[0].get("val/initial_gap") if gaps else -rows[0]["val/best_objective"]
        if not gaps and rows[0].get("val/improved"):  # the first epoch already replaced it
            initial = None
        best = min(rows, key=lambda r: r[key])
        last = rows[-1]
        fmt = ".2f" if gaps else ".4f"
        lines.append(
            f"| {metrics.parents[1].name} | {len(rows)} | {label} | "
            f"{'' if initial is None else format(initial, fmt)} | {last[key]:{fmt}} | "
            f"{best[key]:{fmt}} ({int(best['epoch'])}) | "
            f"{last.get('time/sampling_s', float('nan')):.0f} | "
            f"{last.get('time/training_s', float('nan')):.0f} | "
            f"{last.get('time/validation_s', float('nan')):.0f} |"
        )
    return "\n".join(lines)


def results_table() -> str:
    """Markdown: one row per results JSON (model, decoding, instances, cost, gap, seconds)."""
    lines = ["| result | instances | mean cost | mean gap % | wall s |", "|---|---|---|---|---|"]
    for path in sorted(RESULTS.glob("si_*.json")):
        r = json.loads(path.read_text())
        gap = r.get("mean_gap")
        lines.append(
            f"| {path.stem} | {r['num_instances']} | {r['mean_cost']:.4f} | "
            f"{'' if gap is None else f'{gap:.2f}'} | {r['wall_time_s']:.0f} |"
        )
    return "\n".join(lines)


def plot(out: Path) -> None:
    """Validation gap per epoch of every run (one panel per problem)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, problem in zip(axes, ("tsp100", "cvrp100"), strict=True):
        for metrics in sorted(RUNS.glob(f"{problem}_*/logs/metrics.csv")):
            rows = epoch_rows(metrics)
            if not rows or not all("val/gap" in r for r in rows):
                continue  # no references (a Kool validation set): in the table only
            xs = [-1] + [int(r["epoch"]) for r in rows]
            initial = rows[0].get("val/initial_gap", float("nan"))
            ys = [initial] + [r["val/gap"] for r in rows]
            ax.plot(xs, ys, marker="o", label=metrics.parents[1].name)
        ax.set_title(f"{problem}: greedy validation gap (epoch -1: initial)")
        ax.set_xlabel("epoch")
        ax.set_ylabel("gap % (log scale)")
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=90)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot", type=Path, help="write the learning curves (PNG) here")
    args = parser.parse_args()
    print(runs_table())
    print()
    print(results_table())
    if args.plot:
        plot(args.plot)


if __name__ == "__main__":
    main()
