"""LightZero's deterministic Gomoku rule bot "v1", the paper's opponent (C.4), batched in torch.

nco's own implementation of the published rules (opendilab/LightZero,
`zoo/board_games/gomoku/envs/gomoku_rule_bot_v1.py`). For every empty cell and each of the four
line directions, the bot walks outwards from the cell, first one way then the other, each walk
starting with a unit weight of 100: an own stone adds the unit weight; an empty cell adds 1 and
divides the unit weight by 10; an opponent stone subtracts 5 and ends the walk, as does the
board edge. The direction's score counts only if at least 4 cells (own or empty) were walked,
else it is 0; a direction score of at least 390 becomes 2000, of at least 302 becomes 1000. A
cell's score is the sum of its four directions.

The bot scores every empty cell for itself and for the opponent and plays its own best cell
unless the opponent's best score is higher, in which case it blocks the opponent's best cell;
ties between cells go to the first in board order (row * N + col). The arithmetic is float64 in
LightZero's order (up before down, left before right, up-left before down-right, down-left
before up-right), so the thresholds see the same numbers.
"""

from __future__ import annotations

import functools

import torch

UNIT_WEIGHT = 100.0
EMPTY_SCORE, OPPONENT_SCORE = 1.0, -5.0
MIN_CELLS = 4
HIGH, HIGH_SCORE = 390.0, 2000.0
MID, MID_SCORE = 302.0, 1000.0

# Per direction, the two walks in LightZero's order, as (row step, column step).
DIRECTIONS = (
    ((-1, 0), (1, 0)),  # up, then down
    ((0, -1), (0, 1)),  # left, then right
    ((-1, -1), (1, 1)),  # up-left, then down-right
    ((1, -1), (-1, 1)),  # down-left, then up-right
)


@functools.cache
def _rays(n: int, device: torch.device) -> tuple[torch.Tensor, ...]:
    """Per walk (8, in LightZero's order), Long (n - 1, n * n): the flat index of the cell k
    steps away from each cell, or n * n (an off-board sentinel)."""
    rows, cols = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
    rays = []
    for walks in DIRECTIONS:
        for dr, dc in walks:
            k = torch.arange(1, n).view(-1, 1, 1)
            r, c = rows + dr * k, cols + dc * k
            inside = (r >= 0) & (r < n) & (c >= 0) & (c < n)
            rays.append(torch.where(inside, r * n + c, n * n).flatten(1).to(device))
    return tuple(rays)


def cell_scores(board: torch.Tensor) -> torch.Tensor:
    """Float64 (B, N, N): v1's score of each cell for the +1 player (-inf where occupied).

    `board` holds +1 (the scored player), -1 (the opponent) and 0 (empty). Each walk is a loop
    over steps on precomputed ray indices; every step adds one term to the running score, as
    LightZero's loop does, so the float64 sums are bit-for-bit its sums.
    """
    b, n, _ = board.shape
    flat = board.reshape(b, n * n).to(torch.int8)
    off = torch.full((b, 1), 2, dtype=torch.int8, device=board.device)  # ends a walk
    ext = torch.cat([flat, off], dim=1)
    rays = _rays(n, board.device)
    total = torch.zeros(b, n * n, dtype=torch.float64, device=board.device)
    for d in range(len(DIRECTIONS)):
        score = torch.zeros_like(total)
        count = torch.zeros(b, n * n, dtype=torch.int8, device=board.device)
        for ray in rays[2 * d : 2 * d + 2]:
            weight = torch.full_like(total, UNIT_WEIGHT)
            alive = torch.ones(b, n * n, dtype=torch.bool, device=board.device)
            for step in ray:
                cell = ext[:, step].masked_fill(~alive, 2)  # walks that ended see the edge
                own, empty = cell == 1, cell == 0
                term = torch.where(own, weight, torch.where(empty, EMPTY_SCORE, 0.0))
                score = score + term.masked_fill(cell == -1, OPPONENT_SCORE)
                weight = torch.where(empty, weight / 10, weight)
                alive = own | empty
                count += alive
                if not bool(alive.any()):
                    break
        score = torch.where(count >= MIN_CELLS, score, 0.0)
        score = torch.where(score >= HIGH, HIGH_SCORE, torch.where(score >= MID, MID_SCORE, score))
        total = total + score
    return total.masked_fill(flat != 0, float("-inf")).view(b, n, n)


def expert_move(board: torch.Tensor) -> torch.Tensor:
    """Long (B,): v1's cell (row * N + col) for the +1 player on each board (B, N, N)."""
    b = board.shape[0]
    if not bool((board == 0).flatten(1).any(dim=1).all()):
        raise ValueError("expert_move: every board needs at least one empty cell.")
    scores = cell_scores(torch.cat([board, -board])).flatten(1)
    own, opp = scores[:b], scores[b:]
    own_cell, opp_cell = own.argmax(dim=1), opp.argmax(dim=1)  # first maximal: board order
    own_best, opp_best = own.gather(1, own_cell[:, None]), opp.gather(1, opp_cell[:, None])
    return torch.where(own_best[:, 0] >= opp_best[:, 0], own_cell, opp_cell)
