"""AlphaZero residual policy network for Gomoku, in LightZero's form (paper C.4).

The authors' Gomoku model is LightZero's AlphaZero net (reference code
`modules/alphazero/alphazero_model.py`, with `num_res_blocks=1, num_channels=32` and its
defaults otherwise). nco builds the same policy path:

- input: two planes from a `GomokuState` board (the stones of the player to move, the
  opponent's stones);
- representation: a 3x3 convolution (no bias) to `channels`, batch norm, ReLU, then `blocks`
  residual blocks;
- prediction: `prediction_blocks` further residual blocks, then the policy head: a 1x1
  convolution (with bias) to `head_channels`, batch norm, ReLU, flatten, and an MLP: a linear
  layer to `head_hidden` units, LayerNorm, ReLU, and a last linear layer to one logit per cell,
  zero-initialised (`zero_init`), so an untrained net plays uniformly.

A residual block is two 3x3 convolutions (no bias) with batch norm, a ReLU between them and
relu(x + f(x)) at the end. LightZero's value head is left out: nothing in nco reads it and it
does not change the logits. nco's earlier form (one block in all, a 2-channel head and one
linear layer) is `prediction_blocks=0, head_channels=2, head_hidden=0, zero_init=False`
(configs/model/gomoku_net_v0.yaml). The linear layers tie the net to one board size. Batch
norm makes outputs depend on the batch in training mode; decode in eval mode.
"""

from __future__ import annotations

from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from nco.problems.gomoku.types import GomokuState


class ConvBN(nn.Sequential):
    """Convolution (same padding) followed by batch norm; in eval mode one convolution with the
    batch norm folded into its weights and bias (faster inference, docs/performance.md). The
    layers keep nn.Sequential's names (`0` conv, `1` norm), so checkpoints load unchanged."""

    def __init__(self, cin: int, cout: int, kernel: int, bias: bool = False) -> None:
        super().__init__(
            nn.Conv2d(cin, cout, kernel, padding=kernel // 2, bias=bias), nn.BatchNorm2d(cout)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            return super().forward(x)
        conv, norm = cast(nn.Conv2d, self[0]), cast(nn.BatchNorm2d, self[1])
        mean, var = norm.running_mean, norm.running_var
        assert mean is not None and var is not None  # BatchNorm2d tracks them by default
        scale = norm.weight * torch.rsqrt(var + norm.eps)
        bias = norm.bias - mean * scale
        if conv.bias is not None:
            bias = bias + conv.bias * scale
        return F.conv2d(x, conv.weight * scale.view(-1, 1, 1, 1), bias, padding=conv.padding)


class ResidualBlock(nn.Module):
    """Two 3x3 conv + batch-norm layers with a skip connection: relu(x + f(x))."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            ConvBN(channels, channels, 3), nn.ReLU(inplace=True), ConvBN(channels, channels, 3)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.body(x))


class GomokuNet(nn.Module):
    """Policy over the N * N cells of a Gomoku board, for the player to move.

    Parameters
    ----------
    board_size
        N; must match the environment's board.
    channels
        Width of the residual trunk (LightZero's Gomoku setting: 32).
    blocks, prediction_blocks
        Residual blocks of the representation and of the prediction part (LightZero: 1 and 1).
    head_channels
        Channels of the policy head's 1x1 convolution (LightZero: 16).
    head_hidden
        Hidden units of the policy MLP (LightZero: 32, with LayerNorm); 0: a single linear
        layer from the flattened head to the logits.
    zero_init
        Zero the last linear layer's weight and bias (LightZero: True).
    """

    def __init__(
        self,
        board_size: int = 9,
        channels: int = 32,
        blocks: int = 1,
        prediction_blocks: int = 1,
        head_channels: int = 16,
        head_hidden: int = 32,
        zero_init: bool = True,
    ) -> None:
        super().__init__()
        for name, value, least in (
            ("board_size", board_size, 5),
            ("channels", channels, 1),
            ("blocks", blocks, 0),
            ("prediction_blocks", prediction_blocks, 0),
            ("head_channels", head_channels, 1),
            ("head_hidden", head_hidden, 0),
        ):
            if value < least:
                raise ValueError(f"GomokuNet: expected {name} >= {least}, got {value}.")
        self.board_size = board_size
        cells = board_size**2
        self.stem = nn.Sequential(ConvBN(2, channels, 3), nn.ReLU(inplace=True))
        self.body = nn.Sequential(*(ResidualBlock(channels) for _ in range(blocks)))
        self.prediction = nn.Sequential(
            *(ResidualBlock(channels) for _ in range(prediction_blocks))
        )
        bias = head_hidden > 0  # LightZero's head convolution has a bias; nco's earlier had none
        self.head = nn.Sequential(
            ConvBN(channels, head_channels, 1, bias=bias), nn.ReLU(inplace=True), nn.Flatten()
        )
        if head_hidden > 0:
            self.mlp: nn.Module = nn.Sequential(
                nn.Linear(head_channels * cells, head_hidden), nn.LayerNorm(head_hidden), nn.ReLU()
            )
            self.logits = nn.Linear(head_hidden, cells)
        else:
            self.mlp = nn.Identity()
            self.logits = nn.Linear(head_channels * cells, cells)
        if zero_init:
            nn.init.zeros_(self.logits.weight)
            nn.init.zeros_(self.logits.bias)
        # Channels-last convolutions: faster inference on a CPU (docs/performance.md).
        # torch's stubs omit Module.to's memory_format overload, which it accepts at runtime.
        self.to(memory_format=torch.channels_last)  # type: ignore[call-overload]

    def planes(self, state: GomokuState) -> torch.Tensor:
        """Float (B, 2, N, N) in the model's dtype: own stones, opponent stones."""
        board = state.board
        if board.shape[1:] != (self.board_size, self.board_size):
            raise ValueError(
                f"GomokuNet: expected boards of {self.board_size}x{self.board_size}, "
                f"got {tuple(board.shape[1:])}."
            )
        dtype = self.logits.weight.dtype
        planes = torch.stack([board == 1, board == -1], dim=1).to(dtype)
        return planes.contiguous(memory_format=torch.channels_last)

    def forward(self, state: GomokuState) -> torch.Tensor:
        """Logits (B, N * N), one per cell (occupied cells are left for the decoder to mask)."""
        x = self.prediction(self.body(self.stem(self.planes(state))))
        return self.logits(self.mlp(self.head(x)))
