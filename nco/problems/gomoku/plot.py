"""Drawing Gomoku games: the board with every stone numbered in the order it was played."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
from matplotlib.axes import Axes


def plot_game(
    plies: Sequence[int],
    board_size: int,
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    """Draw a game from its plies (cells row * N + col; black first, -1 entries are skipped).

    `plies` is one row of `GomokuEnv.replay(...)[1]`. Stones carry their move number; the
    last stone is outlined in red.
    """
    if board_size < 5:
        raise ValueError(f"plot_game: expected board_size >= 5, got {board_size}.")
    cells = [int(p) for p in plies]
    played = [p for p in cells if p >= 0]
    bad = any(p < -1 or p >= board_size**2 for p in cells)
    if bad or len(set(played)) != len(played):
        raise ValueError(
            f"plot_game: plies must be distinct cells in 0..{board_size**2 - 1} (or -1)."
        )
    if ax is None:
        _, ax = plt.subplots(figsize=(4, 4))
    ax.set_facecolor("#dcb35c")
    for i in range(board_size):
        ax.plot([0, board_size - 1], [i, i], color="black", linewidth=0.6, zorder=1)
        ax.plot([i, i], [0, board_size - 1], color="black", linewidth=0.6, zorder=1)
    number = 0
    for k, cell in enumerate(cells):
        if cell < 0:
            continue
        number += 1
        row, col = divmod(cell, board_size)
        black = k % 2 == 0
        last = number == len(played)
        stone = plt.Circle(
            (col, row),
            0.42,
            facecolor="black" if black else "white",
            edgecolor="red" if last else "black",
            linewidth=1.5 if last else 0.6,
            zorder=2,
        )
        ax.add_patch(stone)
        ax.text(
            col,
            row,
            str(number),
            ha="center",
            va="center",
            fontsize=7,
            color="white" if black else "black",
            zorder=3,
        )
    ax.set_xlim(-0.7, board_size - 0.3)
    ax.set_ylim(board_size - 0.3, -0.7)  # row 0 at the top
    ax.set_aspect("equal")
    ax.set_xticks(range(board_size))
    ax.set_yticks(range(board_size))
    if title is not None:
        ax.set_title(title, wrap=True)
    return ax
