"""AlphaZero-style residual policy network for Gomoku (paper C.4, LightZero's AlphaZero model).

Input: two planes from a `GomokuState` board (the stones of the player to move, the opponent's
stones). Body: a 3x3 convolution stem and `blocks` residual blocks of two 3x3 convolutions, with
batch norm and ReLU. Policy head (AlphaZero): a 1x1 convolution to `head_channels`, batch norm,
ReLU and a linear layer to one logit per cell. The linear head ties the net to one board size.
Batch norm makes outputs depend on the batch in training mode; decode in eval mode.
"""

from __future__ import annotations

import torch
from torch import nn

from problems.gomoku.types import GomokuState


def _conv_bn(cin: int, cout: int, kernel: int) -> nn.Sequential:
    """Convolution (same padding, no bias) followed by batch norm."""
    return nn.Sequential(
        nn.Conv2d(cin, cout, kernel, padding=kernel // 2, bias=False), nn.BatchNorm2d(cout)
    )


class ResidualBlock(nn.Module):
    """Two 3x3 conv + batch-norm layers with a skip connection: relu(x + f(x))."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            _conv_bn(channels, channels, 3), nn.ReLU(), _conv_bn(channels, channels, 3)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.body(x))


class GomokuNet(nn.Module):
    """Policy over the N * N cells of a Gomoku board, for the player to move.

    Parameters
    ----------
    board_size
        N; must match the environment's board.
    channels, blocks
        Width and number of residual blocks of the body (LightZero's Gomoku setting: 32, 1).
    head_channels
        Channels of the policy head's 1x1 convolution (AlphaZero uses 2).
    """

    def __init__(
        self, board_size: int = 9, channels: int = 32, blocks: int = 1, head_channels: int = 2
    ) -> None:
        super().__init__()
        for name, value, least in (
            ("board_size", board_size, 5),
            ("channels", channels, 1),
            ("blocks", blocks, 0),
            ("head_channels", head_channels, 1),
        ):
            if value < least:
                raise ValueError(f"GomokuNet: expected {name} >= {least}, got {value}.")
        self.board_size = board_size
        self.stem = nn.Sequential(_conv_bn(2, channels, 3), nn.ReLU())
        self.body = nn.Sequential(*(ResidualBlock(channels) for _ in range(blocks)))
        self.head = nn.Sequential(_conv_bn(channels, head_channels, 1), nn.ReLU(), nn.Flatten())
        self.logits = nn.Linear(head_channels * board_size**2, board_size**2)

    def planes(self, state: GomokuState) -> torch.Tensor:
        """Float (B, 2, N, N) in the model's dtype: own stones, opponent stones."""
        board = state.board
        if board.shape[1:] != (self.board_size, self.board_size):
            raise ValueError(
                f"GomokuNet: expected boards of {self.board_size}x{self.board_size}, "
                f"got {tuple(board.shape[1:])}."
            )
        dtype = self.logits.weight.dtype
        return torch.stack([board == 1, board == -1], dim=1).to(dtype)

    def forward(self, state: GomokuState) -> torch.Tensor:
        """Logits (B, N * N), one per cell (occupied cells are left for the decoder to mask)."""
        x = self.body(self.stem(self.planes(state)))
        return self.logits(self.head(x))
