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

    `board` holds +1 (the scored player), -1 (the opponent) and 0 (empty). Boards up to
    TABLE_MAX_N look each direction's score up in a table of walk pairs (about 2x faster on
    9x9); larger ones step along the walks. Both give LightZero's float64 sums bit for bit.
    """
    n = board.shape[-1]
    return _table_scores(board) if n <= TABLE_MAX_N else _stepped_scores(board)


TABLE_MAX_N = 10  # the pair table has (2 (2^N - 1))^2 float64 entries: 8 MB at 9x9, 33 at 10x10


def _extended(board: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Int8 (B, N * N) flat boards, and the same with a last column of 2 that ends a walk (the
    cell the rays name past the board edge)."""
    b, n, _ = board.shape
    flat = board.reshape(b, n * n).to(torch.int8)
    edge = torch.full((b, 1), 2, dtype=torch.int8, device=board.device)
    return flat, torch.cat([flat, edge], dim=1)


def _direction_score(score: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """A direction's summed walks as v1 counts them: 0 unless MIN_CELLS cells were walked, then
    the HIGH / MID thresholds."""
    score = torch.where(count >= MIN_CELLS, score, 0.0)
    return torch.where(score >= HIGH, HIGH_SCORE, torch.where(score >= MID, MID_SCORE, score))


def _num_codes(n: int) -> int:
    """Walk codes on an N x N board: 2^L own/empty patterns x 2 stops for L = 0 .. N - 1."""
    return 2 * (2**n - 1)


@functools.cache
def _pair_table(n: int, device: torch.device) -> torch.Tensor:
    """Float64 (K * K,): the thresholded direction score of every (first walk, second walk)
    pair of walk codes (see `_walk_codes`), summed term by term in LightZero's order."""
    steps, codes = n - 1, _num_codes(n)
    terms = torch.zeros(codes, steps + 1, dtype=torch.float64)
    length = torch.zeros(codes, dtype=torch.long)
    for cells in range(steps + 1):
        for own in range(2**cells):
            for opponent in (0, 1):
                code = 2 * (2**cells - 1) + 2 * own + opponent
                weight, row = UNIT_WEIGHT, []
                for k in range(cells):
                    if own >> k & 1:
                        row.append(weight)
                    else:
                        row.append(EMPTY_SCORE)
                        weight = weight / 10
                if opponent:
                    row.append(OPPONENT_SCORE)
                terms[code, : len(row)] = torch.tensor(row, dtype=torch.float64)
                length[code] = cells
    first = torch.zeros(codes, dtype=torch.float64)
    for k in range(steps + 1):  # adding the 0.0 padding leaves a sum as it is
        first = first + terms[:, k]
    score = first[:, None].expand(codes, codes)
    for k in range(steps + 1):
        score = score + terms[None, :, k]
    count = length[:, None] + length[None, :]
    return _direction_score(score, count).flatten().to(device)


def _walk_codes(ext: torch.Tensor, ray: torch.Tensor) -> torch.Tensor:
    """Long (N * N, B): each cell's walk along `ray` as one code: the number L of own or empty
    cells before it stops, which of them are own (bits), and whether an opponent stone stopped
    it; code = 2 (2^L - 1) + 2 bits + opponent. `ext` is (N * N + 1, B), boards in columns."""
    cells = ext[ray]  # (N - 1, N * N, B), steps outermost so each step is one contiguous slice
    alive = torch.ones(cells.shape[1:], dtype=torch.bool, device=ext.device)
    opponent = torch.zeros_like(alive)
    length = torch.zeros(cells.shape[1:], dtype=torch.int16, device=ext.device)
    own = torch.zeros_like(length)
    for k in range(cells.shape[0]):
        cell = cells[k]
        is_own = cell == 1
        opponent |= alive & (cell == -1)
        alive &= is_own | (cell == 0)
        length += alive
        own += (is_own & alive) * (1 << k)
    return 2 * ((1 << length.long()) - 1) + 2 * own + opponent


def _table_scores(board: torch.Tensor) -> torch.Tensor:
    """`cell_scores` by table lookup of each direction's two walk codes."""
    b, n, _ = board.shape
    flat, ext = _extended(board)
    ext = ext.T.contiguous()
    rays, table, codes = _rays(n, board.device), _pair_table(n, board.device), _num_codes(n)
    total = torch.zeros(n * n, b, dtype=torch.float64, device=board.device)
    for d in range(len(DIRECTIONS)):
        first, second = (_walk_codes(ext, ray) for ray in rays[2 * d : 2 * d + 2])
        total = total + table.take(first * codes + second)
    return total.T.masked_fill(flat != 0, float("-inf")).view(b, n, n)


def _stepped_scores(board: torch.Tensor) -> torch.Tensor:
    """`cell_scores` by a loop over steps on precomputed ray indices; every step adds one term
    to the running score, as LightZero's loop does."""
    b, n, _ = board.shape
    flat, ext = _extended(board)
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
        total = total + _direction_score(score, count)
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
