"""The search trie kept between Gumbeldore rounds, stored as flat growable tensors.

Each expanded node holds, per child action, the unsampled log-mass (conditional on the node,
under the unmodified policy) and, where advantages are used, the accumulated advantage. The
sampling logits of a node are `logmass + sigma * adv`; nucleus truncation is applied per
expansion by the decoder and never written here. With `mean_advantage`, the trie also counts
the sequences that went through each edge and the logits use the mean advantage per edge,
`logmass + sigma * adv / visits` (the authors' `normalize_advantage_by_visit_count`).

Memory is what limits Gumbeldore on many instances (every expanded node stores a row over all
actions), so a row keeps only what cannot be recomputed:
- no dense copy of the policy's log-probabilities: an edge nobody sampled below still has
  log-mass = log-probability, and every other edge leads to a child node, which keeps the
  log-probability of the edge into it (one float64 per node);
- child links live in a hash table keyed by (node, action), one entry per child node, instead
  of a dense (nodes x actions) index table;
- masses and advantages are stored in `dtype`, float32 by default: log-space values accurate
  to ~1e-7 relative, far below the policy's own float32 precision, while every sampling
  computation still runs in float64.
Together 8 bytes per (node, action) instead of 32 (4 without advantages): Gumbeldore 32 x 4
on 128 TSP100 instances needs about 1.2 GiB of trie instead of 4.8 (benchmarks/bench_memory.py).
"""

from __future__ import annotations

import torch


class EdgeMap:
    """Open-addressing hash map from edge keys (int64 >= 0) to child node ids.

    Batched get and put with linear probing; the table doubles when half full.
    """

    def __init__(self, capacity: int, device: torch.device) -> None:
        size = 1 << max(4, (2 * max(capacity, 1) - 1).bit_length())
        self.keys = torch.full((size,), -1, dtype=torch.long, device=device)
        self.vals = torch.empty(size, dtype=torch.long, device=device)
        self.count = 0

    def _slots(self, keys: torch.Tensor) -> torch.Tensor:
        h = keys ^ (keys >> 16)
        h = (h & 0xFFFFFFFF) * 0x45D9F3B
        return (h ^ (h >> 16)) & (self.keys.numel() - 1)

    def get(self, keys: torch.Tensor) -> torch.Tensor:
        """The value of every key, -1 where absent."""
        out = torch.full_like(keys, -1)
        slot = self._slots(keys)
        pending = torch.arange(keys.numel(), device=keys.device)
        mask = self.keys.numel() - 1
        while pending.numel() > 0:
            found = self.keys[slot]
            hit = found == keys[pending]
            out[pending[hit]] = self.vals[slot[hit]]
            more = ~hit & (found >= 0)
            pending, slot = pending[more], (slot[more] + 1) & mask
        return out

    def put(self, keys: torch.Tensor, vals: torch.Tensor) -> None:
        """Insert distinct keys that are not yet present."""
        if 2 * (self.count + keys.numel()) > self.keys.numel():
            self._rehash(4 * (self.count + keys.numel()))
        self.count += keys.numel()
        slot = self._slots(keys)
        pending = torch.arange(keys.numel(), device=keys.device)
        mask = self.keys.numel() - 1
        while pending.numel() > 0:
            free = self.keys[slot] < 0
            cand, at = pending[free], slot[free]
            self.keys[at] = keys[cand]  # one of several claims on a slot wins
            won = self.keys[at] == keys[cand]
            self.vals[at[won]] = vals[cand[won]]
            placed = torch.zeros(keys.numel(), dtype=torch.bool, device=keys.device)
            placed[cand[won]] = True
            more = ~placed[pending]
            pending, slot = pending[more], (slot[more] + 1) & mask

    def _rehash(self, capacity: int) -> None:
        used = self.keys >= 0
        keys, vals = self.keys[used], self.vals[used]
        fresh = EdgeMap(capacity, self.keys.device)
        fresh.put(keys, vals)
        self.keys, self.vals = fresh.keys, fresh.vals


class Trie:
    """Flat tensor storage of expanded nodes across all instances of one search call.

    `advantages=False` (round-wise sampling without updates) stores no advantage table.
    """

    def __init__(
        self,
        num_actions: int,
        device: torch.device,
        capacity: int = 1024,
        mean_advantage: bool = False,
        advantages: bool = True,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        if mean_advantage and not advantages:
            raise ValueError("Trie: mean_advantage needs advantages.")
        self.num_actions = num_actions
        self.device = device
        self.dtype = dtype
        self.size = 0
        self.has_adv, self.has_visits = advantages, mean_advantage
        self.logmass = torch.empty((0, num_actions), dtype=dtype, device=device)
        self.adv: torch.Tensor | None = None
        self.visits: torch.Tensor | None = None
        self.edge_logp = torch.empty(0, dtype=torch.float64, device=device)
        self._resize(capacity)
        self.links = EdgeMap(capacity, device)

    def _resize(self, rows: int) -> None:
        """Storage for `rows` nodes, keeping the first `size` (pages are touched on write)."""

        def grown(old: torch.Tensor | None, dtype: torch.dtype, *shape: int) -> torch.Tensor:
            new = torch.empty((rows, *shape), dtype=dtype, device=self.device)
            if old is not None:
                new[: self.size] = old[: self.size]
            return new

        a = self.num_actions
        self.logmass = grown(self.logmass, self.dtype, a)
        self.edge_logp = grown(self.edge_logp, torch.float64)
        if self.has_adv:
            self.adv = grown(self.adv, self.dtype, a)
        if self.has_visits:
            self.visits = grown(self.visits, self.dtype, a)

    def add(self, logp: torch.Tensor) -> torch.Tensor:
        """Store newly expanded nodes with policy log-probabilities `logp` (M, A); return ids.

        The nodes are roots until `link` gives them a parent."""
        m = logp.shape[0]
        if self.size + m > self.logmass.shape[0]:
            self._resize(max(2 * self.logmass.shape[0], self.size + m))
        lo, hi = self.size, self.size + m
        self.logmass[lo:hi] = logp
        self.edge_logp[lo:hi] = 0.0
        if self.adv is not None:
            self.adv[lo:hi] = 0.0
        if self.visits is not None:
            self.visits[lo:hi] = 0.0
        self.size = hi
        return torch.arange(lo, hi, device=self.device)

    def link(self, parents: torch.Tensor, actions: torch.Tensor, children: torch.Tensor) -> None:
        """Make `children` the nodes reached from `parents` by `actions` (edges not yet
        linked, hence never sampled below: their log-mass is still the log-probability)."""
        if parents.numel() == 0:
            return
        self.edge_logp[children] = self.logmass[parents, actions].to(torch.float64)
        self.links.put(parents * self.num_actions + actions, children)

    def child(self, nodes: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """The node reached from each node by its action, -1 where not expanded yet."""
        return self.links.get(nodes * self.num_actions + actions)

    def edge_logprob(
        self, nodes: torch.Tensor, actions: torch.Tensor, children: torch.Tensor
    ) -> torch.Tensor:
        """Float64 policy log-probabilities of edges, given their `child` ids (-1: none)."""
        mass = self.logmass[nodes, actions].to(torch.float64)
        return torch.where(children >= 0, self.edge_logp[children.clamp_min(0)], mass)

    def logits(self, ids: torch.Tensor, sigma: float) -> torch.Tensor:
        """Float64 sampling logits of `ids`: unsampled log-mass plus sigma x advantage
        (the accumulated advantage, or its mean per visit with `mean_advantage`)."""
        mass = self.logmass[ids].to(torch.float64)
        if sigma == 0.0 or self.adv is None:
            return mass
        adv = self.adv[ids].to(torch.float64)
        if self.visits is not None:
            adv = adv / self.visits[ids].to(torch.float64).clamp_min(1.0)
        return torch.where(mass > -torch.inf, mass + sigma * adv, mass)

    def remove_leaves(
        self, path: torch.Tensor, actions: torch.Tensor, lengths: torch.Tensor
    ) -> None:
        """Mark complete sequences as sampled and recompute unsampled masses up to the root.

        `path` (M, T) holds the node each action was chosen at, `actions` (M, T) the actions,
        `lengths` (M,) the sequence lengths. The terminal edge gets mass -inf; every ancestor
        edge gets log pi(c|v) + logsumexp of the child's remaining masses, which avoids
        subtracting probabilities (no cancellation).
        """
        if path.shape[0] == 0:
            return
        for d in range(int(lengths.max()) - 1, -1, -1):
            terminal = lengths - 1 == d
            if terminal.any():
                self.logmass[path[terminal, d], actions[terminal, d]] = -torch.inf
            inner = lengths - 1 > d
            if inner.any():
                v, a, c = path[inner, d], actions[inner, d], path[inner, d + 1]
                below = torch.logsumexp(self.logmass[c].to(torch.float64), dim=1)
                self.logmass[v, a] = (self.edge_logp[c] + below).to(self.dtype)

    def add_advantage(
        self, path: torch.Tensor, actions: torch.Tensor, lengths: torch.Tensor, value: torch.Tensor
    ) -> None:
        """Add each sequence's `value` (M,) to the advantage of every edge on its path (and
        count the visit, with `mean_advantage`)."""
        steps = torch.arange(path.shape[1], device=path.device)
        on_path = steps.view(1, -1) < lengths.view(-1, 1)
        per_edge = value.view(-1, 1).expand_as(path)[on_path]
        edges = (path[on_path], actions[on_path])
        self.add_edge_advantage(*edges, per_edge)
        if self.visits is not None:
            self.visits.index_put_(edges, torch.ones_like(per_edge, dtype=self.dtype), True)

    def add_edge_advantage(
        self, nodes: torch.Tensor, actions: torch.Tensor, values: torch.Tensor
    ) -> None:
        """Add `values` to the advantages of the edges (nodes, actions)."""
        if self.adv is None:
            raise ValueError("Trie: built without advantages.")
        self.adv.index_put_((nodes, actions), values.to(self.dtype), accumulate=True)
