"""The search trie kept between Gumbeldore rounds, stored as flat growable tensors.

Each expanded node holds, per child action: the policy log-probability (evaluated once), the
unsampled log-mass (conditional on the node, under the unmodified policy) and the accumulated
advantage. The sampling logits of a node are `logmass + sigma * adv`; nucleus truncation is
applied per expansion by the decoder and never written here. With `mean_advantage`, the trie
also counts the sequences that went through each edge and the logits use the mean advantage
per edge, `logmass + sigma * adv / visits` (the authors' `normalize_advantage_by_visit_count`).
"""

from __future__ import annotations

import torch


class Trie:
    """Flat tensor storage of expanded nodes across all instances of one search call."""

    def __init__(
        self,
        num_actions: int,
        device: torch.device,
        capacity: int = 1024,
        mean_advantage: bool = False,
    ) -> None:
        self.num_actions = num_actions
        self.device = device
        self.size = 0
        self.logp, self.logmass, self.adv, self.child = self._alloc(capacity)
        # sequences through each edge, only kept for the mean advantage
        self.visits = self._alloc(capacity)[0] if mean_advantage else None

    def _alloc(self, rows: int) -> tuple[torch.Tensor, ...]:
        """Uninitialized storage for `rows` nodes (pages are touched only when written)."""
        shape, dev = (rows, self.num_actions), self.device
        f64 = [torch.empty(shape, dtype=torch.float64, device=dev) for _ in range(3)]
        return (*f64, torch.empty(shape, dtype=torch.long, device=dev))

    def _grow(self, capacity: int) -> None:
        new = self._alloc(capacity)
        for old, fresh in zip((self.logp, self.logmass, self.adv, self.child), new, strict=True):
            fresh[: self.size] = old[: self.size]
        self.logp, self.logmass, self.adv, self.child = new
        if self.visits is not None:
            visits = torch.empty_like(new[0])
            visits[: self.size] = self.visits[: self.size]
            self.visits = visits

    def add(self, logp: torch.Tensor) -> torch.Tensor:
        """Store newly expanded nodes with policy log-probabilities `logp` (M, A); return ids."""
        m = logp.shape[0]
        if self.size + m > self.logp.shape[0]:
            self._grow(max(2 * self.logp.shape[0], self.size + m))
        lo, hi = self.size, self.size + m
        self.logp[lo:hi] = logp
        self.logmass[lo:hi] = logp
        self.adv[lo:hi] = 0.0
        self.child[lo:hi] = -1
        if self.visits is not None:
            self.visits[lo:hi] = 0.0
        self.size = hi
        return torch.arange(lo, hi, device=self.device)

    def logits(self, ids: torch.Tensor, sigma: float) -> torch.Tensor:
        """Unnormalized sampling logits of `ids`: unsampled log-mass plus sigma x advantage
        (the accumulated advantage, or its mean per visit with `mean_advantage`)."""
        mass = self.logmass[ids]
        if sigma == 0.0:
            return mass
        adv = self.adv[ids]
        if self.visits is not None:
            adv = adv / self.visits[ids].clamp_min(1.0)
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
                v, a = path[inner, d], actions[inner, d]
                below = torch.logsumexp(self.logmass[path[inner, d + 1]], dim=1)
                self.logmass[v, a] = self.logp[v, a] + below

    def add_advantage(
        self, path: torch.Tensor, actions: torch.Tensor, lengths: torch.Tensor, value: torch.Tensor
    ) -> None:
        """Add each sequence's `value` (M,) to the advantage of every edge on its path (and
        count the visit, with `mean_advantage`)."""
        steps = torch.arange(path.shape[1], device=path.device)
        on_path = steps.view(1, -1) < lengths.view(-1, 1)
        per_edge = value.view(-1, 1).expand_as(path)[on_path]
        edges = (path[on_path], actions[on_path])
        self.adv.index_put_(edges, per_edge, accumulate=True)
        if self.visits is not None:
            self.visits.index_put_(edges, torch.ones_like(per_edge), accumulate=True)
