"""LEHD policies (Luo et al. 2023, "Light Encoder and Heavy Decoder"; Gumbeldore paper C.2).

A light encoder (one attention layer) embeds every node of the instance; at each step a heavy
decoder (six attention layers) runs over the tokens [origin, destination, remaining nodes], where
origin and destination pass through their own linear maps, and a linear head scores the remaining
nodes. Layers are plain residual (x + attention, then + feed-forward) without normalization, as
in LEHD, with GELU in the feed-forward as in the Gumbeldore authors' LEHD (tsp/lehd_network.py;
`activation="relu"` is nco's form before checkpoint format 3). The TSP policy is their network
exactly. For the CVRP the encoder sees (x, y, demand / capacity), the destination is the depot,
the origin and depot tokens also see the free capacity, and the head gives each customer two
logits (directly, via the depot); this is nco's own reading of LEHD and differs from the
authors' cvrp/lehd_network.py (a depot projection before the encoder, a capacity embedding
added to every token), so their CVRP-LEHD files cannot be imported. The encoder runs on every
call, so a policy needs nothing but the state; it is the light part.
"""

from __future__ import annotations

import torch
from torch import nn

from nco.models.bq_cvrp import check_sizes, nearest_remaining, scatter_pairs
from nco.models.layers import ACTIVATIONS, MultiHeadAttention, body_precision, check_layer_options
from nco.problems.cvrp.env import action_mask
from nco.problems.cvrp.types import CVRPState
from nco.problems.tsp.types import TSPState


class LEHDLayer(nn.Module):
    """Attention layer with plain residuals and no normalization, as in LEHD."""

    def __init__(self, dim: int, heads: int, ff_dim: int, activation: str = "gelu") -> None:
        super().__init__()
        self.attn = MultiHeadAttention(dim, heads)
        self.ff = nn.Sequential(
            nn.Linear(dim, ff_dim), ACTIVATIONS[activation](), nn.Linear(ff_dim, dim)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(x)
        return x + self.ff(x)


class _LEHD(nn.Module):
    """Encoder, origin / destination maps, decoder and head shared by the TSP and CVRP policies."""

    NODE_FEATURES = 2  # encoder input per node
    CONTEXT = 0  # extra features of the origin and destination tokens
    OUTPUTS = 1  # logits per candidate node

    def __init__(
        self,
        dim: int = 128,
        heads: int = 8,
        ff_dim: int = 512,
        encoder_layers: int = 1,
        decoder_layers: int = 6,
        precision: str = "fp32",
        knn: int | None = None,
        activation: str = "gelu",
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        check_layer_options(owner, activation, "shared")
        check_sizes(
            owner,
            precision,
            knn,
            dim=dim,
            heads=heads,
            ff_dim=ff_dim,
            encoder_layers=encoder_layers,
            decoder_layers=decoder_layers,
        )
        if dim % heads:
            raise ValueError(f"{owner}: expected dim divisible by heads, got {dim}, {heads}.")
        self.precision = precision
        self.knn = knn
        self.embed = nn.Linear(self.NODE_FEATURES, dim)
        self.encoder = nn.ModuleList(
            LEHDLayer(dim, heads, ff_dim, activation) for _ in range(encoder_layers)
        )
        self.origin_map = nn.Linear(dim + self.CONTEXT, dim)
        self.dest_map = nn.Linear(dim + self.CONTEXT, dim)
        self.decoder = nn.ModuleList(
            LEHDLayer(dim, heads, ff_dim, activation) for _ in range(decoder_layers)
        )
        self.head = nn.Linear(dim, self.OUTPUTS)

    def scores(
        self,
        feats: torch.Tensor,
        origin: torch.Tensor,
        dest: torch.Tensor,
        cand: torch.Tensor,
        context: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Head outputs (B, k, outputs) for the candidate nodes `cand` (B, k).

        `feats` (B, m, node_features) describe all nodes; `context` (B, context) is appended to
        the origin and destination embeddings.
        """
        with body_precision(feats.device.type, self.precision):
            h = self.embed(feats.to(self.embed.weight.dtype))
            for layer in self.encoder:
                h = layer(h)
            rows = torch.arange(h.shape[0], device=h.device)
            ends = [h[rows, origin], h[rows, dest]]
            if context is not None:
                ends = [torch.cat([e, context.to(e.dtype)], dim=-1) for e in ends]
            x = torch.cat(
                [
                    self.origin_map(ends[0]).unsqueeze(1),
                    self.dest_map(ends[1]).unsqueeze(1),
                    h.gather(1, cand.unsqueeze(-1).expand(-1, -1, h.shape[-1])),
                ],
                dim=1,
            )
            for layer in self.decoder:
                x = layer(x)
            return self.head(x[:, 2:])


class LEHDTSPPolicy(_LEHD):
    """LEHD for the TSP tail sub-problem: logits (B, n) over the remaining nodes of a TSPState.

    Parameters
    ----------
    dim, heads, ff_dim
        Latent size, attention heads and feed-forward width (LEHD: 128, 8, 512).
    encoder_layers, decoder_layers
        Light encoder and heavy decoder depths (LEHD: 1 and 6).
    precision
        "fp32", or "bf16" for bfloat16 autocast (logits stay float32).
    knn
        If set, only the `knn` remaining nodes nearest to the origin are decoded; others get -inf.
    activation
        Feed-forward activation: "gelu" (the authors' LEHD) or "relu" (before format 3).
    """

    def forward(self, state: TSPState) -> torch.Tensor:
        """Float32 logits (B, n): scores of the candidate remaining nodes, -inf elsewhere."""
        cand = nearest_remaining(state.coords, state.origin, state.remaining, self.knn)
        scores = self.scores(state.coords, state.origin, state.dest, cand).squeeze(-1)
        b, n, _ = state.coords.shape
        logits = torch.full((b, n), float("-inf"), device=state.coords.device)
        return logits.scatter(1, cand, scores.float())


class LEHDCVRPPolicy(_LEHD):
    """LEHD for the CVRP tail sub-problem: logits (B, 2n), two per remaining customer.

    Parameters are those of LEHDTSPPolicy. Infeasible actions (see
    nco.problems.cvrp.env.action_mask) get -inf.
    """

    NODE_FEATURES = 3  # x, y, demand / capacity
    CONTEXT = 1  # free capacity
    OUTPUTS = 2  # directly, via the depot

    def forward(self, state: CVRPState) -> torch.Tensor:
        """Float32 logits (B, 2n): (direct, via depot) scores of feasible candidates, else -inf."""
        cand = nearest_remaining(state.coords, state.origin, state.remaining, self.knn)
        feats = torch.cat([state.coords, state.norm_demands.unsqueeze(-1)], dim=-1)
        depot = torch.zeros_like(state.origin)
        scores = self.scores(feats, state.origin, depot, cand, state.norm_free.unsqueeze(-1))
        logits = scatter_pairs(scores, cand, state.num_customers)
        return logits.masked_fill(~action_mask(state), float("-inf"))
