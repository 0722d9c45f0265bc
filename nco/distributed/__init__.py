"""Sampling trajectories for self-improvement: in-process or on Ray actors (configs/distributed)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from torch import nn

from nco.distributed.local import InProcessSampler
from nco.distributed.ray_pool import RaySampler
from nco.env import Batch, Env
from nco.search.solutions import Best

__all__ = ["InProcessSampler", "RaySampler", "Sampler", "make_sampler"]


class Sampler(Protocol):
    """Decodes instances with a policy and returns the best sequence per instance."""

    def sample(
        self, policy: nn.Module, instances: Batch, search_cfg: Mapping[str, Any], seed: int
    ) -> Best: ...

    def close(self) -> None: ...


def make_sampler(
    cfg: Mapping[str, Any],
    env: Env,
    env_cfg: Mapping[str, Any],
    model_cfg: Mapping[str, Any],
    progress: bool = True,
) -> Sampler:
    """The sampler a `distributed` config asks for: in-process when `workers` is 0, else Ray.

    `env_cfg` and `model_cfg` are plain `_target_` dicts from which Ray workers build their
    own env and policy replica.
    """
    workers = int(cfg.get("workers", 0))
    chunk_size = int(cfg.get("chunk_size", 64))
    if workers < 0:
        raise ValueError(f"distributed config: expected workers >= 0, got {workers}.")
    if workers == 0:
        return InProcessSampler(env, chunk_size=chunk_size, progress=progress)
    return RaySampler(
        env_cfg,
        model_cfg,
        workers=workers,
        chunk_size=chunk_size,
        cpus_per_worker=float(cfg.get("cpus_per_worker", 1.0)),
        gpus_per_worker=float(cfg.get("gpus_per_worker", 0.0)),
        address=cfg.get("address"),
        num_cpus=cfg.get("num_cpus"),
        progress=progress,
    )
