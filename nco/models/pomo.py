"""POMO (Kwon et al., NeurIPS 2020) for the TSP and the CVRP, as AMDKD's students use it.

Encoder: a linear node embedding (the CVRP depot has its own), then `num_layers` layers of
multi-head attention (combined with a biased linear) and a ReLU feed-forward, each added and
instance-normalized. Decoder, per step: a query from the first and last node's embeddings
(TSP) or the last node's embedding and the load left (CVRP), one multi-head attention over the
feasible nodes, then single-head scores against the node embeddings, divided by sqrt(d) and
clipped by C tanh (C = 10). Node keys and values are computed once per instance (`encode`).
States come from the AM-form envs, where the first action is the start node (the TSP) or the
first customer (the CVRP); POMO's multi-start forces it (`search.starts`). At the very first TSP
step, before any node is chosen, the policy returns uniform logits: POMO never scores that step.
Layer shapes follow yd-kwon/POMO and jieyibi/AMDKD.
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
class POMOCache(Batch):
    """Per-instance encoding: node embeddings and the decoder's keys and values."""

    nodes: torch.Tensor  # (N, n, d)
    key: torch.Tensor  # (N, H, n, d_k)
    val: torch.Tensor  # (N, H, n, d_k)


@dataclasses.dataclass(frozen=True)
class POMOTSPCache(POMOCache):
    """POMOCache with every node's first- and last-node query projection (a step gathers its
    query instead of projecting it)."""

    first_query: torch.Tensor  # (N, n, H d_k)
    last_query: torch.Tensor  # (N, n, H d_k)


def _heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    return x.view(*x.shape[:-1], heads, -1).transpose(-2, -3)


def _attend(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, neg_inf: torch.Tensor | None = None
) -> torch.Tensor:
    """Scaled dot-product attention of (.., H, m, e) queries, keys masked by adding `neg_inf`
    (-inf where left out, 0 elsewhere); heads concatenated (.., m, H e). The score is scaled
    and masked in place."""
    score = (q @ k.transpose(-1, -2)).div_(math.sqrt(q.shape[-1]))
    if neg_inf is not None:
        score.add_(neg_inf)
    out = torch.softmax(score, dim=-1) @ v
    return out.transpose(-2, -3).flatten(-2)


class POMOEncoderLayer(nn.Module):
    """h = IN(h + W_o MHA(h)); h = IN(h + FF(h)), instance norm over the nodes."""

    def __init__(self, dim: int, heads: int, head_dim: int, hidden: int) -> None:
        super().__init__()
        self.heads = heads
        self.wq = nn.Linear(dim, heads * head_dim, bias=False)
        self.wk = nn.Linear(dim, heads * head_dim, bias=False)
        self.wv = nn.Linear(dim, heads * head_dim, bias=False)
        self.combine = nn.Linear(heads * head_dim, dim)
        self.norm1 = nn.InstanceNorm1d(dim, affine=True, track_running_stats=False)
        self.ff = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, dim))
        self.norm2 = nn.InstanceNorm1d(dim, affine=True, track_running_stats=False)

    @staticmethod
    def _in(norm: nn.InstanceNorm1d, h: torch.Tensor) -> torch.Tensor:
        return norm(h.transpose(1, 2)).transpose(1, 2)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        q, k, v = (_heads(w(h), self.heads) for w in (self.wq, self.wk, self.wv))
        h = self._in(self.norm1, h + self.combine(_attend(q, k, v)))
        return self._in(self.norm2, h + self.ff(h))


class POMOModel(nn.Module, Generic[S]):
    """Shared POMO encoder and decoder; subclasses give node features and the query."""

    instance_encoding = True  # `encode` reads only the instance (coordinates, demands)
    # A step row holds one query: its activations peak at ~2 x heads x nodes floats (6.4 KB
    # at 8 heads, 100 nodes; 210 MB for 32768 rows), so a policy call may take many more rows
    # than policy_eval.POLICY_ROWS (x8 augmented multi-start of 40 instances in one call).
    rows_per_call = 32768
    score_forced_rows = True  # cheaper than leaving them out (policy_eval.masked_logits)

    def __init__(
        self,
        embed_dim: int = 128,
        num_heads: int = 8,
        head_dim: int = 16,
        num_layers: int = 6,
        ff_hidden: int = 512,
        logit_clipping: float = 10.0,
    ) -> None:
        super().__init__()
        self.embed_dim, self.num_heads, self.logit_clipping = embed_dim, num_heads, logit_clipping
        self.layers = nn.ModuleList(
            POMOEncoderLayer(embed_dim, num_heads, head_dim, ff_hidden) for _ in range(num_layers)
        )
        self.wk = nn.Linear(embed_dim, num_heads * head_dim, bias=False)
        self.wv = nn.Linear(embed_dim, num_heads * head_dim, bias=False)
        self.combine = nn.Linear(num_heads * head_dim, embed_dim)

    def embed(self, states: S) -> torch.Tensor:
        """Initial node embeddings (N, n, d)."""
        raise NotImplementedError

    def query(self, states: S, cache: POMOCache, rows: torch.Tensor) -> torch.Tensor:
        """Decoder queries (L, H d_k) from the encoding `cache` of instances `rows`."""
        raise NotImplementedError

    def feasible(self, states: S) -> torch.Tensor:
        """Bool (L, n) feasible next nodes."""
        raise NotImplementedError

    def encode(self, roots: S) -> POMOCache:
        """Encoder and the decoder's node keys and values, once per instance."""
        h = self.embed(roots)
        for layer in self.layers:
            h = layer(h)
        return POMOCache(h, _heads(self.wk(h), self.num_heads), _heads(self.wv(h), self.num_heads))

    def decode(self, states: S, cache: POMOCache, rows: torch.Tensor) -> torch.Tensor:
        """Clipped scores (L, n) of the next node for `states`, reading cache rows `rows`."""
        c, groups = grouped(cache, rows)  # rows as (g instances, m slots each)
        query = self.query(states, cache, rows)
        neg_inf = neg_inf_where(~self.feasible(states), cache.key.dtype)  # (L, n)
        q = groups.spread(query).view(groups.size, groups.width, self.num_heads, -1)
        out = _attend(q.transpose(1, 2), c.key, c.val, groups.spread(neg_inf).unsqueeze(1))
        score = (self.combine(out) @ c.nodes.transpose(-1, -2)).div_(math.sqrt(self.embed_dim))
        score = groups.collect(self.logit_clipping * torch.tanh(score))  # (L, n)
        return score.add_(neg_inf)

    def forward(self, states: S) -> torch.Tensor:
        """Scores without a cache: encode the states' instances, then one step."""
        return self.decode(states, self.encode(states), torch.arange(states.batch_size))


class POMOTSPPolicy(POMOModel[AMTSPState]):
    """POMO for the TSP (states of nco.problems.tsp.am_env.AMTSPEnv)."""

    def __init__(
        self,
        embed_dim: int = 128,
        num_heads: int = 8,
        head_dim: int = 16,
        num_layers: int = 6,
        ff_hidden: int = 512,
        logit_clipping: float = 10.0,
    ) -> None:
        super().__init__(embed_dim, num_heads, head_dim, num_layers, ff_hidden, logit_clipping)
        heads = self.wk.out_features
        self.embedding = nn.Linear(2, self.embed_dim)
        self.wq_first = nn.Linear(self.embed_dim, heads, bias=False)
        self.wq_last = nn.Linear(self.embed_dim, heads, bias=False)

    def embed(self, states: AMTSPState) -> torch.Tensor:
        return self.embedding(states.coords.to(self.embedding.weight.dtype))

    def encode(self, roots: AMTSPState) -> POMOTSPCache:
        """POMOModel.encode plus both query projections of every node, once per instance."""
        c = super().encode(roots)
        return POMOTSPCache(c.nodes, c.key, c.val, self.wq_first(c.nodes), self.wq_last(c.nodes))

    def query(self, states: AMTSPState, cache: POMOCache, rows: torch.Tensor) -> torch.Tensor:
        if not isinstance(cache, POMOTSPCache):
            raise TypeError(f"POMOTSPPolicy needs its own encoding, got {type(cache).__name__}.")
        first = cache.first_query[rows, states.first.clamp_min(0)]
        return first + cache.last_query[rows, states.current.clamp_min(0)]

    def feasible(self, states: AMTSPState) -> torch.Tensor:
        return ~states.visited

    def decode(self, states: AMTSPState, cache: POMOCache, rows: torch.Tensor) -> torch.Tensor:
        """As POMOModel.decode; uniform over the nodes before the first (never scored) step."""
        scores = super().decode(states, cache, rows)
        unstarted = states.first < 0
        if bool(unstarted.any()):
            scores[unstarted] = 0.0
        return scores


class POMOCVRPPolicy(POMOModel[AMCVRPState]):
    """POMO for the CVRP with the depot as action (nco.problems.cvrp.am_env.AMCVRPEnv)."""

    def __init__(
        self,
        embed_dim: int = 128,
        num_heads: int = 8,
        head_dim: int = 16,
        num_layers: int = 6,
        ff_hidden: int = 512,
        logit_clipping: float = 10.0,
    ) -> None:
        super().__init__(embed_dim, num_heads, head_dim, num_layers, ff_hidden, logit_clipping)
        self.embedding_depot = nn.Linear(2, self.embed_dim)
        self.embedding_node = nn.Linear(3, self.embed_dim)
        self.wq_last = nn.Linear(self.embed_dim + 1, self.wk.out_features, bias=False)

    def embed(self, states: AMCVRPState) -> torch.Tensor:
        dtype = self.embedding_node.weight.dtype
        coords = states.coords.to(dtype)
        demand = states.norm_demands.to(dtype)
        depot = self.embedding_depot(coords[:, :1])
        nodes = self.embedding_node(torch.cat([coords[:, 1:], demand[:, 1:, None]], dim=-1))
        return torch.cat([depot, nodes], dim=1)

    def query(self, states: AMCVRPState, cache: POMOCache, rows: torch.Tensor) -> torch.Tensor:
        load = states.free_fraction.to(cache.nodes.dtype).unsqueeze(1)
        return self.wq_last(torch.cat([cache.nodes[rows, states.current], load], dim=1))

    def feasible(self, states: AMCVRPState) -> torch.Tensor:
        return am_cvrp_mask(states)
