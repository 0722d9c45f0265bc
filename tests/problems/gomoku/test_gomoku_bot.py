"""The rule-based bot: scores and moves against a slow reference, and the must-play situations."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gomoku_reference import board_from, cell_score, five_in_row, reference_move

from nco.problems.gomoku.bot import cell_scores, expert_move, has_five


def random_boards(count: int, seed: int, size: int | None = None) -> list[np.ndarray]:
    """Boards of `size` (default: random in 5..10) with a random mix of stones and empties."""
    rng = np.random.default_rng(seed)
    boards = []
    for _ in range(count):
        n = size or int(rng.integers(5, 11))
        board = rng.integers(-1, 2, size=(n, n))
        board[rng.random((n, n)) < rng.uniform(0.3, 0.95)] = 0
        board[rng.integers(n), rng.integers(n)] = 0  # at least one empty cell
        boards.append(board)
    return boards


def symmetries(board: torch.Tensor) -> list[tuple[torch.Tensor, object]]:
    """The 8 square symmetries of a (1, N, N) board, each with its map on cells (r, c)."""
    n = board.shape[-1]
    out = []
    for k in range(4):
        for flip in (False, True):
            b = board.flip(-1) if flip else board
            b = torch.rot90(b, k, dims=(1, 2))

            def cell_map(r: int, c: int, k: int = k, flip: bool = flip) -> tuple[int, int]:
                if flip:
                    c = n - 1 - c
                for _ in range(k):  # rot90 counter-clockwise: (r, c) -> (n - 1 - c, r)
                    r, c = n - 1 - c, r
                return r, c

            out.append((b, cell_map))
    return out


def test_cell_scores_match_reference() -> None:
    """The convolutional scorer equals the loop-based reading of the rules on random boards."""
    for board in random_boards(40, seed=0):
        got = cell_scores(torch.tensor(board, dtype=torch.int8)[None])[0].numpy()
        n = board.shape[0]
        want = [
            [cell_score(board, r, c) if board[r, c] == 0 else -1 for c in range(n)]
            for r in range(n)
        ]
        np.testing.assert_array_equal(got, np.array(want))


def test_expert_move_matches_reference_decision_batched() -> None:
    """Batched moves equal the reference attack-or-block decision with its tie-breaking."""
    boards = random_boards(30, seed=1, size=7)
    batch = torch.tensor(np.stack(boards), dtype=torch.int8)
    got = expert_move(batch).tolist()
    assert got == [reference_move(b) for b in boards]


def test_has_five_matches_reference() -> None:
    """Win detection agrees with a direct run-length scan on random dense boards."""
    for board in random_boards(80, seed=2):
        got = bool(has_five(torch.tensor(board, dtype=torch.int8)[None])[0])
        assert got == five_in_row(board)


@pytest.mark.parametrize(
    "cells",
    [
        [(0, c) for c in range(4, 9)],  # row, touching the right edge
        [(r, 0) for r in range(0, 5)],  # column, from the top-left corner
        [(r, r) for r in range(4, 9)],  # diagonal into the bottom-right corner
        [(r, 8 - r) for r in range(0, 5)],  # anti-diagonal from the top-right corner
        [(8 - r, r) for r in range(0, 5)],  # anti-diagonal from the bottom-left corner
        [(4, c) for c in range(2, 8)],  # six in a row: overlines win
    ],
)
def test_has_five_all_directions_and_edges(cells: list[tuple[int, int]]) -> None:
    """Five (or more) in each direction wins, also along the edges; four does not."""
    board = torch.zeros(1, 9, 9, dtype=torch.int8)
    for r, c in cells[:4]:
        board[0, r, c] = 1
    assert not bool(has_five(board)[0])
    for r, c in cells:
        board[0, r, c] = 1
    assert bool(has_five(board)[0])
    assert not bool(has_five(-board)[0])


def test_five_broken_by_opponent_is_not_a_win() -> None:
    """XXOXXX holds no five."""
    board = board_from([".....", ".....", "XXOXX", ".....", "....."])
    assert not bool(has_five(board)[0])


def test_bot_completes_its_four_before_blocking() -> None:
    """With its own four and the opponent's open four on the board, the bot wins."""
    board = board_from(
        [
            ".........",
            "OXXXX....",
            ".........",
            ".OOOO....",
            ".........",
            ".........",
            "X........",
            ".........",
            ".........",
        ]
    )
    assert int(expert_move(board)[0]) == 1 * 9 + 5


def test_bot_completes_a_broken_four() -> None:
    """XX.XX: the bot fills the gap and wins."""
    board = board_from(
        [".........", "..XX.XX..", "........."] + ["." * 9] * 4 + ["O" * 3 + "." * 6] * 2
    )
    assert int(expert_move(board)[0]) == 1 * 9 + 4


def test_bot_blocks_a_four() -> None:
    """The opponent's four with one open end is blocked at that end, in all 8 orientations."""
    board = board_from(["." * 9, "XOOOO....", "." * 9, "." * 9, "......X..", *["." * 9] * 4])
    for sym, cell_map in symmetries(board):
        assert int(expert_move(sym)[0]) == np.ravel_multi_index(cell_map(1, 5), (9, 9))


def test_bot_blocks_an_open_four_at_an_end() -> None:
    """Against an open four (lost anyway) the bot still takes one of its two ends."""
    board = board_from(["." * 9, "." * 9, "..OOOO...", "." * 9, "X" + "." * 8, *["." * 9] * 4])
    assert int(expert_move(board)[0]) in (2 * 9 + 1, 2 * 9 + 6)


def test_bot_blocks_an_open_three() -> None:
    """An open three is blocked at one of its ends, in all 8 orientations."""
    board = board_from(["." * 9] * 4 + ["...OOO..."] + ["." * 9] * 3 + ["X" + "." * 8])
    for sym, cell_map in symmetries(board):
        ends = {np.ravel_multi_index(cell_map(4, c), (9, 9)) for c in (2, 6)}
        assert int(expert_move(sym)[0]) in ends


def test_bot_blocks_a_broken_three_in_the_gap() -> None:
    """.OO.O. is blocked in the gap: that is where the opponent would make an open four."""
    board = board_from(["." * 9] * 3 + ["..OO.O..."] + ["." * 9] * 4 + ["X" + "." * 8])
    assert int(expert_move(board)[0]) == 3 * 9 + 4


def test_bot_first_move_ties_go_to_the_centre_then_smallest_index() -> None:
    """On empty boards the centre scores best (most windows); on 6x6 the four central cells tie
    and the smallest index (2, 2) wins."""
    assert expert_move(torch.zeros(1, 5, 5, dtype=torch.int8)).item() == 12
    assert expert_move(torch.zeros(1, 9, 9, dtype=torch.int8)).item() == 40
    assert expert_move(torch.zeros(1, 6, 6, dtype=torch.int8)).item() == 14


def test_expert_move_rejects_full_board() -> None:
    """A board without an empty cell has no move."""
    with pytest.raises(ValueError, match="empty cell"):
        expert_move(torch.ones(1, 5, 5, dtype=torch.int8))
