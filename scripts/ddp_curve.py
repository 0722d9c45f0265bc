"""Learning curves of the same self-improvement run on 1 process and on 2 DDP ranks (CPU, gloo)
at the same global batch, plotted together.

    python scripts/ddp_curve.py                     # both runs, then the plot
    python scripts/ddp_curve.py --epochs 12 --out data/results/cluster

The 1-process run trains with batch size 2B, each of the 2 ranks with B (global batch 2B); both
sample the same instances with the same seeds, so their buffers are equal while their best
policies are; they differ in which buffer rows make up each batch (each rank draws B rows with
its own seed, one process draws 2B with one seed) and thus in the weights after the first step.
A finished run (its metrics.csv in --out) is not run again.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CONFIG = [
    "model=bq_tsp_tiny",
    "problem.num_nodes=20",
    "search.beam_width=8",
    "search.rounds=2",
    "training.instances_per_epoch=128",
    "training.batches_per_epoch=20",
    "training.lr=0.001",
    "training.val_instances=128",
    "training.val_batch_size=128",
    "training.val_gap=false",
    "training.progress=false",
    "distributed.chunk_size=16",
    "trainer.accelerator=cpu",
    "trainer.enable_model_summary=false",
    "training.progress_interval_s=600",
]
SHOWN = ("val/cost", "sample/cost", "train/loss_epoch")


def train(name: str, out: Path, epochs: int, batch: int, *extra: str) -> Path:
    """Run nco-train into a temp folder and keep its metrics.csv as <out>/<name>.csv."""
    target = out / f"{name}.csv"
    if target.is_file():
        return target
    exe = Path(sys.executable).parent / "nco-train"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    with tempfile.TemporaryDirectory(prefix="nco_ddp_curve") as tmp:
        args = [str(exe), *CONFIG, f"trainer.max_epochs={epochs}"]
        args += [f"training.batch_size={batch}", *extra, f"hydra.run.dir={tmp}/run"]
        print(" ".join(args[1:]), flush=True)
        subprocess.run(args, env=env, check=True)
        shutil.copy(Path(tmp) / "run" / "logs" / "metrics.csv", target)
    return target


def per_epoch(path: Path) -> dict[str, dict[int, float]]:
    """The last value of each shown metric per epoch."""
    out: dict[str, dict[int, float]] = {m: {} for m in SHOWN}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            for m in SHOWN:
                if row.get(m):
                    out[m][int(row["epoch"])] = float(row[m])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch", type=int, default=32, help="per-rank batch B")
    parser.add_argument("--out", type=Path, default=Path("data/results/cluster"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    runs = {
        f"1 process, batch {2 * args.batch}": train(
            "ddp_1rank", args.out, args.epochs, 2 * args.batch
        ),
        f"2 DDP ranks, batch {args.batch} each": train(
            "ddp_2ranks",
            args.out,
            args.epochs,
            args.batch,
            "trainer.strategy=ddp",
            "trainer.devices=2",
        ),
    }
    data = {label: per_epoch(path) for label, path in runs.items()}
    fig, axes = plt.subplots(1, len(SHOWN), figsize=(4.2 * len(SHOWN), 3.4))
    for ax, metric in zip(axes, SHOWN, strict=True):
        for label, values in data.items():
            epochs = sorted(values[metric])
            ax.plot(epochs, [values[metric][e] for e in epochs], marker="o", ms=3, label=label)
        ax.set_title(metric)
        ax.set_xlabel("epoch")
    axes[0].legend(fontsize=8)
    fig.suptitle("TSP20, tiny BQ policy, Gumbeldore sampling, CPU (gloo)", fontsize=10)
    fig.tight_layout()
    png = args.out / "ddp_curve.png"
    fig.savefig(png, dpi=110)
    print(f"wrote {png}")
    for metric in SHOWN:
        print(metric)
        for label, values in data.items():
            print(
                f"  {label:28s} "
                + " ".join(f"{values[metric][e]:.4f}" for e in sorted(values[metric]))
            )


if __name__ == "__main__":
    main()
