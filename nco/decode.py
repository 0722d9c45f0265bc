"""Run any `nco.search` decoder from a search config, in memory-bounded chunks of instances.

A search config is a mapping with `method` (a decoder name), optional `batch_size` (instances per
chunk; all at once when absent or null) and the decoder's keyword parameters, e.g. the contents
of configs/search/gumbeldore.yaml. Training, evaluation and the sampling workers share this entry.

Two optional keys work with every decoder, for envs that offer the hooks:
- `augment: A` (1..8) decodes each instance under the first A symmetries of the unit square
  (`env.augment(instances, code)`); solutions keep their labels, so every copy's sequences
  count for the instance and `best()` keeps the best over the copies (POMO's x8 augmentation);
- `starts: K` decodes each instance from K different first choices (POMO's multi-start):
  `env.start(roots, index)` gives the root states after start `index` (0..K-1, at most
  `env.num_starts(instances)`), and `env.started_actions(actions, index)` turns the decoded
  actions back into the env's full sequence (e.g. with the forced first node in front).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, cast

import torch
from torch import nn

from nco import search
from nco.env import Batch, Env
from nco.policy import HasCache
from nco.search.adaptive import gumbeldore_adaptive
from nco.search.policy_eval import rows_per_call
from nco.search.solutions import Solutions
from nco.search.ults import ults

METHODS: dict[str, Callable[..., Solutions]] = {
    "greedy": search.greedy,
    "beam_search": search.beam_search,
    "sample": search.sample,
    "sbs": search.sbs,
    "gumbeldore": search.gumbeldore,
    "ults": ults,
}
RESERVED = ("method", "batch_size", "augment", "starts")
MAX_AUGMENT = 8  # the symmetries of the unit square


class StartedEnv(Env):
    """`base` whose root states come after the forced start of each row (row i: start i % k)."""

    def __init__(self, base: Env, k: int) -> None:
        self.base, self.k, self.name = base, k, base.name

    def reset(self, instances: Batch) -> Batch:
        roots = self.base.reset(instances)
        return self.base.start(roots, self.start_index(roots.batch_size, roots.device))

    def start_index(self, rows: int, device: torch.device) -> torch.Tensor:
        """Start of each of `rows` rows (instances repeated k times, consecutively)."""
        return torch.arange(rows, device=device) % self.k

    def generate(self, num: int, generator: torch.Generator | None = None) -> Batch:
        return self.base.generate(num, generator)

    def step(self, state: Batch, actions: torch.Tensor) -> Batch:
        return self.base.step(state, actions)

    def action_mask(self, state: Batch) -> torch.Tensor:
        return self.base.action_mask(state)

    def is_done(self, state: Batch) -> torch.Tensor:
        return self.base.is_done(state)

    def objective(self, state: Batch) -> torch.Tensor:
        return self.base.objective(state)

    def index(self, state: Batch, idx: torch.Tensor) -> Batch:
        return self.base.index(state, idx)

    def max_steps(self, instances: Batch) -> int:
        return self.base.max_steps(instances)


class SharedEncoding(nn.Module):
    """`policy` seen by a decoder of instances repeated `k` times in a row: each instance is
    encoded once and its copies read that encoding. Only for policies whose encoding depends on
    the instance alone (`instance_encoding = True`), not on the state after a start."""

    instance_encoding = False  # already one encoding per group of copies

    def __init__(self, policy: nn.Module, k: int) -> None:
        super().__init__()
        self.policy, self.k = policy, k

    @property
    def rows_per_call(self) -> int:
        """The wrapped policy's limit (nco.search.policy_eval.rows_per_call)."""
        return rows_per_call(self.policy)

    @property
    def score_forced_rows(self) -> bool:
        """The wrapped policy's choice (nco.search.policy_eval.masked_logits)."""
        return bool(getattr(self.policy, "score_forced_rows", False))

    def encode(self, roots: Batch) -> Any:
        firsts = torch.arange(0, roots.batch_size, self.k, device=roots.device)
        return cast(HasCache, self.policy).encode(roots.index(firsts))

    def decode(self, states: Batch, cache: Any, rows: torch.Tensor) -> torch.Tensor:
        return cast(HasCache, self.policy).decode(states, cache, rows // self.k)

    def forward(self, states: Batch) -> torch.Tensor:
        return self.policy(states)


def check_augment(augment: int, env: Env, config: str = "search", key: str = "augment") -> None:
    """Raise ValueError unless `env` can make `augment` symmetric copies; `config` and `key`
    name the setting in the message (training validates with `training.val_augment`)."""
    if not 1 <= augment <= MAX_AUGMENT:
        raise ValueError(f"{config} config: expected {key} in 1..{MAX_AUGMENT}, got {augment}.")
    if augment > env.num_augmentations():
        raise ValueError(
            f"{config} config: {key}={augment}, but {type(env).__name__} has "
            f"{env.num_augmentations()} augmentations."
        )


def _copies(cfg: Mapping[str, Any], env: Env, instances: Batch) -> tuple[int, int]:
    """The checked `augment` and `starts` of a search config for `env` and `instances`."""
    augment, starts = int(cfg.get("augment") or 1), int(cfg.get("starts") or 1)
    check_augment(augment, env)
    if starts < 1:
        raise ValueError(f"search config: expected starts >= 1, got {starts}.")
    if cfg.get("starts") is not None:
        limit = env.num_starts(instances)
        if starts > limit:
            raise ValueError(f"search config: starts={starts} exceeds the {limit} possible starts.")
    return augment, starts


def _decode_copies(
    fn: Callable[..., Solutions],
    policy: nn.Module,
    env: Env,
    chunk: Batch,
    kwargs: dict[str, Any],
    augment: int,
    starts: int | None,
) -> Solutions:
    """Decode `chunk` as `augment` x `starts` copies per instance; all sequences per instance."""
    n, copies = chunk.batch_size, augment * (starts or 1)
    if copies == 1 and starts is None:
        return fn(policy, env, chunk, **kwargs)
    rows = torch.arange(n, device=chunk.device).repeat_interleave(copies)
    expanded = chunk.index(rows)
    if augment > 1:
        code = (torch.arange(n * copies, device=chunk.device) // (starts or 1)) % augment
        expanded = env.augment(expanded, code)
    started = None if starts is None else StartedEnv(env, starts)
    if starts is not None and starts > 1 and isinstance(policy, HasCache):
        if policy.instance_encoding:
            policy = SharedEncoding(policy, starts)
    sols = fn(policy, started or env, expanded, **kwargs)
    actions = sols.actions
    if started is not None:
        m, s, t = actions.shape
        index = started.start_index(m, actions.device).repeat_interleave(s)
        actions = env.started_actions(actions.reshape(m * s, t), index).view(m, s, -1)
    return Solutions(
        actions=actions.reshape(n, -1, actions.shape[-1]),
        objective=sols.objective.reshape(n, -1),
        logprob=sols.logprob.reshape(n, -1),
    )


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
    stochastic decoders and is ignored by greedy and beam search. With `augment` or `starts`
    each instance is decoded as several copies (see the module docstring).
    """
    fn, kwargs = decoder_kwargs(cfg)
    augment, starts = _copies(cfg, env, instances)
    started = starts if cfg.get("starts") is not None else None
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
            sols = _decode_copies(fn, policy, env, chunk, kwargs, augment, started)
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
