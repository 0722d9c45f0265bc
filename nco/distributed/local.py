"""In-process sampling: the default for small runs and tests (no Ray start)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from nco.distributed.chunks import cat_best, chunk_bounds, derive_seed, sample_chunk
from nco.env import Batch, Env
from nco.progress import progress_bar
from nco.search.solutions import Best


class InProcessSampler:
    """Decodes chunk after chunk with the given policy in the calling process."""

    def __init__(self, env: Env, chunk_size: int = 64, progress: bool = False) -> None:
        chunk_bounds(1, chunk_size)  # validates chunk_size
        self.env = env
        self.chunk_size = chunk_size
        self.progress = progress

    def sample(
        self,
        policy: nn.Module,
        instances: Batch,
        search_cfg: Mapping[str, Any],
        seed: int,
        first_chunk: int = 0,
    ) -> Best:
        """Best sequence and objective per instance (CPU tensors, instance order); chunk i is
        seeded as chunk `first_chunk + i` of a larger set (a DDP rank's share of the epoch)."""
        bounds = chunk_bounds(instances.batch_size, self.chunk_size)
        parts = []
        for i, (lo, hi) in enumerate(progress_bar(bounds, self.progress, desc="sampling")):
            chunk = instances.index(torch.arange(lo, hi))
            seed_i = derive_seed(seed, first_chunk + i)
            parts.append(sample_chunk(policy, self.env, chunk, search_cfg, seed_i))
        return cat_best(parts)

    def close(self) -> None:
        """Nothing to release."""
