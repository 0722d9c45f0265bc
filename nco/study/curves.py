"""Learning curves of study runs: validation gap and wall time per epoch, the epoch `best.pt`
holds, how good the self-improvement targets were, and a power-law trend of the gap."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from nco.runs import Run
from nco.study.chunks import read_chunks

TIMERS = ("time/sampling_s", "time/training_s", "time/validation_s")


def read_run(folder: Path, last: int = 5) -> dict:
    """Per-epoch validation gap and wall time (sampling + training + validation) of a run, and
    over its `last` epochs the targets' gap beside greedy's (`targets`; None for SL)."""
    run = Run(folder)
    rows = run.rows()
    if not run.has_metrics():
        raise ValueError(f"{run.metrics_file}: no such metrics file (the run has not started).")
    gap = run.metric("val/gap")
    cost = run.metric("val/cost")
    reference = {e: cost[e] / (1 + gap[e] / 100) for e in gap if e in cost}
    sampled = run.metric("sample/cost")
    initial = run.metric("val/initial_gap")  # the starting weights' gap (continued runs)
    wall = run.wall_seconds(TIMERS)
    # epochs whose weights became best.pt, in logged order (None: logged before val/improved)
    flags = [row for row in rows if "val/improved" in row]
    improved = [int(r["epoch"]) for r in flags if r["val/improved"]] if flags else None
    epochs = list(gap)
    hours, total = [], 0.0
    for e in epochs:
        total += wall.get(e, 0.0)
        hours.append(total / 3600)
    best = run.best_epoch("val/gap")
    saved = best if improved is None else (improved[-1] if improved else None)
    return {
        "epochs": epochs,
        "val_gap": [gap[e] for e in epochs],
        "hours": hours,
        "best_epoch": best,
        "best_val_gap": gap[best] if best is not None else None,
        # best.pt holds the last epoch that beat the best validation objective (mean cost,
        # not mean gap: the two can pick different epochs); None: still the starting weights
        "saved_epoch": saved,
        "saved_val_gap": gap.get(saved) if saved is not None else None,
        "initial_val_gap": list(initial.values())[-1] if initial else None,
        "chunks": read_chunks(folder),
        "targets": target_quality(sampled, reference, gap, last),
    }


def target_quality(
    sampled: dict[int, float], reference: dict[int, float], gap: dict[int, float], last: int
) -> dict | None:
    """How good the self-improvement targets are beside the greedy policy, over the last epochs:
    the mean cost of the best sampled solutions (the epoch's fresh instances) as a gap to the
    validation set's mean reference cost (same distribution, so within sampling noise), and
    the mean greedy validation gap. A small target gap with a large greedy gap means the
    imitation lags, not the search. None for SL runs (no sampling)."""
    epochs = sorted(set(sampled) & set(reference))[-last:]
    if not epochs:
        return None
    cost = sum(sampled[e] for e in epochs) / len(epochs)
    ref = sum(reference[e] for e in epochs) / len(epochs)
    return {
        "epochs": [epochs[0], epochs[-1]],
        "best_sampled_cost": cost,
        "reference_cost": ref,
        "best_sampled_gap": 100 * (cost - ref) / ref,
        "greedy_gap": sum(gap[e] for e in epochs) / len(epochs),
    }


def power_law(run: dict, targets: dict[str, float], first: int = 10) -> dict | None:
    """Least-squares fit of log(gap) = a + k log(epoch) over the validated epochs from `first`
    (1-based) on, and the epochs at which the fitted curve reaches each target gap: how far
    the run would have to go at its present rate (None before 5 such epochs; a target's None:
    not within a million epochs, e.g. a flat or rising curve)."""
    points = [
        (e + 1, g) for e, g in zip(run["epochs"], run["val_gap"], strict=True) if e + 1 >= first
    ]
    if len(points) < 5:
        return None
    epochs, gaps = np.log(np.array(points)).T
    slope, a = np.polyfit(epochs, gaps, 1)
    logs = {
        name: (math.log(gap) - a) / slope if slope < 0 else math.inf
        for name, gap in targets.items()
    }
    reach = {name: round(math.exp(x)) if x <= math.log(1e6) else None for name, x in logs.items()}
    return {"from_epoch": first, "slope": float(slope), "epochs_to": reach}


def summary(name: str, r: dict) -> str:
    """One line of a report per run or fine-tune: best validation gap, power-law trend, the
    targets' gap beside greedy's over the last epochs, and where a fine-tune started."""
    fit = r["power_law"]
    trend = (
        f"; gap ~ epoch^{fit['slope']:.2f}, epochs to "
        + ", ".join(f"{k}: {v}" for k, v in fit["epochs_to"].items())
        if fit
        else ""
    )
    tq = r["targets"]
    targets = (
        f"; last {tq['epochs'][1] - tq['epochs'][0] + 1} epochs: best sampled "
        f"{tq['best_sampled_gap']:.2f} %, greedy {tq['greedy_gap']:.2f} %"
        if tq
        else ""
    )
    start = f"; from {r['start']['from']}" if "start" in r else ""
    if r.get("initial_val_gap") is not None:
        start += f" (val gap {r['initial_val_gap']:.3f} %)"
    return (
        f"{name:10s} epochs {len(r['epochs']):4d}  best val gap {r['best_val_gap']:.3f} % "
        f"(epoch {r['best_epoch']}, {r['hours'][-1]:.2f} h){start}{trend}{targets}"
    )
