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
    TABLE_MAX_N look each cell's direction scores up in a table of line patterns (about 8x
    faster than stepping on 9x9); larger ones step along the walks. Both give LightZero's
    float64 sums bit for bit.
    """
    n = board.shape[-1]
    return _table_scores(board)[0] if n <= TABLE_MAX_N else _stepped_scores(board)


TABLE_MAX_N = 10  # the line tables hold 2 x sum_L L 3^L float64 entries: 4 MB at 9x9, 13 at 10x10


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


def _pair_table(n: int) -> torch.Tensor:
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
    return _direction_score(score, count).flatten()


def _walk_codes(ext: torch.Tensor, ray: torch.Tensor) -> torch.Tensor:
    """Long (C, B): each cell's walk along `ray` as one code: the number L of own or empty
    cells before it stops, which of them are own (bits), and whether an opponent stone stopped
    it; code = 2 (2^L - 1) + 2 bits + opponent. `ext` is (C + 1, B), columns of cells with a
    last row of 2 (the edge); `ray` (steps, C) names the cell k + 1 steps away, or row C."""
    cells = ext[ray]  # (steps, C, B), steps outermost so each step is one contiguous slice
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


@functools.cache
def _lines(n: int, device: torch.device) -> tuple[torch.Tensor, ...]:
    """The board's lines in v1's four directions, each ordered along the direction's second
    walk: Long (lines, N) cell indices (N * N past a line's end), Int32 (lines, N) powers of 3
    (0 past the end), and per direction and cell (4 N * N,) its line, the table offset of its
    line length and position, and its line's length (see `_line_tables`)."""
    offsets = _length_offsets(n)
    cells: list[list[int]] = []
    powers: list[list[int]] = []
    line_of: list[int] = []
    base: list[int] = []
    lengths: list[int] = []
    for _, (dr, dc) in DIRECTIONS:
        owner, where, size = [0] * (n * n), [0] * (n * n), [0] * (n * n)
        for r0 in range(n):
            for c0 in range(n):
                if 0 <= r0 - dr < n and 0 <= c0 - dc < n:
                    continue  # not a line's first cell
                line, r, c = [], r0, c0
                while 0 <= r < n and 0 <= c < n:
                    line.append(r * n + c)
                    r, c = r + dr, c + dc
                for pos, cell in enumerate(line):
                    owner[cell] = len(cells)
                    where[cell] = offsets[len(line)] + pos
                    size[cell] = len(line)
                cells.append(line + [n * n] * (n - len(line)))
                powers.append([3**k for k in range(len(line))] + [0] * (n - len(line)))
        line_of += owner
        base += where
        lengths += size
    as_long = functools.partial(torch.tensor, dtype=torch.long, device=device)
    return (
        as_long(cells),
        torch.tensor(powers, dtype=torch.int32, device=device),
        as_long(line_of),
        as_long(base),
        as_long(lengths),
    )


def _length_offsets(n: int) -> list[int]:
    """Where the table entries of lines of length L = 0 .. N start: L x 3^L entries each."""
    offsets = [0]
    for length in range(n):
        offsets.append(offsets[-1] + length * 3**length)
    return offsets


@functools.cache
def _line_tables(n: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Float64 tables for the +1 player and for the -1 player: the direction score at position
    `pos` of a line of length L whose cells, read as base-3 digits (cell + 1), give `code`, at
    index offset(L) + code * L + pos. Built from the walk-pair table, so bit for bit v1's."""
    pair, codes, offsets = _pair_table(n), _num_codes(n), _length_offsets(n)
    tables = []
    for sign in (1, -1):
        table = torch.zeros(offsets[-1] + n * 3**n, dtype=torch.float64)
        for length in range(1, n + 1):
            code = torch.arange(3**length)
            digits = torch.stack([code // 3**k % 3 for k in range(length)])  # (L, 3^L)
            ext = torch.cat([sign * (digits - 1), torch.full((1, 3**length), 2)]).to(torch.int8)
            pos = torch.arange(length)
            steps = torch.arange(1, n).view(-1, 1)
            back, ahead = pos - steps, pos + steps  # (N - 1, L) cells of the two walks
            first = _walk_codes(ext, torch.where(back >= 0, back, length))
            second = _walk_codes(ext, torch.where(ahead < length, ahead, length))
            score = pair.take(first * codes + second)  # (L, 3^L)
            table[offsets[length] : offsets[length] + length * 3**length] = score.T.flatten()
        tables.append(table.to(device))
    return tables[0], tables[1]


def _table_scores(board: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`cell_scores` of the +1 and of the -1 player, both from one base-3 code per line."""
    b, n, _ = board.shape
    flat, ext = _extended(board)
    cells, powers, line_of, base, length = _lines(n, board.device)
    code = ((ext[:, cells] + 1).int() * powers).sum(-1)  # (B, lines); the edge's 3 x 0 adds 0
    index = (base + code[:, line_of] * length).view(b, len(DIRECTIONS), n * n)
    out = []
    for table in _line_tables(n, board.device):
        score = table.take(index)
        total = score[:, 0] + score[:, 1]  # summed in LightZero's direction order
        for d in range(2, len(DIRECTIONS)):
            total = total + score[:, d]
        out.append(total.masked_fill(flat != 0, float("-inf")).view(b, n, n))
    return out[0], out[1]


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
    if board.shape[-1] <= TABLE_MAX_N:
        own, opp = (view.flatten(1) for view in _table_scores(board))
    else:
        own, opp = _stepped_scores(torch.cat([board, -board])).flatten(1).split(b)
    own_cell, opp_cell = own.argmax(dim=1), opp.argmax(dim=1)  # first maximal: board order
    own_best, opp_best = own.gather(1, own_cell[:, None]), opp.gather(1, opp_cell[:, None])
    return torch.where(own_best[:, 0] >= opp_best[:, 0], own_cell, opp_cell)
