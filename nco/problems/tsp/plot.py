"""Pictures of TSP tours (matplotlib, Agg canvas; no display needed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def plot_tour(
    coords: np.ndarray,
    tour: Sequence[int] | np.ndarray,
    path: str | Path,
    title: str | None = None,
) -> None:
    """Write a PNG of the closed tour: nodes as dots, the first node as a red square, and one
    arrow per edge in travel direction (labels with node ids up to 100 nodes)."""
    pts = np.asarray(coords, dtype=np.float64)
    order = np.asarray(tour, dtype=np.int64)
    n = len(pts)
    if pts.ndim != 2 or pts.shape[1] != 2:
        raise ValueError(f"plot_tour: expected coords of shape (n, 2), got {pts.shape}.")
    if order.shape != (n,) or not np.array_equal(np.sort(order), np.arange(n)):
        raise ValueError(f"plot_tour: expected the tour to be a permutation of 0..{n - 1}.")
    fig = Figure(figsize=(6, 6))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    path_pts = pts[np.append(order, order[0])]
    for a, b in zip(path_pts[:-1], path_pts[1:], strict=True):
        ax.annotate(
            "",
            xy=b,
            xytext=a,
            arrowprops={"arrowstyle": "-|>", "color": "tab:blue", "lw": 1.0, "shrinkA": 0},
        )
    ax.scatter(pts[:, 0], pts[:, 1], s=12, color="black", zorder=3)
    ax.scatter(
        pts[order[0], 0],
        pts[order[0], 1],
        s=60,
        marker="s",
        color="tab:red",
        zorder=4,
        label="start",
    )
    if n <= 100:
        for i, (x, y) in enumerate(pts):
            ax.annotate(str(i), (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.set_aspect("equal")
    ax.legend(loc="upper right", fontsize=7)
    ax.set_title(title or f"{n} nodes", wrap=True)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
