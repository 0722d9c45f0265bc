"""Deterministic rule-based Gomoku bot (the paper's opponent, C.4), batched with tensor ops.

In the spirit of LightZero's 'v1' rule bot: every empty cell is scored for the player to move by
scanning the four lines through it, and the bot compares its best attacking cell with the best
cell for the opponent (the threat to block).

Scoring of an empty cell c for one player, per direction: look at the five windows of five
consecutive cells that contain c. A window counts only if it lies on the board and holds no
opponent stone (the opponent's stone or the edge ends the line; a direction without such a
window has no room for five and scores 0). Each counting window adds 4**k, k = own stones in
it; on top, the direction gets the bonus of the best pattern that playing c makes:

- FIVE: some window already holds four own stones (c completes five or more; overlines win);
- OPEN_FOUR: two or more distinct empty cells would then complete five;
- FOUR: exactly one such cell;
- OPEN_THREE: two or more windows hold two own stones (c makes a three that can still become
  an open four, e.g. _XXX_ with room, or the broken _X_XX_).

A cell's score is the sum over the four directions. The bot completes its own five whenever it
can; otherwise it plays its best attacking cell when that score is at least the opponent's best
score at any cell, and else occupies the opponent's best cell (the block). So it blocks a
five-in-waiting (a four) before making threats of its own, and blocks open threes and open fours
at their ends when it has nothing stronger. (LightZero's v1 compares the raw scores only, and
so sometimes blocks a four instead of winning.) Ties between cells go to the cell closest to the
board centre (Euclidean distance), then to the smallest cell index (row * N + col).
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

FIVE = 1_000_000  # above any cell score without a five: 4 * (OPEN_FOUR + 5 * 4**5) < FIVE
OPEN_FOUR = 100_000
FOUR = 10_000
OPEN_THREE = 1_000

WINDOW = 5
BLOCKED = 6  # code of an opponent stone or off-board cell: any window holding one sums >= 6
MAX_SUM = WINDOW * BLOCKED

# The five cells of a window in each direction, relative to the top-left of its 5 x 5 box:
# a row, a column, a diagonal, an anti-diagonal.
_LINES = (
    [(0, i) for i in range(WINDOW)],
    [(i, 0) for i in range(WINDOW)],
    [(i, i) for i in range(WINDOW)],
    [(i, WINDOW - 1 - i) for i in range(WINDOW)],
)
# The mirrored offsets: summing a per-window feature over them collects, for each cell, the
# five windows of that direction that contain it.
_THROUGH = tuple([(WINDOW - 1 - r, WINDOW - 1 - c) for r, c in line] for line in _LINES)
# Per-window features, by window sum: a count code (own stones 2 -> 1, 3 -> 8, 4 -> 64, so the
# sum over the five windows through a cell packs three counts < 8) and the weight 4**own.
_COUNT_CODE = [0, 0, 1, 8, 64] + [0] * (MAX_SUM - 4)
_WEIGHT = [4**k for k in range(WINDOW + 1)] + [0] * (MAX_SUM - WINDOW)


@functools.lru_cache(maxsize=8)
def _tables(device: torch.device) -> torch.Tensor:
    """Int16 (2, MAX_SUM + 1): the count code and the weight of a window, by window sum."""
    return torch.tensor([_COUNT_CODE, _WEIGHT], dtype=torch.int16, device=device)


def _pad(planes: torch.Tensor, value: int) -> torch.Tensor:
    """(B, N, N) -> (B, N + 8, N + 8), padded by 4 cells of `value` on every side."""
    return F.pad(planes, (WINDOW - 1,) * 4, value=value)


def _shift_sum(x: torch.Tensor, cells: list[tuple[int, int]], size: int) -> torch.Tensor:
    """Sum of the `size` x `size` slices of x (..., H, W) starting at each (row, col) offset."""
    out = x[..., cells[0][0] : cells[0][0] + size, cells[0][1] : cells[0][1] + size]
    for r, c in cells[1:]:
        out = out + x[..., r : r + size, c : c + size]
    return out


def has_five(board: torch.Tensor) -> torch.Tensor:
    """Bool (B,): the +1 player has five or more in a row in some direction."""
    n = board.shape[-1]
    own = _pad((board == 1).to(torch.int8), 0)
    return torch.stack(
        [(_shift_sum(own, line, n + WINDOW - 1) == WINDOW).flatten(1).any(dim=1) for line in _LINES]
    ).any(dim=0)


def cell_scores(board: torch.Tensor) -> torch.Tensor:
    """Long (B, N, N): the +1 player's score for playing each cell (module docstring); -1 where
    occupied.

    Works on windows, in int16 with shifted slices: per direction, five slices of the padded
    board (own = 1, empty = 0, opponent or edge = 6) add up to each window's sum, per-window
    features come from a lookup table, and five mirrored slices add up the features of the
    windows through each cell. Completion cells are told apart by the summed line position of
    each four-window's empties (the cell itself is common to all): they are all one cell
    exactly when count * sum(p**2) == sum(p)**2.
    """
    b, n, _ = board.shape
    k = n + WINDOW - 1  # windows per line, edges included
    empty = board == 0
    code = torch.where(board == 1, 1, torch.where(empty, 0, BLOCKED)).to(torch.int16)
    code = _pad(code, BLOCKED)
    # positions p < 2N; sum(p**2) over five windows stays below 2**15 up to N = 32
    idx = torch.arange(n, device=board.device, dtype=torch.int16 if n <= 32 else torch.int32)
    columns, rows = _pad(empty * idx.view(1, -1), 0), _pad(empty * idx.view(-1, 1), 0)
    table = _tables(board.device)
    score = torch.zeros(b, n, n, dtype=torch.int32, device=board.device)
    for d, line in enumerate(_LINES):
        sums = _shift_sum(code, line, k)
        pos = _shift_sum(columns if d == 0 else rows, line, k)  # position along the line
        code_w, weight = table[:, sums.long()].unbind(0)
        four_pos = torch.where(sums == 3, pos, 0)
        counts = _shift_sum(code_w, _THROUGH[d], n)
        s1 = _shift_sum(four_pos, _THROUGH[d], n).int()
        s2 = _shift_sum(four_pos * pos, _THROUGH[d], n).int()
        threes, fours, fives = counts % 8, counts // 8 % 8, counts // 64
        open_four = fours * s2 > s1 * s1  # the fours' completion cells are not all one cell
        bonus = torch.where(
            fives > 0,
            FIVE,
            torch.where(
                open_four,
                OPEN_FOUR,
                torch.where(fours > 0, FOUR, torch.where(threes >= 2, OPEN_THREE, 0)),
            ),
        )
        score += bonus + _shift_sum(weight, _THROUGH[d], n)
    return torch.where(empty, score.long(), -1)


@functools.lru_cache(maxsize=16)
def _tie_rank(n: int, device: torch.device) -> torch.Tensor:
    """Long (n * n,): tie-break rank, smaller = preferred (centre distance, then index)."""
    coord = 2 * torch.arange(n, device=device) - (n - 1)
    dist2 = (coord.view(-1, 1) ** 2 + coord.view(1, -1) ** 2).flatten()
    return dist2 * n * n + torch.arange(n * n, device=device)


def expert_move(board: torch.Tensor) -> torch.Tensor:
    """Long (B,): the bot's cell (row * N + col) for the +1 player on each board (B, N, N)."""
    b, n, _ = board.shape
    empty = (board == 0).flatten(1)
    if not bool(empty.any(dim=1).all()):
        raise ValueError("expert_move: every board needs at least one empty cell.")
    scores = cell_scores(torch.cat([board, -board])).flatten(1)
    attack, block = scores[:b], scores[b:]
    best_attack = attack.max(dim=1).values
    use_attack = (best_attack >= block.max(dim=1).values) | (best_attack >= FIVE)
    score = torch.where(use_attack.unsqueeze(1), attack, block)
    rank = _tie_rank(n, board.device)
    span = int(rank.max()) + 1
    key = torch.where(empty, score * span - rank, torch.iinfo(torch.long).min)
    return key.argmax(dim=1)
