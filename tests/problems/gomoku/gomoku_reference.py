"""Slow, loop-based reference implementations of the bot's scoring and the win rule, for tests."""

from __future__ import annotations

import numpy as np
import torch

from nco.problems.gomoku.bot import FIVE, FOUR, OPEN_FOUR, OPEN_THREE

DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))


def five_in_row(board: np.ndarray) -> bool:
    """True when the +1 player has a run of at least five cells anywhere on `board` (N, N)."""
    n = board.shape[0]
    for r in range(n):
        for c in range(n):
            for dr, dc in DIRECTIONS:
                run = 0
                rr, cc = r, c
                while 0 <= rr < n and 0 <= cc < n and board[rr, cc] == 1:
                    run += 1
                    rr, cc = rr + dr, cc + dc
                if run >= 5:
                    return True
    return False


def cell_score(board: np.ndarray, r: int, c: int) -> int:
    """The +1 player's score at empty cell (r, c), straight from the rules in bot.py."""
    n = board.shape[0]

    def at(k: int, dr: int, dc: int) -> int:
        rr, cc = r + k * dr, c + k * dc
        return int(board[rr, cc]) if 0 <= rr < n and 0 <= cc < n else -1

    total = 0
    for dr, dc in DIRECTIONS:
        five, threes, base = False, 0, 0
        completions: set[int] = set()
        for start in range(-4, 1):
            cells = list(range(start, start + 5))
            values = [at(k, dr, dc) for k in cells]
            if -1 in values:
                continue
            own = values.count(1)
            base += 4**own
            five |= own == 4
            threes += own == 2
            if own == 3:
                completions |= {k for k, v in zip(cells, values, strict=True) if v == 0 and k != 0}
        if five:
            total += FIVE
        elif len(completions) >= 2:
            total += OPEN_FOUR
        elif len(completions) == 1:
            total += FOUR
        elif threes >= 2:
            total += OPEN_THREE
        total += base
    return total


def board_from(rows: list[str]) -> torch.Tensor:
    """Int8 (1, N, N) board from text rows: 'X' = +1 (the mover), 'O' = -1, '.' = empty."""
    values = {"X": 1, "O": -1, ".": 0}
    return torch.tensor([[values[ch] for ch in row] for row in rows], dtype=torch.int8)[None]


def reference_move(board: np.ndarray) -> int:
    """The bot's documented decision: win if possible, else attack unless the opponent's best
    score is larger; ties to the cell closest to the centre, then the smallest index."""
    n = board.shape[0]
    empty = [(r, c) for r in range(n) for c in range(n) if board[r, c] == 0]
    attack = {cell: cell_score(board, *cell) for cell in empty}
    block = {cell: cell_score(-board, *cell) for cell in empty}
    best = max(attack.values())
    scores = attack if best >= FIVE or best >= max(block.values()) else block
    centre = (n - 1) / 2

    def key(cell: tuple[int, int]) -> tuple[int, float, int]:
        r, c = cell
        return (-scores[cell], (r - centre) ** 2 + (c - centre) ** 2, r * n + c)

    r, c = min(empty, key=key)
    return r * n + c
