"""Run any `nco.search` decoder from a search config, in memory-bounded chunks of instances.

A search config is a mapping with `method` (a decoder name), optional `batch_size` (instances per
chunk; all at once when absent or null) and the decoder's keyword parameters, e.g. the contents
of configs/search/gumbeldore.yaml. Training, evaluation and the sampling workers share this entry.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

from nco import search
from nco.env import Batch, Env
from nco.search.adaptive import gumbeldore_adaptive
from nco.search.solutions import Solutions

METHODS: dict[str, Callable[..., Solutions]] = {
    "greedy": search.greedy,
    "beam_search": search.beam_search,
    "sample": search.sample,
    "sbs": search.sbs,
    "gumbeldore": search.gumbeldore,
}
RESERVED = ("method", "batch_size")


def decoder_kwargs(cfg: Mapping[str, Any]) -> tuple[Callable[..., Solutions], dict[str, Any]]:
    """The decoder named by `cfg.method` and its keyword parameters, checked against its signature.

    Raises ValueError on an unknown method, an unknown parameter or a missing required one.
    """
    cfg = dict(cfg)
    method = cfg.get("method")
    if method not in METHODS:
        raise ValueError(
            f"search config: unknown method {method!r}; expected one of {sorted(METHODS)}."
        )
    fn = METHODS[method]
    if method == "gumbeldore" and cfg.get("adaptive") is not None:
        fn = gumbeldore_adaptive  # per-round statistics; adaptive budget when true
    kwargs = {k: v for k, v in cfg.items() if k not in RESERVED}
    params = inspect.signature(fn).parameters
    accepted = [p for p in params if p not in ("policy", "env", "instances", "generator")]
    unknown = sorted(set(kwargs) - set(accepted))
    if unknown:
        raise ValueError(
            f"search config: method {method!r} takes no parameter {unknown}; "
            f"expected a subset of {accepted}."
        )
    missing = [
        p for p in accepted if params[p].default is inspect.Parameter.empty and p not in kwargs
    ]
    if missing:
        raise ValueError(f"search config: method {method!r} needs parameters {missing}.")
    return fn, kwargs


def decode(
    policy: nn.Module,
    env: Env,
    instances: Batch,
    cfg: Mapping[str, Any],
    generator: torch.Generator | None = None,
) -> Solutions:
    """Decode `instances` with the search `cfg`; returns all sequences per instance, on the CPU.

    Chunks of `cfg.batch_size` instances are moved to the policy's device and decoded in turn
    with the policy in eval mode (its previous mode is restored). `generator` seeds the
    stochastic decoders and is ignored by greedy and beam search.
    """
    fn, kwargs = decoder_kwargs(cfg)
    if "generator" in inspect.signature(fn).parameters:
        kwargs["generator"] = generator
    batch_size = cfg.get("batch_size")
    batch_size = instances.batch_size if batch_size is None else int(batch_size)
    if batch_size < 1:
        raise ValueError(f"search config: expected batch_size >= 1 or null, got {batch_size}.")
    param = next(policy.parameters(), None)
    device = param.device if param is not None else instances.device
    was_training = policy.training
    policy.eval()
    try:
        parts = []
        for start in range(0, instances.batch_size, batch_size):
            idx = torch.arange(start, min(start + batch_size, instances.batch_size))
            chunk = instances.index(idx).to(device)
            sols = fn(policy, env, chunk, **kwargs)
            parts.append(Solutions(sols.actions.cpu(), sols.objective.cpu(), sols.logprob.cpu()))
    finally:
        policy.train(was_training)
    return cat_solutions(parts)


def cat_solutions(parts: list[Solutions]) -> Solutions:
    """Concatenate Solutions along instances, padding sequences (S) and steps (T)."""
    if not parts:
        raise ValueError("cat_solutions() needs at least one Solutions.")
    s = max(p.actions.shape[1] for p in parts)
    t = max(p.actions.shape[2] for p in parts)
    actions, objective, logprob = [], [], []
    for p in parts:
        ds, dt = s - p.actions.shape[1], t - p.actions.shape[2]
        actions.append(nn.functional.pad(p.actions, (0, dt, 0, ds), value=-1))
        objective.append(nn.functional.pad(p.objective, (0, ds), value=-torch.inf))
        logprob.append(nn.functional.pad(p.logprob, (0, ds), value=-torch.inf))
    return Solutions(torch.cat(actions), torch.cat(objective), torch.cat(logprob))
