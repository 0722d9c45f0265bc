"""BQ-NCO policy for the CVRP tail sub-problem (Drakulic et al. 2023; Gumbeldore paper D.3.2).

Each call embeds the depot, the origin and the remaining customers of a `CVRPState` as 4-d
vectors (x, y, demand / capacity, free capacity / capacity), marks the depot and the origin with
learned vectors, runs a ReZero transformer without positional encoding and gives every remaining
customer two logits: go there directly, or via the depot.
"""

from __future__ import annotations

import torch
from torch import nn

from nco.models.layers import ReZeroEncoder, body_precision, check_layer_options
from nco.problems.cvrp.env import action_mask
from nco.problems.cvrp.types import CVRPState

PRECISIONS = ("fp32", "bf16")
FORMS = ("paper", "nco1")


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
    activation, rezero
        The layers' form (`nco.models.layers.ReZeroLayer`).
    form
        "paper" (default): the authors' tokens (cvrp/bq_network.py): [depot, origin, remaining],
        where the origin keeps its demand and, at the depot, the origin token is left out and
        the depot carries both markers (`markers[0]` depot, `markers[1]` origin). "nco1": nco's
        tokens before checkpoint format 3: [origin, depot, remaining], origin demand 0 and an
        origin token even at the depot (`markers[0]` origin, `markers[1]` depot).
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
        form: str = "paper",
    ) -> None:
        super().__init__()
        check_layer_options("BQCVRPPolicy", activation, rezero)
        if form not in FORMS:
            raise ValueError(f"BQCVRPPolicy: expected form in {FORMS}, got {form!r}.")
        check_sizes(
            "BQCVRPPolicy", precision, knn, dim=dim, layers=layers, heads=heads, ff_dim=ff_dim
        )
        if dim % heads:
            raise ValueError(f"BQCVRPPolicy: expected dim divisible by heads, got {dim}, {heads}.")
        self.precision = precision
        self.knn = knn
        self.form = form
        self.embed = nn.Linear(4, dim)
        self.markers = nn.Parameter(torch.randn(2, dim))  # paper: depot, origin; nco1: swapped
        self.encoder = ReZeroEncoder(dim, heads, ff_dim, layers, activation, rezero)
        self.head = nn.Linear(dim, 2)  # direct, via depot

    def forward(self, state: CVRPState) -> torch.Tensor:
        """Float32 logits (B, 2n): head scores of feasible candidate actions, -inf elsewhere."""
        cand = nearest_remaining(state.coords, state.origin, state.remaining, self.knn)
        depot = torch.zeros_like(state.origin)
        paper = self.form == "paper"
        ends = [depot, state.origin] if paper else [state.origin, depot]
        nodes = torch.cat([ends[0].view(-1, 1), ends[1].view(-1, 1), cand], dim=1)
        pts = state.coords.gather(1, nodes.unsqueeze(-1).expand(-1, -1, 2))
        demand = state.norm_demands.gather(1, nodes)
        if not paper:
            demand[:, 0] = 0.0  # nco1: the origin (already served) carries no demand
        free = state.norm_free.view(-1, 1).expand_as(demand)
        feats = torch.cat([pts, demand.unsqueeze(-1), free.unsqueeze(-1)], dim=-1)
        at_depot = state.origin == 0
        keys = None  # paper form at the depot: no origin token (dropped, or masked as a key)
        with body_precision(state.coords.device.type, self.precision):
            x = self.embed(feats.to(self.embed.weight.dtype))
            marks = self.markers.to(x.dtype)
            if paper:
                first = x[:, 0] + marks[0] + at_depot.unsqueeze(-1) * marks[1]
                x = torch.cat([first.unsqueeze(1), x[:, 1:2] + marks[1], x[:, 2:]], dim=1)
                if bool(at_depot.all()):
                    x = torch.cat([x[:, :1], x[:, 2:]], dim=1)
                elif bool(at_depot.any()):
                    keys = torch.ones(x.shape[:2], dtype=torch.bool, device=x.device)
                    keys[:, 1] = ~at_depot
                    keys = keys.view(-1, 1, 1, x.shape[1])
            else:
                x = torch.cat([x[:, :2] + marks, x[:, 2:]], dim=1)
            out = self.encoder(x, keys)
            scores = self.head(out[:, out.shape[1] - cand.shape[1] :])
        logits = scatter_pairs(scores, cand, state.num_customers)
        return logits.masked_fill(~action_mask(state), float("-inf"))
