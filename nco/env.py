"""The constructive-step protocol every problem implements (see docs/adding_a_problem.md).

An `Env` holds only configuration. Per-instance data lives in immutable `Batch` dataclasses
(instances and states) whose fields are all tensors sharing a leading batch dimension, so that
decoders can gather, scatter and concatenate rows without knowing the problem.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from typing import Generic, TypeVar

import torch

B = TypeVar("B", bound="Batch")
I = TypeVar("I", bound="Batch")  # an env's instances type
S = TypeVar("S", bound="Batch")  # an env's state type


@dataclasses.dataclass(frozen=True)
class Batch:
    """Immutable batch of tensors, each with the same leading batch dimension."""

    def __post_init__(self) -> None:
        sizes = {f.name: getattr(self, f.name).shape[0] for f in dataclasses.fields(self)}
        if len(set(sizes.values())) > 1:
            raise ValueError(f"{type(self).__name__}: fields disagree on batch size: {sizes}")

    @property
    def batch_size(self) -> int:
        """Number of rows."""
        return getattr(self, dataclasses.fields(self)[0].name).shape[0]

    @property
    def device(self) -> torch.device:
        """Device of the first field."""
        return getattr(self, dataclasses.fields(self)[0].name).device

    def index(self: B, idx: torch.Tensor) -> B:
        """Rows `idx` (repeats allowed) as a new batch."""
        return dataclasses.replace(self, **{k: v[idx] for k, v in self._items()})

    def put(self: B, idx: torch.Tensor, rows: B) -> B:
        """A copy of this batch with rows `idx` replaced by the rows of `rows`."""
        out = {}
        for k, v in self._items():
            new = v.clone()
            new[idx] = getattr(rows, k)
            out[k] = new
        return dataclasses.replace(self, **out)

    def to(self: B, device: torch.device | str) -> B:
        """The batch on another device."""
        return dataclasses.replace(self, **{k: v.to(device) for k, v in self._items()})

    def _items(self) -> list[tuple[str, torch.Tensor]]:
        return [(f.name, getattr(self, f.name)) for f in dataclasses.fields(self)]

    def __len__(self) -> int:
        return self.batch_size


def cat(batches: list[B]) -> B:
    """Concatenate batches of one type along the batch dimension."""
    if not batches:
        raise ValueError("cat() needs at least one batch")
    first = batches[0]
    return dataclasses.replace(
        first, **{k: torch.cat([getattr(b, k) for b in batches]) for k, _ in first._items()}
    )


class Env(ABC, Generic[I, S]):
    """A problem as a sequence of token choices over batched immutable states.

    Subclasses implement the abstract methods; `index` defaults to gathering state rows.
    `num_actions(instances)` is the width A of masks and logits for those instances.
    The type parameters name the problem's instances and state types
    (`class TSPEnv(Env[TSPInstances, TSPState])`); code that serves any problem uses `Env`.
    """

    name: str = "env"

    @abstractmethod
    def generate(self, num: int, generator: torch.Generator | None = None) -> I:
        """`num` random instances from the training distribution."""

    @abstractmethod
    def reset(self, instances: I) -> S:
        """Root states, one per instance."""

    @abstractmethod
    def step(self, state: S, actions: torch.Tensor) -> S:
        """New states after `actions` Long[B]; `state` is never mutated."""

    @abstractmethod
    def action_mask(self, state: S) -> torch.Tensor:
        """Bool[B, A], True where the action is feasible."""

    @abstractmethod
    def is_done(self, state: S) -> torch.Tensor:
        """Bool[B], True for complete solutions."""

    @abstractmethod
    def objective(self, state: S) -> torch.Tensor:
        """Float[B], larger is better; valid where done."""

    def index(self, state: S, idx: torch.Tensor) -> S:
        """Rows `idx` of `state`, repeats allowed."""
        return state.index(idx)

    def cost(self, objective: torch.Tensor) -> torch.Tensor:
        """The problem's natural cost (tour length, makespan) from an objective."""
        return -objective

    def max_steps(self, instances: I) -> int:
        """Upper bound on episode length, used to size action buffers."""
        raise NotImplementedError

    def all_instances(self, device: torch.device | str = "cpu") -> I | None:
        """Every instance of a problem whose instance set is finite and small (Gomoku: each
        opening), for `training.fixed_instances`; None (the default) when it is not."""
        return None

    def num_augmentations(self) -> int:
        """How many copies `augment` can make (`search.augment`); 1 (none) by default."""
        return 1

    def augment(self, instances: I, code: torch.Tensor) -> I:
        """`instances` under symmetries `code` Long[B] in 0..num_augmentations-1 (0: identity)
        that keep every solution's labels and cost (routing: the unit square's eight)."""
        raise NotImplementedError(f"{type(self).__name__} has no augmentations.")

    def num_starts(self, instances: I) -> int:
        """How many different first choices `search.starts` may force; 0 (none) by default."""
        return 0

    def start(self, roots: S, index: torch.Tensor) -> S:
        """Root states after the forced start `index` Long[B] in 0..num_starts-1."""
        raise NotImplementedError(f"{type(self).__name__} has no starts.")

    def started_actions(self, actions: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """Actions Long[B, T] decoded after start `index` as the env's full sequences (pad -1
        rows stay pad)."""
        raise NotImplementedError(f"{type(self).__name__} has no starts.")

    def expert_actions(self, instances: I, actions: torch.Tensor) -> torch.Tensor:
        """Expert actions Long[B, T] (pad -1) as the problem's `read_expert` gives them (the form
        of its first env, e.g. BQ's) rewritten in this env's form, for `mode=sl`; unchanged by
        default."""
        return actions

    def validation_metrics(self, objective: torch.Tensor) -> dict[str, float]:
        """Problem-specific summaries of validation objectives, logged as `val/<name>`
        (Gomoku: wins, draws, losses); none by default."""
        return {}

    def training_batch(
        self,
        instances: I,
        actions: torch.Tensor,
        generator: torch.Generator | None = None,
    ) -> tuple[S, torch.Tensor]:
        """States drawn from expert trajectories and the expert's next action.

        `actions` Long[B, T] (pad -1) are complete solutions of `instances`. The default replays
        a random prefix (one length per batch); problems override it with sub-problems and
        augmentations.
        """
        lengths = (actions >= 0).sum(1)
        t = int(torch.randint(0, int(lengths.min()), (1,), generator=generator))
        state = self.reset(instances)
        for j in range(t):
            state = self.step(state, actions[:, j])
        return state, actions[:, t]
