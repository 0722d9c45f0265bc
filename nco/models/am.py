"""Kool, van Hoof and Welling's Attention Model (ICLR 2019) for the TSP and the CVRP.

Encoder: a linear node embedding (the CVRP depot has its own), then `num_layers` layers of
multi-head attention and a ReLU feed-forward, each with a skip connection and batch
normalization. Decoder, per step: a context query (graph mean embedding projection plus a
projection of the step context: first and last node for the TSP, a learned placeholder at the
first step; last node and capacity left for the CVRP), one multi-head glimpse over the feasible
nodes, then single-head logits clipped by C tanh (C = 10). The encoder and the node
projections run once per instance (`encode`); a step (`decode`) reads them by row. States come
from the AM-form envs (nco.problems.tsp.am_env, nco.problems.cvrp.am_env). Layer shapes,
normalisation and the context follow wouterkool/attention-learn-to-route.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Generic, TypeVar

import torch
from torch import nn

from nco.env import Batch
from nco.problems.cvrp.am_env import AMCVRPState, am_cvrp_mask
from nco.problems.tsp.am_env import AMTSPState
from nco.search.policy_eval import grouped, neg_inf_where

S = TypeVar("S", bound=Batch)


@dataclasses.dataclass(frozen=True)
class AMCache(Batch):
    """Per-instance encoding: node embeddings and their decoder projections."""

    nodes: torch.Tensor  # (N, n, d) node embeddings
    fixed: torch.Tensor  # (N, d) projected graph embedding
    glimpse_key: torch.Tensor  # (N, H, n, d / H)
    glimpse_val: torch.Tensor  # (N, H, n, d / H)
    logit_key: torch.Tensor  # (N, n, d)


class AttentionLayer(nn.Module):
    """Multi-head self-attention; per-head projection tensors as in the AM (no biases)."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"Expected dim divisible by heads, got {dim} and {heads}.")
        self.heads, hd = heads, dim // heads
        bound = 1.0 / math.sqrt(hd)
        self.w_query = nn.Parameter(torch.empty(heads, dim, hd).uniform_(-bound, bound))
        self.w_key = nn.Parameter(torch.empty(heads, dim, hd).uniform_(-bound, bound))
        self.w_val = nn.Parameter(torch.empty(heads, dim, hd).uniform_(-bound, bound))
        out_bound = 1.0 / math.sqrt(dim)
        self.w_out = nn.Parameter(torch.empty(heads, hd, dim).uniform_(-out_bound, out_bound))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        q = torch.einsum("bnd,hde->bhne", h, self.w_query)
        k = torch.einsum("bnd,hde->bhne", h, self.w_key)
        v = torch.einsum("bnd,hde->bhne", h, self.w_val)
        attn = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
        return torch.einsum("bhne,hed->bnd", attn @ v, self.w_out)


class EncoderLayer(nn.Module):
    """h = BN(h + MHA(h)); h = BN(h + FF(h))."""

    def __init__(self, dim: int, heads: int, hidden: int) -> None:
        super().__init__()
        self.attention = AttentionLayer(dim, heads)
        self.norm1 = nn.BatchNorm1d(dim)
        self.ff = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, dim))
        self.norm2 = nn.BatchNorm1d(dim)

    @staticmethod
    def _bn(norm: nn.BatchNorm1d, h: torch.Tensor) -> torch.Tensor:
        return norm(h.reshape(-1, h.shape[-1])).view(h.shape)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        h = self._bn(self.norm1, h + self.attention(h))
        return self._bn(self.norm2, h + self.ff(h))


class AttentionModel(nn.Module, Generic[S]):
    """Shared AM encoder and decoder; subclasses give the node features and step context."""

    instance_encoding = True  # `encode` reads only the instance (coordinates, demands)
    # A step row holds one query: its activations peak at ~2 x heads x nodes floats (6.4 KB
    # at 8 heads, 100 nodes; 210 MB for 32768 rows), so a policy call may take many more rows
    # than policy_eval.POLICY_ROWS (x8 augmented multi-start of 40 instances in one call).
    rows_per_call = 32768
    score_forced_rows = True  # cheaper than leaving them out (policy_eval.masked_logits)

    node_dim: int = 2
    context_dim_extra: int = 0

    def __init__(
        self,
        embed_dim: int = 128,
        num_heads: int = 8,
        num_layers: int = 3,
        ff_hidden: int = 512,
        tanh_clipping: float = 10.0,
    ) -> None:
        super().__init__()
        self.embed_dim, self.num_heads, self.tanh_clipping = embed_dim, num_heads, tanh_clipping
        self.init_embed = nn.Linear(self.node_dim, embed_dim)
        self.layers = nn.ModuleList(
            EncoderLayer(embed_dim, num_heads, ff_hidden) for _ in range(num_layers)
        )
        self.project_nodes = nn.Linear(embed_dim, 3 * embed_dim, bias=False)
        self.project_fixed = nn.Linear(embed_dim, embed_dim, bias=False)
        self.project_step = nn.Linear(self.step_dim, embed_dim, bias=False)
        self.project_out = nn.Linear(embed_dim, embed_dim, bias=False)

    @property
    def step_dim(self) -> int:
        """Width of the step context."""
        raise NotImplementedError

    def embed(self, states: S) -> torch.Tensor:
        """Initial node embeddings (N, n, d)."""
        raise NotImplementedError

    def step_context(self, states: S, nodes: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        """Step context (L, step_dim) from the states and the node embeddings (N, n, d) of their
        instances `rows`."""
        raise NotImplementedError

    def feasible(self, states: S) -> torch.Tensor:
        """Bool (L, n): nodes the glimpse and the logits may attend to."""
        raise NotImplementedError

    def encode(self, roots: S) -> AMCache:
        """Encoder and node projections, once per instance."""
        h = self.embed(roots)
        for layer in self.layers:
            h = layer(h)
        b, n, d = h.shape
        gk, gv, lk = self.project_nodes(h).chunk(3, dim=-1)

        def heads(x: torch.Tensor) -> torch.Tensor:
            return x.view(b, n, self.num_heads, -1).transpose(1, 2)

        fixed = self.project_fixed(h.mean(1))
        return AMCache(h, fixed, heads(gk), heads(gv), lk.contiguous())

    def decode(self, states: S, cache: AMCache, rows: torch.Tensor) -> torch.Tensor:
        """Clipped logits (L, n) of the next node for `states`, reading cache rows `rows`."""
        c, groups = grouped(cache, rows)  # rows as (g instances, m slots each)
        g, m, h = groups.size, groups.width, self.num_heads
        step = groups.spread(self.project_step(self.step_context(states, cache.nodes, rows)))
        d = step.shape[-1]
        query = c.fixed.unsqueeze(1) + step
        neg_inf = neg_inf_where(~self.feasible(states), c.glimpse_key.dtype)  # (L, n)
        q = query.view(g, m, h, -1).transpose(1, 2)  # (g, H, m, d / H)
        compat = (q @ c.glimpse_key.transpose(-1, -2)).div_(math.sqrt(q.shape[-1]))
        compat.add_(groups.spread(neg_inf).unsqueeze(1))  # (g, H, m, n), masked
        heads = (torch.softmax(compat, dim=-1) @ c.glimpse_val).transpose(1, 2)
        glimpse = self.project_out(heads.reshape(g, m, d))
        logits = (glimpse @ c.logit_key.transpose(-1, -2)).div_(math.sqrt(d))
        logits = groups.collect(self.tanh_clipping * torch.tanh(logits))
        return logits.add_(neg_inf)

    def forward(self, states: S) -> torch.Tensor:
        """Logits without a cache: encode the states' instances, then one step."""
        return self.decode(states, self.encode(states), torch.arange(states.batch_size))


class AMTSPPolicy(AttentionModel[AMTSPState]):
    """The AM for the TSP (states of nco.problems.tsp.am_env.AMTSPEnv)."""

    node_dim = 2

    def __init__(
        self,
        embed_dim: int = 128,
        num_heads: int = 8,
        num_layers: int = 3,
        ff_hidden: int = 512,
        tanh_clipping: float = 10.0,
    ) -> None:
        super().__init__(embed_dim, num_heads, num_layers, ff_hidden, tanh_clipping)
        self.placeholder = nn.Parameter(torch.empty(2 * self.embed_dim).uniform_(-1, 1))

    @property
    def step_dim(self) -> int:
        return 2 * self.embed_dim

    def embed(self, states: AMTSPState) -> torch.Tensor:
        return self.init_embed(states.coords.to(self.placeholder.dtype))

    def step_context(
        self, states: AMTSPState, nodes: torch.Tensor, rows: torch.Tensor
    ) -> torch.Tensor:
        first = nodes[rows, states.first.clamp_min(0)]
        last = nodes[rows, states.current.clamp_min(0)]
        ctx = torch.cat([first, last], dim=1)
        start = (states.first < 0).unsqueeze(1)
        return torch.where(start, self.placeholder.expand_as(ctx), ctx)

    def feasible(self, states: AMTSPState) -> torch.Tensor:
        return ~states.visited


class AMCVRPPolicy(AttentionModel[AMCVRPState]):
    """The AM for the CVRP with the depot as action (nco.problems.cvrp.am_env.AMCVRPEnv)."""

    node_dim = 3

    def __init__(
        self,
        embed_dim: int = 128,
        num_heads: int = 8,
        num_layers: int = 3,
        ff_hidden: int = 512,
        tanh_clipping: float = 10.0,
        float32_capacity: bool = True,
    ) -> None:
        super().__init__(embed_dim, num_heads, num_layers, ff_hidden, tanh_clipping)
        self.float32_capacity = float32_capacity
        self.init_embed_depot = nn.Linear(2, self.embed_dim)

    @property
    def step_dim(self) -> int:
        return self.embed_dim + 1

    def embed(self, states: AMCVRPState) -> torch.Tensor:
        dtype = self.init_embed.weight.dtype
        coords = states.coords.to(dtype)
        demand = states.norm_demands.to(dtype)
        depot = self.init_embed_depot(coords[:, :1])
        customers = self.init_embed(torch.cat([coords[:, 1:], demand[:, 1:, None]], dim=-1))
        return torch.cat([depot, customers], dim=1)

    def step_context(
        self, states: AMCVRPState, nodes: torch.Tensor, rows: torch.Tensor
    ) -> torch.Tensor:
        free = states.free_fraction.to(nodes.dtype).unsqueeze(1)
        return torch.cat([nodes[rows, states.current], free], dim=1)

    def feasible(self, states: AMCVRPState) -> torch.Tensor:
        """The env's mask, less the customers whose float32 demand fraction plus the float32
        load exceeds 1: the published code's capacity test, which the model was trained with
        (it refuses some customers that fill the vehicle exactly). The depot stays feasible
        wherever the env allows it, so a row never loses every action."""
        mask = am_cvrp_mask(states)
        if not self.float32_capacity:
            return mask
        over = states.norm_demands + states.used_frac.unsqueeze(1) > 1.0
        over[:, 0] = False
        return mask & ~over
