"""LightZero's rule bot v1: each scoring rule on hand-made boards, and a plain-loop port of the
published rules as an oracle on random boards."""

from __future__ import annotations

import random

import pytest
import torch

from nco.problems.gomoku import bot_v1
from nco.problems.gomoku.bot_v1 import cell_scores, expert_move

N = 9


def board(own: list[tuple[int, int]], opp: list[tuple[int, int]] = ()) -> torch.Tensor:
    """A (1, N, N) board: +1 own stones, -1 opponent stones."""
    b = torch.zeros(1, N, N)
    for r, c in own:
        b[0, r, c] = 1
    for r, c in opp:
        b[0, r, c] = -1
    return b


def walk(b: list[list[int]], r: int, c: int, dr: int, dc: int, score: float) -> tuple[float, int]:
    """One outward walk by the rules in the issue (own +w, empty +1 and w/10, opponent -5),
    continuing `score` as LightZero does across a direction's two walks."""
    count, w = 0, 100.0
    r, c = r + dr, c + dc
    while 0 <= r < N and 0 <= c < N:
        v = b[r][c]
        if v == 1:
            score += w
        elif v == 0:
            score += 1
            w = w / 10
        else:
            score -= 5
            break
        count += 1
        r, c = r + dr, c + dc
    return score, count


def oracle(b: list[list[int]], r: int, c: int) -> float:
    total = 0.0
    directions = (((-1, 0), (1, 0)), ((0, -1), (0, 1)), ((-1, -1), (1, 1)), ((1, -1), (-1, 1)))
    for first, second in directions:
        s, c1 = walk(b, r, c, *first, 0.0)
        s, c2 = walk(b, r, c, *second, s)
        s = s if c1 + c2 >= 4 else 0
        total += 2000 if s >= 390 else 1000 if s >= 302 else s
    return total


def test_hand_made_three_in_a_row() -> None:
    """Cell (4, 4) right of own stones (4, 1..3): left walk 300 + 1 (edge cell), right walk four
    empties 1 + 1 + 1 + 1: 305 >= 302 -> 1000; the three other directions 8 empties each."""
    scores = cell_scores(board([(4, 1), (4, 2), (4, 3)]))
    assert float(scores[0, 4, 4]) == 1000 + 8 + 8 + 8


def test_empty_cells_divide_the_unit_weight() -> None:
    """Own stone after one empty counts 10, after two 1: cell (0, 0) with stones at (0, 2) and
    (0, 4): right walk 1 + 10 + 1 + 1 + 1 + 0.001 + ...; the other directions hit the edge."""
    b = board([(0, 2), (0, 4)])
    # walk right from (0, 0): (0,1) empty +1 (w 10); (0,2) own +10; (0,3) empty +1 (w 1);
    # (0,4) own +1; (0,5..8) four empties +1 each
    expected_row = 1 + 10 + 1 + 1 + 4
    # down the column and the diagonal: eight empties each; the anti-diagonal is off the board
    assert float(cell_scores(b)[0, 0, 0]) == expected_row + 8 + 8 + 0


def test_opponent_stone_subtracts_five_and_stops() -> None:
    """An opponent stone right next to the cell: -5 and the walk ends there."""
    b = board([], [(4, 5)])
    b[0, 4, 6] = 1  # behind the blocker: never reached
    assert float(cell_scores(b)[0, 4, 4]) == (4 - 5) + 8 + 8 + 8


def test_fewer_than_four_cells_walked_scores_zero() -> None:
    """A corner cell boxed in by opponent stones walks under 4 cells in every direction."""
    b = board([], [(0, 3), (3, 0), (3, 3)])
    b[0, 0, 1] = 1
    scores = cell_scores(b)
    # row: right walk (0,1) own +100, (0,2) +1, (0,3) opponent -5: 3 cells... count 2 -> 0
    assert float(scores[0, 0, 0]) == 0


@pytest.mark.parametrize(("stones", "expected"), [(4, 2000 + 8 + 4 + 4), (3, 1000 + 8 + 0 + 5)])
def test_thresholds(stones: int, expected: float) -> None:
    """Cell (8, k) right of k own stones on the bottom row: 100 k + (8 - k) empties is 404 for
    four (>= 390: 2000) and 305 for three (>= 302: 1000); column 8 empties; the up-left
    diagonal walks k cells (0 under 4), the up-right one 8 - k."""
    b = board([(8, c) for c in range(stones)])
    assert float(cell_scores(b)[0, 8, stones]) == expected


def test_random_boards_match_the_plain_port() -> None:
    """Every empty cell of 40 random boards scores as the loop implementation of the rules."""
    rng = random.Random(0)
    boards = []
    for _ in range(40):
        cells = [[0] * N for _ in range(N)]
        for _ in range(rng.randint(0, 40)):
            cells[rng.randrange(N)][rng.randrange(N)] = rng.choice((1, -1))
        boards.append(cells)
    scores = cell_scores(torch.tensor(boards, dtype=torch.float64))
    for i, cells in enumerate(boards):
        for r in range(N):
            for c in range(N):
                if cells[r][c] == 0:
                    assert float(scores[i, r, c]) == oracle(cells, r, c), (i, r, c)


def test_blocks_only_when_the_opponent_scores_higher() -> None:
    """With an opponent four and no own threat the bot blocks it; with equal best scores it
    plays its own cell; ties go to the first cell in board order."""
    four = board([(0, 0)], [(4, 1), (4, 2), (4, 3), (4, 4)])
    assert int(expert_move(four)[0]) in (4 * N + 0, 4 * N + 5)
    mirror = board([(4, 1), (4, 2), (4, 3), (4, 4)], [(0, 8)])
    own = cell_scores(mirror)[0].flatten()
    move = int(expert_move(mirror)[0])
    assert move in (4 * N + 0, 4 * N + 5) and own[move] == own.max()
    empty = torch.zeros(1, N, N)
    scores = cell_scores(empty)[0].flatten()
    assert int(expert_move(empty)[0]) == int(torch.nonzero(scores == scores.max())[0])


@pytest.mark.parametrize("n", [5, 7, 9, 10])
def test_table_lookup_equals_the_stepped_walks_bit_for_bit(n: int) -> None:
    """Boards up to TABLE_MAX_N score by table lookup, larger ones by stepping along the walks:
    both give the same float64 scores on random boards from empty to full, for both players."""
    g = torch.Generator().manual_seed(n)
    stones = torch.randint(-1, 2, (400, n, n), generator=g).float()
    density = torch.linspace(0, 1, 400).view(-1, 1, 1)
    boards = stones * (torch.rand(400, n, n, generator=g) < density)
    own, opponent = bot_v1._table_scores(boards)
    assert torch.equal(own, bot_v1._stepped_scores(boards))
    assert torch.equal(opponent, bot_v1._stepped_scores(-boards))
    assert n <= bot_v1.TABLE_MAX_N  # cell_scores takes the table here
