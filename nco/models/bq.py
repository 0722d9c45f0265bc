"""BQ-NCO policy for the TSP tail sub-problem (Drakulic et al. 2023; Gumbeldore paper D.2.2).

Each call embeds the origin, the destination and the remaining nodes of a `TSPState`, marks the
origin and destination with learned vectors, runs a ReZero transformer without positional
encoding and scores every remaining node with a linear head.
"""

from __future__ import annotations

import torch
from torch import nn

from nco.models.layers import ReZeroEncoder, body_precision, check_layer_options
from nco.problems.tsp.types import TSPState

PRECISIONS = ("fp32", "bf16")


class BQPolicy(nn.Module):
    """Transformer policy over the tokens [origin, dest, remaining...] of a TSP state.

    Parameters
    ----------
    dim, layers, heads, ff_dim
        Latent size, number of ReZero layers, attention heads and feed-forward width.
    precision
        "fp32", or "bf16" to run the body under bfloat16 autocast (logits stay float32).
    knn
        If set, only the `knn` remaining nodes nearest to the origin become tokens when more
        than `knn` remain; the others get -inf. Keeps large instances within memory.
    activation, rezero
        The layers' form (`nco.models.layers.ReZeroLayer`): the paper's "gelu" / "shared" by
        default, "relu" / "separate" for checkpoints before format 2.
    """

    def __init__(
        self,
        dim: int = 128,
        layers: int = 9,
        heads: int = 8,
        ff_dim: int = 512,
        precision: str = "fp32",
        knn: int | None = None,
        activation: str = "gelu",
        rezero: str = "shared",
    ) -> None:
        super().__init__()
        check_layer_options("BQPolicy", activation, rezero)
        for name, value in (("dim", dim), ("layers", layers), ("heads", heads), ("ff_dim", ff_dim)):
            if value < 1:
                raise ValueError(f"BQPolicy: expected {name} >= 1, got {value}.")
        if dim % heads:
            raise ValueError(f"BQPolicy: expected dim divisible by heads, got {dim} and {heads}.")
        if precision not in PRECISIONS:
            raise ValueError(f"BQPolicy: expected precision in {PRECISIONS}, got {precision!r}.")
        if knn is not None and knn < 1:
            raise ValueError(f"BQPolicy: expected knn >= 1 or None, got {knn}.")
        self.precision = precision
        self.knn = knn
        self.embed = nn.Linear(2, dim)
        self.markers = nn.Parameter(torch.randn(2, dim))  # origin, destination
        self.encoder = ReZeroEncoder(dim, heads, ff_dim, layers, activation, rezero)
        self.head = nn.Linear(dim, 1)

    def candidates(self, state: TSPState) -> torch.Tensor:
        """Long[B, k]: the remaining nodes that become tokens (all, or the knn nearest)."""
        remaining = state.remaining
        if self.knn is None or remaining.shape[1] <= self.knn:
            return remaining
        rows = torch.arange(state.batch_size, device=remaining.device)
        here = state.coords[rows, state.origin].unsqueeze(1)
        pts = state.coords.gather(1, remaining.unsqueeze(-1).expand(-1, -1, 2))
        dist = (pts - here).square().sum(-1)
        nearest = dist.topk(self.knn, dim=1, largest=False).indices
        return remaining.gather(1, nearest)

    def forward(self, state: TSPState) -> torch.Tensor:
        """Float32 logits (B, n): head scores on the candidate nodes, -inf everywhere else."""
        coords = state.coords
        b, n, _ = coords.shape
        cand = self.candidates(state)
        nodes = torch.cat([state.origin.view(-1, 1), state.dest.view(-1, 1), cand], dim=1)
        pts = coords.gather(1, nodes.unsqueeze(-1).expand(-1, -1, 2))
        with body_precision(coords.device.type, self.precision):
            x = self.embed(pts.to(self.embed.weight.dtype))
            x = torch.cat([x[:, :2] + self.markers.to(x.dtype), x[:, 2:]], dim=1)
            scores = self.head(self.encoder(x)[:, 2:]).squeeze(-1)
        logits = torch.full((b, n), float("-inf"), dtype=torch.float32, device=coords.device)
        return logits.scatter(1, cand, scores.float())
