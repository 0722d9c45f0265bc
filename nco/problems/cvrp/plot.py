"""Pictures of CVRP solutions (matplotlib, Agg canvas; no display needed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def plot_routes(
    depot: np.ndarray,
    locs: np.ndarray,
    routes: Sequence[Sequence[int]],
    path: str | Path,
    title: str | None = None,
) -> None:
    """Write a PNG of the routes (1-based customer ids, depot implicit at both ends): one colour
    per route, customers as dots, the depot as a large black star."""
    depot = np.asarray(depot, dtype=np.float64).reshape(-1)
    locs = np.asarray(locs, dtype=np.float64)
    if depot.shape != (2,) or locs.ndim != 2 or locs.shape[1] != 2:
        raise ValueError(
            f"plot_routes: expected depot (2,) and locs (n, 2), got {depot.shape} and {locs.shape}."
        )
    n = len(locs)
    for route in routes:
        if any(not 1 <= int(c) <= n for c in route):
            raise ValueError(f"plot_routes: expected customer ids in 1..{n}, got {list(route)}.")
    nodes = np.vstack([depot[None], locs])
    fig = Figure(figsize=(6, 6))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    used = [r for r in routes if len(r)]
    for k, route in enumerate(used):
        stops = nodes[np.concatenate([[0], np.asarray(route, dtype=np.int64), [0]])]
        ax.plot(stops[:, 0], stops[:, 1], color=_colour(k, len(used)), lw=1.2, marker="o", ms=3)
    ax.scatter(locs[:, 0], locs[:, 1], s=10, color="black", zorder=3)
    if n <= 100:
        for c, (x, y) in enumerate(locs, start=1):
            ax.annotate(str(c), (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.scatter(depot[0], depot[1], s=220, marker="*", color="black", zorder=4, label="depot")
    ax.set_aspect("equal")
    ax.legend(loc="upper right", fontsize=7)
    ax.set_title(title or f"{n} customers, {len(used)} routes", wrap=True)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def _colour(k: int, count: int) -> tuple[float, float, float, float]:
    """Route k's colour: tab10 for up to 10 routes, else evenly spaced along 'turbo'."""
    if count <= 10:
        return matplotlib.colormaps["tab10"](k)
    return matplotlib.colormaps["turbo"](k / (count - 1))
