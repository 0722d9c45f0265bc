"""Plot per-epoch metrics of an nco-train run (its logs/metrics.csv) and print them as a table.

python scripts/plot_metrics.py outputs/<run> --metrics val/gap sample/cost --out curve.png
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def per_epoch(csv_path: Path, metrics: list[str]) -> dict[str, dict[int, float]]:
    """The last logged value of each metric in each epoch."""
    if not csv_path.is_file():
        raise ValueError(f"{csv_path}: no such metrics file (expected <run>/logs/metrics.csv).")
    rows = list(csv.DictReader(csv_path.open()))
    if rows and "epoch" not in rows[0]:
        raise ValueError(f"{csv_path}: expected an 'epoch' column.")
    out: dict[str, dict[int, float]] = {m: {} for m in metrics}
    for row in rows:
        for m in metrics:
            if row.get(m):
                out[m][int(row["epoch"])] = float(row[m])
    missing = [m for m, v in out.items() if not v]
    if missing:
        raise ValueError(f"{csv_path}: no values for {missing}; columns are {list(rows[0])}.")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="run folder or its metrics.csv")
    parser.add_argument("--metrics", nargs="+", default=["val/gap"])
    parser.add_argument("--out", type=Path, default=None, help="PNG (default <run>/curve.png)")
    args = parser.parse_args()
    path = args.run if args.run.suffix == ".csv" else args.run / "logs" / "metrics.csv"
    data = per_epoch(path, args.metrics)
    epochs = sorted({e for values in data.values() for e in values})
    print("epoch " + " ".join(f"{m:>16}" for m in args.metrics))
    for e in epochs:
        cells = [f"{data[m][e]:>16.4f}" if e in data[m] else f"{'':>16}" for m in args.metrics]
        print(f"{e:>5} " + " ".join(cells))
    fig, axes = plt.subplots(1, len(args.metrics), figsize=(4.5 * len(args.metrics), 3.2))
    for ax, m in zip(list(axes) if len(args.metrics) > 1 else [axes], args.metrics, strict=True):
        xs = sorted(data[m])
        ax.plot(xs, [data[m][x] for x in xs], marker="o")
        ax.set_xlabel("epoch")
        ax.set_title(m)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    out = args.out or path.parent.parent / "curve.png"
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
