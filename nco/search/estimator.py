"""Importance-weighted estimates of E[f] from one SBS round (paper eq. 3-5, Kool et al. 2019)."""

from __future__ import annotations

import torch

from nco.search.gumbel import log_inclusion_prob


def log_weights(
    phi: torch.Tensor, key: torch.Tensor, valid: torch.Tensor, pruned: torch.Tensor
) -> torch.Tensor:
    """Log importance weights (N, k) of a round's leaves; -inf marks excluded leaves.

    Leaves are sorted by key. Where the beam pruned candidates, the k-th key is the threshold
    kappa, that leaf is excluded and w = p / P(G > kappa). Where the round exhausted the domain
    there is no threshold and every leaf counts with weight p.
    """
    kappa = key[:, -1:]
    thresholded = phi - log_inclusion_prob(phi, kappa)
    thresholded[:, -1] = -torch.inf
    exhaustive = torch.where(valid, phi, -torch.inf)
    out = torch.where(pruned.unsqueeze(1), thresholded, exhaustive)
    return torch.where(valid, out, -torch.inf)


def weighted_mean(
    log_w: torch.Tensor, values: torch.Tensor, normalized: bool = True
) -> torch.Tensor:
    """Sum_i w_i f_i / Sum_i w_i per row (normalized, eq. 4) or Sum_i w_i f_i (unbiased, eq. 3).

    Rows without any included leaf give NaN.
    """
    used = log_w > -torch.inf
    vals = torch.where(used, values, 0.0)
    if normalized:
        w = torch.softmax(log_w.masked_fill(~used.any(1, keepdim=True), 0.0), dim=1)
        mean = (torch.where(used, w, 0.0) * vals).sum(1)
        return torch.where(used.any(1), mean, torch.nan)
    return (torch.where(used, log_w.exp(), 0.0) * vals).sum(1)
