"""Batched Gomoku instances (black's opening stone) and game states."""

from __future__ import annotations

import dataclasses

import torch

from nco.env import Batch


@dataclasses.dataclass(frozen=True)
class GomokuInstances(Batch):
    """Games to play: the cell (row * N + col) of black's opening stone."""

    opening: torch.Tensor  # (B,) long, cell index in 0..N*N-1


@dataclasses.dataclass(frozen=True)
class GomokuState(Batch):
    """A board seen by the player to move, and the game result so far.

    `board` holds +1 for the stones of the player to move, -1 for the opponent's stones and 0
    for empty cells. States made by `GomokuEnv.reset`/`step` always have white to move; only
    `GomokuEnv.training_batch` may return black-to-move boards (in that same +1 = mover form).
    """

    board: torch.Tensor  # (B, N, N) int8: +1 mover, -1 opponent, 0 empty
    done: torch.Tensor  # (B,) bool, game over (five in a row or full board)
    winner: torch.Tensor  # (B,) int8: +1 white won, -1 black won, 0 no winner (yet)
