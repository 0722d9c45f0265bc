"""Sampling trajectories for self-improvement: in-process or on Ray actors (configs/distributed).

Ray is imported only when Ray sampling is asked for (`workers > 0` or `RaySampler` itself), so
in-process training and every other command start without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from torch import nn

from nco.distributed.local import InProcessSampler
from nco.env import Batch, Env
from nco.search.solutions import Best

__all__ = ["InProcessSampler", "RaySampler", "Sampler", "make_sampler"]


def __getattr__(name: str) -> Any:
    """`nco.distributed.RaySampler`, imported (with Ray) on first use."""
    if name == "RaySampler":
        from nco.distributed.ray_pool import RaySampler

        return RaySampler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Sampler(Protocol):
    """Decodes instances with a policy and returns the best sequence per instance."""

    def sample(
        self,
        policy: nn.Module,
        instances: Batch,
        search_cfg: Mapping[str, Any],
        seed: int,
        first_chunk: int = 0,
    ) -> Best:
        """Best sequence per instance; chunk i of `instances` is seeded from
        (seed, first_chunk + i), so a DDP rank sampling chunks k.. of the epoch's instances
        gets what one process sampling them all gets for those chunks."""

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
    from nco.distributed.ray_pool import RaySampler

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
