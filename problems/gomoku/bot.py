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

# Each line kernel marks the five cells of a window, anchored at the top-left of its 5 x 5 box:
# a row, a column, a diagonal, an anti-diagonal.
_LINES = (
    [(0, i) for i in range(WINDOW)],
    [(i, 0) for i in range(WINDOW)],
    [(i, i) for i in range(WINDOW)],
    [(i, WINDOW - 1 - i) for i in range(WINDOW)],
)
# Per-window features, by window sum: a count code (own stones 2 -> 1, 3 -> 8, 4 -> 64, so the
# sum over the five windows through a cell packs three counts < 8) and the weight 4**own.
_COUNT_CODE = [0, 0, 1, 8, 64] + [0] * (MAX_SUM - 4)
_WEIGHT = [4**k for k in range(WINDOW + 1)] + [0] * (MAX_SUM - WINDOW)
_FEATURES = 4  # count code, weight, four * position, four * position**2


@functools.lru_cache(maxsize=8)
def _kernels(device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Convolution weights and the feature table, per device.

    `lines` (4, 1, 5, 5): one window kernel per direction. `windows` (8, 3, 5, 5): from the
    planes (code, empty * column, empty * row), the four window sums of the code, then each
    window's summed line position of its empties (the column for a row, the row otherwise).
    `gather` (16, 1, 5, 5): the mirrored kernels that add up a feature over the five windows
    through a cell. `table` (2, MAX_SUM + 1): per-window features by window sum.
    """
    lines = torch.zeros(len(_LINES), 1, WINDOW, WINDOW, device=device)
    for d, cells in enumerate(_LINES):
        for r, c in cells:
            lines[d, 0, r, c] = 1.0
    windows = torch.zeros(2 * len(_LINES), 3, WINDOW, WINDOW, device=device)
    windows[: len(_LINES), 0] = lines[:, 0]
    windows[len(_LINES), 1] = lines[0, 0]
    windows[len(_LINES) + 1 :, 2] = lines[1:, 0]
    gather = lines.flip(-1, -2).repeat_interleave(_FEATURES, dim=0).contiguous()
    table = torch.tensor([_COUNT_CODE, _WEIGHT], dtype=torch.float32, device=device)
    return lines, windows, gather, table


def _pad(planes: torch.Tensor, value: float) -> torch.Tensor:
    """Float (B, C, N, N) -> (B, C, N + 8, N + 8), padded by 4 cells of `value` on every side."""
    return F.pad(planes.to(torch.float32), (WINDOW - 1,) * 4, value=value)


def has_five(board: torch.Tensor) -> torch.Tensor:
    """Bool (B,): the +1 player has five or more in a row in some direction."""
    sums = F.conv2d(_pad((board == 1).unsqueeze(1), 0.0), _kernels(board.device)[0])
    return (sums == WINDOW).flatten(1).any(dim=1)


def cell_scores(board: torch.Tensor) -> torch.Tensor:
    """Long (B, N, N): the +1 player's score for playing each cell (module docstring); -1 where
    occupied.

    Works on windows: a convolution sums each window of five (own = 1, empty = 0, opponent or
    edge = 6), per-window features come from a lookup table, and a depthwise convolution adds
    up the features of the five windows through each cell. Completion cells are told apart by
    the summed line position of each four-window's empties (the cell itself is common to all):
    they are all one cell exactly when count * sum(p**2) == sum(p)**2.
    """
    b, n, _ = board.shape
    _, windows, gather, table = _kernels(board.device)
    empty = board == 0
    code = torch.where(board == 1, 1.0, torch.where(empty, 0.0, float(BLOCKED)))
    idx = torch.arange(n, device=board.device, dtype=torch.float32)
    positions = torch.stack([empty * idx.view(1, -1), empty * idx.view(-1, 1)], dim=1)
    planes = torch.cat([_pad(code.unsqueeze(1), BLOCKED), _pad(positions, 0.0)], dim=1)
    out = F.conv2d(planes, windows)  # (B, 8, N + 4, N + 4): per window
    sums, pos = out[:, : len(_LINES)].round().long(), out[:, len(_LINES) :]
    four_pos = torch.where(sums == 3, pos, 0.0)
    feats = torch.stack([table[0][sums], table[1][sums], four_pos, four_pos * pos], dim=2)
    per_cell = F.conv2d(feats.flatten(1, 2), gather, groups=gather.shape[0])
    counts, base, s1, s2 = per_cell.round().view(b, len(_LINES), _FEATURES, n, n).unbind(2)
    counts = counts.long()
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
    score = (bonus + base.long()).sum(dim=1)
    return torch.where(empty, score, -1)


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
