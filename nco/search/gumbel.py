"""Numerically stable Gumbel primitives in float64 (Kool et al. 2019, appendices B and C)."""

from __future__ import annotations

import torch


def gumbel(
    shape: tuple[int, ...], generator: torch.Generator | None, device: torch.device
) -> torch.Tensor:
    """Standard Gumbel(0) noise in float64, drawn on the generator's device."""
    gen_device = generator.device if generator is not None else device
    u = torch.rand(shape, generator=generator, dtype=torch.float64, device=gen_device)
    tiny = torch.finfo(torch.float64).tiny
    return (-torch.log(-torch.log(u.clamp(tiny, 1.0 - 1e-16)))).to(device)


def log1mexp(a: torch.Tensor) -> torch.Tensor:
    """log(1 - exp(a)) for a <= 0, accurate on both ends (Maechler 2012)."""
    return torch.where(
        a > -0.6931471805599453, torch.log(-torch.expm1(a)), torch.log1p(-torch.exp(a))
    )


def truncated_gumbel(
    perturbed: torch.Tensor, maximum: torch.Tensor, row_max: torch.Tensor | None = None
) -> torch.Tensor:
    """Condition Gumbels `perturbed` (L, A) on their row maximum being `maximum` (L,).

    Implements G = T - softplus(T - G~ + log1mexp(G~ - Z)) in its stable form; -inf entries
    (infeasible children) stay -inf and no NaN arises from -inf - -inf. `row_max` (L, 1) is
    Z, the maximum over all children, when `perturbed` holds only some of them.
    """
    finite = perturbed > -torch.inf
    z = perturbed.amax(dim=1, keepdim=True) if row_max is None else row_max
    t = maximum.unsqueeze(1)
    g = torch.where(finite, perturbed, z)  # placeholder values where infeasible
    v = t - g + log1mexp(g - z)
    out = t - v.clamp_min(0) - torch.log1p(torch.exp(-v.abs()))
    return torch.where(finite, out, torch.full_like(out, -torch.inf))


def log_inclusion_prob(phi: torch.Tensor, kappa: torch.Tensor) -> torch.Tensor:
    """log P(G_phi > kappa) = log(1 - exp(-exp(phi - kappa))), stable for small and large gaps."""
    x = phi - kappa
    z = torch.exp(x.clamp_max(50.0))
    series = x - z / 2 + z**2 / 24 - z**4 / 2880
    direct = torch.log(-torch.expm1(-z))
    return torch.where(x < -10, series, direct)
