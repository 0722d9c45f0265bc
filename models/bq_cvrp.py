"""BQ-NCO policy for the CVRP tail sub-problem (Drakulic et al. 2023; Gumbeldore paper D.3.2).

Each call embeds the origin, the depot and the remaining customers of a `CVRPState` as 4-d
vectors (x, y, demand / capacity, free capacity / capacity), marks the origin and the depot with
learned vectors, runs a ReZero transformer without positional encoding and gives every remaining
customer two logits: go there directly, or via the depot.
"""

from __future__ import annotations

import torch
from torch import nn

from models.layers import ReZeroEncoder, check_layer_options
from problems.cvrp.env import action_mask
from problems.cvrp.types import CVRPState

PRECISIONS = ("fp32", "bf16")


def nearest_remaining(
    coords: torch.Tensor, origin: torch.Tensor, remaining: torch.Tensor, knn: int | None
) -> torch.Tensor:
    """Long (B, k): all `remaining` nodes, or the `knn` nearest to `origin` when more remain.

    `coords` (B, m, 2), `origin` Long (B,), `remaining` Long (B, r).
    """
    if knn is None or remaining.shape[1] <= knn:
        return remaining
    rows = torch.arange(coords.shape[0], device=coords.device)
    here = coords[rows, origin].unsqueeze(1)
    pts = coords.gather(1, remaining.unsqueeze(-1).expand(-1, -1, 2))
    nearest = (pts - here).square().sum(-1).topk(knn, dim=1, largest=False).indices
    return remaining.gather(1, nearest)


def scatter_pairs(
    scores: torch.Tensor, customers: torch.Tensor, num_customers: int
) -> torch.Tensor:
    """Float32 (B, 2n) logits from per-customer (direct, via) `scores` (B, k, 2); -inf elsewhere.

    `customers` Long (B, k) are 1-based node indices; customer c owns actions 2 (c - 1) + {0, 1}.
    """
    b = scores.shape[0]
    idx = (2 * (customers - 1)).unsqueeze(-1) + torch.arange(2, device=customers.device)
    out = torch.full((b, 2 * num_customers), float("-inf"), device=scores.device)
    return out.scatter(1, idx.flatten(1), scores.float().flatten(1))


def check_sizes(owner: str, precision: str, knn: int | None, **sizes: int) -> None:
    """ValueError unless every size is >= 1, precision is known and knn is None or >= 1."""
    for name, value in sizes.items():
        if value < 1:
            raise ValueError(f"{owner}: expected {name} >= 1, got {value}.")
    if precision not in PRECISIONS:
        raise ValueError(f"{owner}: expected precision in {PRECISIONS}, got {precision!r}.")
    if knn is not None and knn < 1:
        raise ValueError(f"{owner}: expected knn >= 1 or None, got {knn}.")


class BQCVRPPolicy(nn.Module):
    """Transformer policy over the tokens [origin, depot, remaining customers] of a CVRP state.

    Parameters
    ----------
    dim, layers, heads, ff_dim
        Latent size, number of ReZero layers, attention heads and feed-forward width
        (paper: 192, 9, 12, 512).
    precision
        "fp32", or "bf16" to run the body under bfloat16 autocast (logits stay float32).
    knn
        If set, only the `knn` remaining customers nearest to the origin become tokens when more
        than `knn` remain; the others get -inf (paper D.3.3 uses 250 at inference).
    """

    def __init__(
        self,
        dim: int = 192,
        layers: int = 9,
        heads: int = 12,
        ff_dim: int = 512,
        precision: str = "fp32",
        knn: int | None = None,
        activation: str = "gelu",
        rezero: str = "shared",
    ) -> None:
        super().__init__()
        check_layer_options("BQCVRPPolicy", activation, rezero)
        check_sizes(
            "BQCVRPPolicy", precision, knn, dim=dim, layers=layers, heads=heads, ff_dim=ff_dim
        )
        if dim % heads:
            raise ValueError(f"BQCVRPPolicy: expected dim divisible by heads, got {dim}, {heads}.")
        self.precision = precision
        self.knn = knn
        self.embed = nn.Linear(4, dim)
        self.markers = nn.Parameter(torch.randn(2, dim))  # origin, depot
        self.encoder = ReZeroEncoder(dim, heads, ff_dim, layers, activation, rezero)
        self.head = nn.Linear(dim, 2)  # direct, via depot

    def forward(self, state: CVRPState) -> torch.Tensor:
        """Float32 logits (B, 2n): head scores of feasible candidate actions, -inf elsewhere."""
        cand = nearest_remaining(state.coords, state.origin, state.remaining, self.knn)
        depot = torch.zeros_like(state.origin)
        nodes = torch.cat([state.origin.view(-1, 1), depot.view(-1, 1), cand], dim=1)
        pts = state.coords.gather(1, nodes.unsqueeze(-1).expand(-1, -1, 2))
        demand = state.norm_demands.gather(1, nodes)
        demand[:, :2] = 0.0  # origin (already served) and depot carry no demand
        free = state.norm_free.view(-1, 1).expand_as(demand)
        feats = torch.cat([pts, demand.unsqueeze(-1), free.unsqueeze(-1)], dim=-1)
        on = self.precision == "bf16"
        with torch.autocast(state.coords.device.type, torch.bfloat16, enabled=on):
            x = self.embed(feats.to(self.embed.weight.dtype))
            x = torch.cat([x[:, :2] + self.markers.to(x.dtype), x[:, 2:]], dim=1)
            scores = self.head(self.encoder(x)[:, 2:])
        logits = scatter_pairs(scores, cand, state.num_customers)
        return logits.masked_fill(~action_mask(state), float("-inf"))
