"""The search trie kept between Gumbeldore rounds, stored as flat growable tensors.

Each expanded node holds, per child action: the policy log-probability (evaluated once), the
unsampled log-mass (conditional on the node, under the unmodified policy) and the accumulated
advantage. The sampling logits of a node are `logmass + sigma * adv`; nucleus truncation is
applied per expansion by the decoder and never written here.
"""

from __future__ import annotations

import torch


class Trie:
    """Flat tensor storage of expanded nodes across all instances of one search call."""

    def __init__(self, num_actions: int, device: torch.device, capacity: int = 1024) -> None:
        self.num_actions = num_actions
        self.device = device
        self.size = 0
        self.logp = torch.empty(0, num_actions, dtype=torch.float64, device=device)
        self.logmass = torch.empty_like(self.logp)
        self.adv = torch.empty_like(self.logp)
        self.child = torch.empty(0, num_actions, dtype=torch.long, device=device)
        self._grow(capacity)

    def _grow(self, capacity: int) -> None:
        extra = capacity - self.logp.shape[0]
        if extra <= 0:
            return
        a, dev = self.num_actions, self.device
        self.logp = torch.cat([self.logp, torch.empty(extra, a, dtype=torch.float64, device=dev)])
        self.logmass = torch.cat(
            [self.logmass, torch.empty(extra, a, dtype=torch.float64, device=dev)]
        )
        self.adv = torch.cat([self.adv, torch.empty(extra, a, dtype=torch.float64, device=dev)])
        self.child = torch.cat([self.child, torch.empty(extra, a, dtype=torch.long, device=dev)])

    def add(self, logp: torch.Tensor) -> torch.Tensor:
        """Store newly expanded nodes with policy log-probabilities `logp` (M, A); return ids."""
        m = logp.shape[0]
        if self.size + m > self.logp.shape[0]:
            self._grow(max(2 * self.logp.shape[0], self.size + m))
        ids = torch.arange(self.size, self.size + m, device=self.device)
        self.logp[ids] = logp
        self.logmass[ids] = logp
        self.adv[ids] = 0.0
        self.child[ids] = -1
        self.size += m
        return ids

    def logits(self, ids: torch.Tensor, sigma: float) -> torch.Tensor:
        """Unnormalized sampling logits of `ids`: unsampled log-mass plus sigma x advantage."""
        mass = self.logmass[ids]
        if sigma == 0.0:
            return mass
        return torch.where(mass > -torch.inf, mass + sigma * self.adv[ids], mass)

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
        """Add `value` (M, T) to the advantage of every edge on each sequence's path."""
        steps = torch.arange(path.shape[1], device=path.device)
        on_path = steps.view(1, -1) < lengths.view(-1, 1)
        self.adv.index_put_((path[on_path], actions[on_path]), value[on_path], accumulate=True)
