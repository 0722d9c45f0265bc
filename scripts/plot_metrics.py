"""Plot per-epoch metrics of nco-train runs (their logs/metrics.csv) and print them as tables.

Several runs go into the same panels, one line each, labelled by the run folder (or the CSV's
name), e.g. the same training in two precisions:

python scripts/plot_metrics.py outputs/<run> --metrics val/gap sample/cost --out curve.png
python scripts/plot_metrics.py fp32.csv bf16.csv --metrics train/loss_epoch val/gap --out cmp.png
python scripts/plot_metrics.py data/jssp_cpu/gd --from-epoch 10 --out curve.png
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from nco.runs import METRICS_FILE, read_metrics_file  # noqa: E402
from nco.runs import per_epoch as metrics_per_epoch  # noqa: E402


def per_epoch(csv_path: Path, metrics: list[str]) -> dict[str, dict[int, float]]:
    """The last logged value of each metric in each epoch (nco.runs reads the CSV)."""
    rows = read_metrics_file(csv_path)
    out = metrics_per_epoch(rows, metrics)
    missing = [m for m, v in out.items() if not v]
    if missing:
        columns = list(dict.fromkeys(k for row in rows for k in row))
        raise ValueError(f"{csv_path}: no values for {missing}; columns are {columns}.")
    return out


def metrics_path(run: Path) -> Path:
    """A run folder's logs/metrics.csv, or `run` itself when it is a CSV file."""
    return run if run.suffix == ".csv" else run / METRICS_FILE


def label(run: Path) -> str:
    """A run's name in legends and tables: the CSV's stem or the folder's name."""
    return run.stem if run.suffix == ".csv" else run.name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+", help="run folders or metrics.csv files")
    parser.add_argument("--metrics", nargs="+", default=["val/gap"])
    parser.add_argument("--out", type=Path, default=None, help="PNG (default <run>/curve.png)")
    parser.add_argument(
        "--from-epoch",
        type=int,
        default=0,
        help="leave out earlier epochs (an untrained first epoch flattens the rest of a curve)",
    )
    args = parser.parse_args()
    try:
        data = {label(run): per_epoch(metrics_path(run), args.metrics) for run in args.runs}
    except ValueError as error:
        parser.error(str(error))
    data = {
        name: {
            m: {e: v for e, v in per.items() if e >= args.from_epoch} for m, per in values.items()
        }
        for name, values in data.items()
    }
    if not any(per for values in data.values() for per in values.values()):
        parser.error(f"no epoch >= {args.from_epoch} in {[str(run) for run in args.runs]}")
    for name, values in data.items():
        epochs = sorted({e for per_metric in values.values() for e in per_metric})
        if len(data) > 1:
            print(name)
        print("epoch " + " ".join(f"{m:>16}" for m in args.metrics))
        for e in epochs:
            cells = [
                f"{values[m][e]:>16.4f}" if e in values[m] else f"{'':>16}" for m in args.metrics
            ]
            print(f"{e:>5} " + " ".join(cells))
    fig, axes = plt.subplots(1, len(args.metrics), figsize=(4.5 * len(args.metrics), 3.2))
    for ax, m in zip(list(axes) if len(args.metrics) > 1 else [axes], args.metrics, strict=True):
        for name, values in data.items():
            xs = sorted(values[m])
            ax.plot(xs, [values[m][x] for x in xs], marker="o", label=name)
        ax.set_xlabel("epoch")
        ax.set_title(m)
        ax.grid(alpha=0.3)
        if len(data) > 1:
            ax.legend()
    fig.tight_layout()
    out = args.out or metrics_path(args.runs[0]).parent.parent / "curve.png"
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
