"""Shared transformer building blocks: ReZero layers on fused attention, ALiBi biases."""

from __future__ import annotations

import contextlib
import dataclasses
import math

import torch
import torch.nn.functional as F
from torch import nn

from nco.hardware import warn_slow_bf16


def body_precision(device_type: str, precision: str) -> contextlib.AbstractContextManager:
    """bfloat16 autocast for a policy of precision "bf16"; no context for "fp32", so that an
    enclosing autocast (Lightning's `bf16-mixed`) still reaches the layers, which
    `torch.autocast(enabled=False)` would switch off."""
    if precision == "bf16":
        warn_slow_bf16(device_type, "policy precision 'bf16'")
        return torch.autocast(device_type, torch.bfloat16)
    return contextlib.nullcontext()


@dataclasses.dataclass(frozen=True)
class Packed:
    """Where packed tokens sit in a (batch, length) sequence layout: token i of a packed
    (N, d) input is position `index[i]` of the flattened (batch * length) layout.

    Lets a layer compute its per-token work (projections, feed-forward) only for the tokens
    whose outputs are read (`JSSPTransformer`'s unscheduled operations); the attention runs
    in the layout, where the absent positions are zero and must be masked as keys.
    """

    index: torch.Tensor  # (N,) long, distinct positions in [0, batch * length)
    batch: int
    length: int

    def scatter(self, values: torch.Tensor, fill: float) -> torch.Tensor:
        """Per-token `values` (N,) laid out as (batch, 1, length, 1), `fill` elsewhere: the
        query-side half of a mask or bias that broadcasts over heads."""
        out = values.new_full((self.batch * self.length,), fill)
        return out.index_copy_(0, self.index, values).view(self.batch, 1, self.length, 1)


class MultiHeadAttention(nn.Module):
    """Multi-head self-attention on `scaled_dot_product_attention` (fused kernels)."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"Expected dim divisible by heads, got dim={dim}, heads={heads}.")
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(
        self, x: torch.Tensor, attn_mask: torch.Tensor | None = None, live: Packed | None = None
    ) -> torch.Tensor:
        """`x` (B, L, d); `attn_mask` bool (True = attend) or additive float, broadcastable to
        (B, heads, L, L). With `live`, `x` holds packed tokens (N, d) and the result too:
        B, L are `live.batch`, `live.length`, and `attn_mask` must mask every position not in
        `live.index` as a key of the live queries."""
        d = x.shape[-1]
        qkv = self.qkv(x)
        if live is None:
            b, n = x.shape[:2]
        else:
            b, n = live.batch, live.length
            qkv = qkv.new_zeros(b * n, 3 * d).index_copy_(0, live.index, qkv)
        q, k, v = qkv.view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if q.device.type == "cpu" and q.dtype == torch.bfloat16 and q.requires_grad:
            y = bf16_cpu_attention(q, k, v, attn_mask)
        else:
            if attn_mask is not None and attn_mask.dtype != torch.bool:
                attn_mask = attn_mask.to(q.dtype)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        if live is None:
            return self.out(y.transpose(1, 2).reshape(b, n, d))
        rows, cols = live.index // n, live.index % n
        return self.out(y[rows, :, cols].reshape(-1, d))


def bf16_cpu_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attn_mask: torch.Tensor | None
) -> torch.Tensor:
    """Attention from two bf16 matrix products with the softmax in float32, for bf16 training
    on a CPU (`MultiHeadAttention` takes it when the inputs need gradients).

    PyTorch's fused CPU attention kernel has a slow bf16 backward while bf16 matrix products
    are fast, so this form trains faster in bf16; it materialises the (B, heads, L, L) scores,
    so decoding, with its larger batches, keeps the fused kernel (numbers: docs/performance.md).
    `attn_mask` as in `MultiHeadAttention.forward`.
    """
    scores = (q @ k.transpose(-1, -2)).float() * q.shape[-1] ** -0.5
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    return torch.softmax(scores, dim=-1).to(q.dtype) @ v


ACTIVATIONS = {"gelu": nn.GELU, "relu": nn.ReLU}
REZERO = ("shared", "separate")


def check_layer_options(owner: str, activation: str, rezero: str) -> None:
    """ValueError naming `owner` for an unknown activation or ReZero form."""
    if activation not in ACTIVATIONS:
        raise ValueError(
            f"{owner}: expected activation in {sorted(ACTIVATIONS)}, got {activation!r}."
        )
    if rezero not in REZERO:
        raise ValueError(f"{owner}: expected rezero in {REZERO}, got {rezero!r}.")


class ReZeroLayer(nn.Module):
    """Transformer encoder layer with ReZero residuals (x + alpha * f(x), alpha starts at 0).

    The paper's form (the authors' RZTX layer) is the default: GELU in the feed-forward and one
    weight `alpha` shared by the attention and feed-forward residuals. `rezero="separate"` gives
    each residual its own weight (`alpha_attn`, `alpha_ff`) and, with `activation="relu"`, is
    the form of nco checkpoints before format 2.
    """

    def __init__(
        self, dim: int, heads: int, ff_dim: int, activation: str = "gelu", rezero: str = "shared"
    ) -> None:
        super().__init__()
        check_layer_options("ReZeroLayer", activation, rezero)
        self.attn = MultiHeadAttention(dim, heads)
        self.ff = nn.Sequential(
            nn.Linear(dim, ff_dim), ACTIVATIONS[activation](), nn.Linear(ff_dim, dim)
        )
        if rezero == "shared":
            self.alpha = nn.Parameter(torch.zeros(1))
        else:
            self.alpha_attn = nn.Parameter(torch.zeros(1))
            self.alpha_ff = nn.Parameter(torch.zeros(1))
        self.rezero = rezero

    def forward(
        self, x: torch.Tensor, attn_mask: torch.Tensor | None = None, live: Packed | None = None
    ) -> torch.Tensor:
        """`x` (B, L, d), or packed tokens (N, d) with `live` (see `MultiHeadAttention`)."""
        shared = self.rezero == "shared"
        x = x + (self.alpha if shared else self.alpha_attn) * self.attn(x, attn_mask, live)
        return x + (self.alpha if shared else self.alpha_ff) * self.ff(x)


class ReZeroEncoder(nn.Module):
    """A stack of `layers` ReZero layers."""

    def __init__(
        self,
        dim: int,
        heads: int,
        ff_dim: int,
        layers: int,
        activation: str = "gelu",
        rezero: str = "shared",
    ) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            ReZeroLayer(dim, heads, ff_dim, activation, rezero) for _ in range(layers)
        )

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, attn_mask)
        return x


def alibi_slopes(heads: int) -> torch.Tensor:
    """Per-head ALiBi slopes 2^(-8 i / heads), i = 1..heads (Press et al. 2022)."""
    return torch.tensor([2 ** (-8 * (i + 1) / heads) for i in range(heads)])


def alibi_bias(length: int, heads: int, device: torch.device | None = None) -> torch.Tensor:
    """Additive attention bias (heads, L, L): -slope * |i - j|, symmetric for encoders."""
    pos = torch.arange(length, device=device)
    dist = (pos.view(1, -1) - pos.view(-1, 1)).abs().float()
    return -alibi_slopes(heads).to(device).view(-1, 1, 1) * dist


def sinusoidal_encoding(
    positions: torch.Tensor, dim: int, interleaved: bool = True
) -> torch.Tensor:
    """Sinusoidal encoding of integer `positions` (...,) into (..., dim), frequencies
    10000^(-2i/dim) (Vaswani et al. 2017).

    `interleaved` puts sin and cos of each frequency side by side (sin, cos, sin, cos, ...), as
    Vaswani et al. and the Gumbeldore authors' JSSP network; False gives all sines, then all
    cosines (nco's JSSP form before checkpoint format 3). An odd `dim` is zero-padded.
    """
    half = dim // 2
    steps = torch.arange(0, 2 * half, 2, device=positions.device, dtype=torch.float)
    angles = positions.unsqueeze(-1).float() * torch.exp(steps * (-math.log(10000.0) / dim))
    if interleaved:
        enc = torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(-2)
    else:
        enc = torch.cat([angles.sin(), angles.cos()], dim=-1)
    return F.pad(enc, (0, dim - 2 * half))
