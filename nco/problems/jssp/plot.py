"""Gantt charts of JSSP schedules (matplotlib, Agg canvas; no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from nco.problems.jssp.schedule import schedule_arrays


def plot_gantt(
    durations: np.ndarray,
    machines: np.ndarray,
    start: np.ndarray,
    path: str | Path,
    title: str | None = None,
) -> None:
    """Write a PNG Gantt chart: one row per machine, one colour per job, labelled 'job.op'."""
    p, mach, s = schedule_arrays(durations, machines, start, "plot_gantt")
    jobs, num_machines = p.shape
    fig = Figure(figsize=(max(6.0, 0.02 * float((s + p).max())), 0.45 * num_machines + 1.5))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    colours = [matplotlib.colormaps["tab20"](j % 20) for j in range(jobs)]
    for j in range(jobs):
        for l in range(num_machines):
            ax.barh(int(mach[j, l]), p[j, l], left=s[j, l], color=colours[j], edgecolor="black")
            if jobs * num_machines <= 400:
                ax.text(
                    s[j, l] + p[j, l] / 2,
                    int(mach[j, l]),
                    f"{j}.{l}",
                    ha="center",
                    va="center",
                    fontsize=6,
                )
    ax.set_yticks(range(num_machines), [f"M{m}" for m in range(num_machines)])
    ax.invert_yaxis()
    ax.set_xlabel("time")
    ax.set_title(title or f"makespan {float((s + p).max()):g}", wrap=True)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
