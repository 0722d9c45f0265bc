"""Chunking and seeding shared by the in-process and Ray samplers.

Both samplers split instances into the same chunks and seed chunk i from (seed, i), so a run
gives the same trajectories whatever the number of workers and whichever worker takes a chunk.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import nn

from nco.decode import decode
from nco.env import Batch, Env
from nco.search.solutions import Best


def derive_seed(*keys: int) -> int:
    """A 63-bit seed mixed from integer keys (run seed, epoch, chunk, stream ...)."""
    state = np.random.SeedSequence([int(k) for k in keys]).generate_state(2, dtype=np.uint32)
    return (int(state[0]) << 31) ^ int(state[1])


def seeded_generator(*keys: int) -> torch.Generator:
    """A CPU torch.Generator seeded by `derive_seed(*keys)`."""
    return torch.Generator().manual_seed(derive_seed(*keys))


def chunk_bounds(num: int, chunk_size: int) -> list[tuple[int, int]]:
    """[start, stop) row ranges of consecutive chunks of at most `chunk_size` rows."""
    if chunk_size < 1:
        raise ValueError(f"distributed config: expected chunk_size >= 1, got {chunk_size}.")
    return [(s, min(s + chunk_size, num)) for s in range(0, num, chunk_size)]


def sample_chunk(
    policy: nn.Module, env: Env, chunk: Batch, search_cfg: Mapping[str, Any], seed: int
) -> Best:
    """The best decoded sequence per instance of one chunk, seeded by `seed`."""
    sols = decode(policy, env, chunk, search_cfg, generator=torch.Generator().manual_seed(seed))
    return sols.best()


def _padded(parts: list[Best]) -> list[torch.Tensor]:
    """The parts' action sequences, padded with -1 to their common length."""
    t = max(p.actions.shape[1] for p in parts)
    return [nn.functional.pad(p.actions, (0, t - p.actions.shape[1]), value=-1) for p in parts]


def better_of(a: Best, b: Best) -> Best:
    """Per instance, the better of two results (a on ties), actions padded with -1 alike."""
    pad_a, pad_b = _padded([a, b])
    take_b = b.objective > a.objective
    return Best(
        torch.where(take_b[:, None], pad_b, pad_a), torch.where(take_b, b.objective, a.objective)
    )


def cat_best(parts: list[Best]) -> Best:
    """Concatenate per-chunk results in order, padding actions with -1 to a common length."""
    return Best(torch.cat(_padded(parts)), torch.cat([p.objective for p in parts]))
