"""scripts/gomoku_epochs.py: epochs to all wins and to the win milestones, censored runs."""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from script_loader import load_script

SCRIPT = load_script("gomoku_epochs")


def write_metrics(path: Path, wins: list[float]) -> None:
    """A Lightning-style CSV: validation rows and sampling rows per epoch, as nco.train logs."""
    path.parent.mkdir(parents=True)
    keys = ["epoch", *SCRIPT.METRICS]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=keys)
        writer.writeheader()
        for e, w in enumerate(wins):
            writer.writerow({"epoch": e, "val/wins": w, "val/draws": 9 - w})
            row = {"sample/objective": 0.5, "time/sampling_s": 2.0, "time/training_s": 1.0}
            writer.writerow({"epoch": e, **row})


def test_reused_runs_give_milestones_and_censored_means(tmp_path: Path) -> None:
    args = argparse.Namespace(board=3, max_epochs=5, out=tmp_path, reuse=True)
    write_metrics(tmp_path / "runs/wr_seed0/logs/metrics.csv", [0, 5, 7, 8, 8])  # censored
    write_metrics(tmp_path / "runs/wr_seed1/logs/metrics.csv", [4, 5, 9])  # solved at epoch 3
    runs = [SCRIPT.train("wr", 0, args), SCRIPT.train("wr", 1, args)]
    assert runs[0]["epochs_to_all_wins"] is None and runs[1]["epochs_to_all_wins"] == 3
    # 0.5 of 9 cells -> 5 wins, 0.75 -> 7, 0.9 -> 9 (ceil)
    assert runs[0]["epochs_to_wins_fraction"] == {"0.5": 2, "0.75": 3, "0.9": None}
    summary = SCRIPT.summarize(runs, args)["wr"]
    assert summary["solved_runs"] == 1 and summary["mean_epochs_solved_runs"] == 3
    assert summary["epochs_to_wins_fraction"]["0.5"] == {
        "epochs": [2, 2],
        "mean_epochs_reached_runs": 2.0,
    }
    assert summary["epochs_to_wins_fraction"]["0.9"]["mean_epochs_reached_runs"] == 3.0
    # the solved run counts as all wins after it stopped, the censored one keeps its last value
    assert summary["mean_wins_per_epoch"] == [2.0, 5.0, 8.0, 8.5, 8.5]
    assert summary["mean_sampling_s_per_epoch"] == 2.0
