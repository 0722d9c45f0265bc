"""Random draws of training rows from the trajectory buffer, shared by both imitation modes.

`SubTrajectoryBatches` (nco.training.data) and `TrajectoryBatches` (nco.training.trajectories)
draw their rows the same way and differ only in what they make of each draw.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator

import torch
from torch.utils.data import IterableDataset

from nco.env import Batch, Env


class BufferBatches(IterableDataset, ABC):
    """`num_batches` training batches, each from `batch_size` random rows of one of `groups`.

    `groups` are (instances, actions) of one instance shape each; every batch draws its rows
    (with replacement) from one group, chosen with probability proportional to the group's
    size. One generator seeded with `seed` draws the group, the rows and then whatever `batch`
    draws, so the same seed gives the same batches.
    """

    def __init__(
        self,
        env: Env,
        groups: list[tuple[Batch, torch.Tensor]],
        num_batches: int,
        batch_size: int,
        seed: int,
    ) -> None:
        self.env, self.groups = env, groups
        self.num_batches, self.batch_size, self.seed = num_batches, batch_size, seed

    def __len__(self) -> int:
        return self.num_batches

    def __iter__(self) -> Iterator[tuple[Batch, torch.Tensor]]:
        gen = torch.Generator().manual_seed(self.seed)
        sizes = torch.tensor([float(a.shape[0]) for _, a in self.groups])
        for _ in range(self.num_batches):
            g = int(torch.multinomial(sizes, 1, generator=gen)) if len(self.groups) > 1 else 0
            instances, actions = self.groups[g]
            idx = torch.randint(actions.shape[0], (self.batch_size,), generator=gen)
            yield self.batch(instances.index(idx), actions[idx], gen)

    @abstractmethod
    def batch(
        self, instances: Batch, actions: torch.Tensor, gen: torch.Generator
    ) -> tuple[Batch, torch.Tensor]:
        """The training batch made of one draw of rows (`gen` for any further randomness)."""
