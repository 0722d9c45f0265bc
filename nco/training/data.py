"""The DataModule of self-improvement: generation, sampling, buffer and sub-trajectory batches.

Design: the sampling step of Algorithm 1 runs in `train_dataloader`, which the Trainer calls at
the start of every epoch (`reload_dataloaders_every_n_epochs=1`, set by `nco-train`). It reads
the best policy from the attached LightningModule, clears the buffer when that policy changed
since the buffer was filled (an improving epoch), generates the epoch's instances, decodes them
and appends the best sequence per instance. The loader then yields `batches_per_epoch` batches
from `env.training_batch` on rows drawn from the buffer. In SL mode the buffer holds the expert
dataset and is never cleared. Everything random is seeded from (seed, epoch, stream, rank).

Under DDP (several ranks) the epoch's instances are cut into the sampler's chunks and each rank
samples a contiguous block of them, every chunk seeded by its index in the whole epoch; the ranks
then exchange their trajectories, so every rank holds the same buffer, equal to the one a single
process would have sampled with the same policy. Each rank draws its batches from that buffer
with its own seed, and DDP averages the gradients (docs/cluster.md).

Hooks for fixed-set experiments (Gomoku, paper C.4): `fixed_instances` replaces generation by
the same instance set every epoch, `tie_break="random"` keeps a uniformly random sequence among
each instance's best ones (seeded) instead of the first, and `sample_policy="trained"` samples
with the trained policy (and trains on that epoch's trajectories only).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import lightning as L
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, IterableDataset

from nco.decode import decode, decoder_kwargs
from nco.distributed import Sampler
from nco.distributed.chunks import (
    better_of,
    cat_best,
    chunk_bounds,
    derive_seed,
    sample_chunk,
    seeded_generator,
)
from nco.env import Batch, Env
from nco.search.solutions import Best, Solutions
from nco.training.batches import BufferBatches
from nco.training.buffer import TrajectoryBuffer
from nco.training.trajectories import TrajectoryBatches, check_imitation

if TYPE_CHECKING:
    from nco.training.module import SelfImprovementModule

MODES = ("si", "sl")
TIE_BREAKS = ("first", "random")
SAMPLE_POLICIES = ("best", "trained")
GENERATE, SAMPLE, TRAIN, TIE = 0, 1, 2, 3  # seed streams


def best_random_tie(sols: Solutions, generator: torch.Generator | None = None) -> Best:
    """Per instance, a sequence drawn uniformly among those with the largest objective.

    Unlike `Solutions.best` (the first best), this does not favour early samples, e.g. a random
    white win among many in Gomoku.
    """
    objective = sols.objective.cpu()
    top = objective.max(dim=1, keepdim=True).values
    keys = torch.rand(objective.shape, generator=generator, dtype=torch.float64)
    idx = keys.masked_fill(objective < top, -1.0).argmax(dim=1)
    rows = torch.arange(objective.shape[0])
    return Best(actions=sols.actions.cpu()[rows, idx], objective=objective[rows, idx])


def sample_random_ties(
    policy: torch.nn.Module,
    env: Env,
    instances: Batch,
    search: Mapping[str, Any],
    seed: int,
    chunk_size: int,
    first_chunk: int = 0,
) -> Best:
    """In-process sampling like `InProcessSampler` (same chunks and seeds), keeping a random
    best sequence per instance (`best_random_tie`, seeded from (seed, chunk, TIE))."""
    parts = []
    for i, (lo, hi) in enumerate(chunk_bounds(instances.batch_size, chunk_size)):
        chunk = instances.index(torch.arange(lo, hi))
        c = first_chunk + i
        gen = torch.Generator().manual_seed(derive_seed(seed, c))
        sols = decode(policy, env, chunk, search, generator=gen)
        parts.append(best_random_tie(sols, seeded_generator(seed, c, TIE)))
    return cat_best(parts)


def rank_chunks(num: int, chunk_size: int, rank: int, world: int) -> tuple[int, int, int]:
    """(first chunk, first row, end row) of rank `rank`'s contiguous share of `num` instances
    cut into chunks of `chunk_size`; ranks get whole chunks, at most one more than another."""
    bounds = chunk_bounds(num, chunk_size)
    lo, hi = rank * len(bounds) // world, (rank + 1) * len(bounds) // world
    if lo == hi:
        return lo, 0, 0
    return lo, bounds[lo][0], bounds[hi - 1][1]


def all_ranks(value: Any, world: int) -> list[Any]:
    """`value` of every rank in rank order (itself alone outside DDP); picklable objects."""
    if world == 1 or not dist.is_available() or not dist.is_initialized():
        return [value]
    out: list[Any] = [None] * world
    dist.all_gather_object(out, value)
    return out


class SubTrajectoryBatches(BufferBatches):
    """`num_batches` training batches (states, targets) from random buffer rows
    (`BufferBatches`): `env.training_batch` of each draw, one random prefix per trajectory."""

    def batch(
        self, instances: Batch, actions: torch.Tensor, gen: torch.Generator
    ) -> tuple[Batch, torch.Tensor]:
        return self.env.training_batch(instances, actions, gen)


def p_min_for_epoch(schedule: Mapping[int, float] | None, epoch: int) -> float | None:
    """The p_min of the latest schedule entry at or before `epoch` (None before the first)."""
    if not schedule:
        return None
    started = [int(e) for e in schedule if int(e) <= epoch]
    return float(schedule[max(started)]) if started else None


def first_epoch(name: str, value: bool | int | None) -> int | None:
    """The first epoch of a switch given as true (0), false or null (never) or an epoch N >= 0,
    so that a run's config can hold a recipe changed mid-run (`training.restart_from_best: 11`)."""
    if value is None or value is False:
        return None
    if value is True:
        return 0
    if isinstance(value, int) and value >= 0:
        return value
    raise ValueError(
        f"training config: expected {name} to be true, false or a first epoch >= 0, got {value!r}."
    )


class TrajectoryDataModule(L.LightningDataModule):
    """Owns generation, the trajectory buffer, training batches and the validation set.

    Parameters
    ----------
    env
        The problem.
    val_instances, val_references
        Fixed validation instances and optional reference costs (NaN where unknown).
    mode
        "si" (self-improvement: sample with the best policy each epoch) or "sl" (train on
        `expert` = (instances, actions) only).
    sampler, search
        How and with which search config the epoch's instances are decoded (mode si).
    p_min_schedule
        {first epoch: p_min} overriding `search.p_min` from that epoch on, e.g. {0: 1.0, 500: 0.95}.
    fixed_instances
        The instances to sample every epoch instead of generating `instances_per_epoch` new ones.
    tie_break
        "first" (the first best sequence, as the sampler returns it) or "random" (uniform among
        the best; sampling then runs in-process with the sampler's `chunk_size`).
    sample_policy
        "best" (Algorithm 1) or "trained": the trained policy decodes the epoch's instances and
        the buffer holds only that epoch's trajectories (the Gumbeldore authors' Gomoku setup).
    greedy_candidate
        Also decode each instance greedily with the sampling policy and keep the greedy
        solution where it beats the sampler's best (neither the paper nor the authors' code
        does this); true, or the first epoch that does. Measured reason, the JSSP CPU run at
        epochs 18-20: the best of Gumbeldore 32 x 4 was 2.2-3.8 % worse than the same policy's
        greedy on each epoch's instances, and beam 32 was 3.7 % worse (docs/jssp.md), so the
        run imitated worse than its greedy.
        Switched on at epoch 23, greedy won on 5 of 6 instances and validation went from 1.24
        to 0.71 %.
    imitation, augment
        "subtrajectories" (batches of `env.training_batch` states) or "trajectories" (batches
        of `batch_size` whole trajectories, each under a random env symmetry: any with
        `augment` true, the listed codes with a list; nco.training.trajectories).
    """

    def __init__(
        self,
        env: Env,
        val_instances: Batch,
        val_references: torch.Tensor | None = None,
        *,
        mode: str = "si",
        sampler: Sampler | None = None,
        search: Mapping[str, Any] | None = None,
        expert: tuple[Batch, torch.Tensor] | None = None,
        instances_per_epoch: int = 1000,
        batches_per_epoch: int = 1000,
        batch_size: int = 1024,
        buffer_capacity: int | None = None,
        val_batch_size: int = 1000,
        p_min_schedule: Mapping[int, float] | None = None,
        seed: int = 0,
        fixed_instances: Batch | None = None,
        tie_break: str = "first",
        sample_policy: str = "best",
        imitation: str = "subtrajectories",
        augment: bool | Sequence[int] = True,
        greedy_candidate: bool | int = False,
    ) -> None:
        super().__init__()
        check_imitation(imitation)
        if mode not in MODES:
            raise ValueError(f"train config: unknown mode {mode!r}; expected one of {MODES}.")
        if mode == "si" and (sampler is None or search is None):
            raise ValueError("train config: mode 'si' needs a sampler and a search config.")
        if mode == "sl" and expert is None:
            raise ValueError("train config: mode 'sl' needs expert data (set sl_data).")
        if tie_break not in TIE_BREAKS:
            raise ValueError(
                f"training config: expected tie_break in {TIE_BREAKS}, got {tie_break!r}."
            )
        if sample_policy not in SAMPLE_POLICIES:
            raise ValueError(
                f"training config: expected sample_policy in {SAMPLE_POLICIES}, "
                f"got {sample_policy!r}."
            )
        for name, value in (
            ("instances_per_epoch", instances_per_epoch),
            ("batches_per_epoch", batches_per_epoch),
            ("batch_size", batch_size),
            ("val_batch_size", val_batch_size),
        ):
            if value < 1:
                raise ValueError(f"training config: expected {name} >= 1, got {value}.")
        if p_min_schedule and search is not None:
            try:
                decoder_kwargs({**search, "p_min": 1.0})
            except ValueError as err:
                raise ValueError(
                    "training config: p_min_schedule needs a search method that takes p_min "
                    f"(gumbeldore), got {search.get('method')!r}."
                ) from err
        self.env = env
        self.mode = mode
        self.sampler = sampler
        self.search = dict(search or {})
        self.expert = expert
        self.instances_per_epoch = instances_per_epoch
        self.batches_per_epoch = batches_per_epoch
        self.batch_size = batch_size
        self.val_batch_size = val_batch_size
        self.p_min_schedule = dict(p_min_schedule or {})
        self.seed = seed
        self.fixed_instances = fixed_instances
        self.tie_break = tie_break
        self.sample_policy = sample_policy
        self.imitation, self.augment = imitation, augment
        self.greedy_from = first_epoch("greedy_candidate", greedy_candidate)
        refs = val_references
        if refs is None:
            refs = torch.full((val_instances.batch_size,), float("nan"), dtype=torch.float64)
        if refs.shape != (val_instances.batch_size,):
            raise ValueError(
                f"validation data: expected {val_instances.batch_size} reference costs, "
                f"got shape {tuple(refs.shape)}."
            )
        self.val_instances, self.val_references = val_instances, refs.to(torch.float64)
        self.buffer = TrajectoryBuffer(buffer_capacity if mode == "si" else None)
        self.buffer_version = 0  # the module's best_version the buffer was sampled with
        self.collected_epoch = -1  # the last epoch whose sampling step is in the buffer
        self.epoch_stats: dict[str, float] = {}
        self.sampling = False  # inside the sampling step (nco-train stops it on SIGTERM)

    def search_for_epoch(self, epoch: int) -> dict[str, Any]:
        """The search config of `epoch`, with p_min taken from the schedule."""
        cfg = dict(self.search)
        p_min = p_min_for_epoch(self.p_min_schedule, epoch)
        if p_min is not None:
            cfg["p_min"] = p_min
        return cfg

    def setup(self, stage: str) -> None:
        """SL: load the expert trajectories into the buffer once."""
        if self.mode == "sl" and self.expert is not None and len(self.buffer) == 0:
            self.buffer.add(*self.expert)

    def collect(self, best_policy: torch.nn.Module, best_version: int, epoch: int) -> None:
        """The sampling step of Algorithm 1 for `epoch` (mode si); fills `epoch_stats`."""
        if self.sampler is None:
            raise ValueError("train config: mode 'si' needs a sampler.")
        if best_version != self.buffer_version or self.sample_policy == "trained":
            self.buffer.clear()
            self.buffer_version = best_version
        start = time.perf_counter()
        instances = self.fixed_instances
        if instances is None:
            instances = self.env.generate(
                self.instances_per_epoch, seeded_generator(self.seed, epoch, GENERATE)
            )
        rank, world = self._rank()
        chunk_size = int(getattr(self.sampler, "chunk_size", 64))
        first, lo, hi = rank_chunks(instances.batch_size, chunk_size, rank, world)
        shard = instances.index(torch.arange(lo, hi))
        seed = derive_seed(self.seed, epoch, SAMPLE, 0)  # the same on every rank
        search = self.search_for_epoch(epoch)
        mine: tuple[Batch, Best, dict[str, float]] | None = None
        if hi > lo:
            self.sampling = True  # left set if interrupted: nco-train reports where it stopped
            if self.tie_break == "random":
                best = sample_random_ties(
                    best_policy, self.env, shard, search, seed, chunk_size, first
                )
            else:
                best = self.sampler.sample(best_policy, shard, search, seed, first)
            found = dict(getattr(self.sampler, "stats", {}))
            if self.greedy_from is not None and epoch >= self.greedy_from:
                greedy = sample_chunk(
                    best_policy, self.env, shard, {"method": "greedy", "batch_size": chunk_size}, 0
                )  # summed over ranks below; the two costs become means
                found["greedy_kept"] = float((greedy.objective > best.objective).sum())
                found["sampler_cost"] = float(self.env.cost(best.objective).sum())
                found["greedy_cost"] = float(self.env.cost(greedy.objective).sum())
                best = better_of(best, greedy)
            self.sampling = False
            mine = (shard, best, found)
        parts = [p for p in all_ranks(mine, world) if p is not None]
        stats: dict[str, float] = {}
        for part, part_best, part_stats in parts:
            self.buffer.add(part, part_best.actions)
            for key, value in part_stats.items():  # e.g. Ray's workers_replaced, over ranks
                stats[f"sample/{key}"] = stats.get(f"sample/{key}", 0.0) + value
        objective = torch.cat([b.objective for _, b, _ in parts])
        for key in ("sample/sampler_cost", "sample/greedy_cost"):
            if key in stats:
                stats[key] /= objective.numel()
        self.epoch_stats = {
            "sample/objective": float(objective.mean()),
            "sample/cost": float(self.env.cost(objective).mean()),
            "time/sampling_s": time.perf_counter() - start,
            **stats,
        }

    def train_dataloader(self) -> DataLoader:
        """The epoch's batches; in SI mode, runs the sampling step first."""
        trainer = self.trainer
        assert trainer is not None  # Lightning attaches the DataModule before asking for data
        epoch = trainer.current_epoch
        if self.mode == "si" and epoch > self.collected_epoch:
            module = cast("SelfImprovementModule", trainer.lightning_module)
            trained = module.evaluated_policy  # the weight average with training.ema_decay
            policy = module.best_policy if self.sample_policy == "best" else trained
            self.collect(policy, module.best_version, epoch)
            self.collected_epoch = epoch
        elif self.mode == "si":
            # Resuming from a checkpoint of a finished epoch, Lightning asks for that epoch's
            # loader once more: its samples are already in the restored buffer.
            self.epoch_stats = {}
        else:
            self.epoch_stats = {}
        self.epoch_stats["buffer/size"] = float(len(self.buffer))
        if len(self.buffer) == 0:
            raise ValueError("train config: the trajectory buffer is empty.")
        rank, _ = self._rank()
        seed = derive_seed(self.seed, epoch, TRAIN, rank)
        groups, num, size = self.buffer.groups, self.batches_per_epoch, self.batch_size
        batches: IterableDataset
        if self.imitation == "trajectories":
            batches = TrajectoryBatches(self.env, groups, num, size, seed, self.augment)
        else:
            batches = SubTrajectoryBatches(self.env, groups, num, size, seed)
        return DataLoader(batches, batch_size=None, collate_fn=_identity)

    def val_dataloader(self) -> DataLoader:
        """Fixed validation chunks (instances, reference costs, row indices); under DDP each
        rank validates rows rank, rank + world, ... (the module gathers them in row order)."""
        rank, world = self._rank()
        rows = torch.arange(rank, self.val_instances.batch_size, world)
        chunks = [
            (self.val_instances.index(idx), self.val_references[idx], idx)
            for idx in rows.split(self.val_batch_size)
        ]
        # A list is a map-style dataset (len, getitem); torch's stubs ask for a Dataset.
        return DataLoader(chunks, batch_size=None, collate_fn=_identity)  # type: ignore[arg-type]

    def transfer_batch_to_device(
        self, batch: tuple[Any, ...], device: torch.device, dataloader_idx: int
    ) -> tuple[Any, ...]:
        """Move a (Batch, tensor, ...) tuple; Lightning cannot move frozen dataclasses itself."""
        return tuple(item.to(device) for item in batch)

    def state_dict(self) -> dict[str, Any]:
        """The buffer, the policy version it was sampled with and its last epoch (for resume).

        In SL mode the buffer is the expert file, which `setup` reads again: it is not stored
        (it made a 100,000-instance run's last.ckpt 55 MB instead of 9 MB).
        """
        return {
            "buffer": None if self.mode == "sl" else self.buffer.state_dict(),
            "buffer_version": self.buffer_version,
            "collected_epoch": self.collected_epoch,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what `state_dict` saved."""
        if state_dict["buffer"] is not None and self.mode == "si":
            self.buffer.load_state_dict(state_dict["buffer"])
        self.buffer_version = int(state_dict["buffer_version"])
        self.collected_epoch = int(state_dict.get("collected_epoch", -1))

    def _rank(self) -> tuple[int, int]:
        trainer = self.trainer
        if trainer is None:
            return 0, 1
        return trainer.global_rank, trainer.world_size


def _identity(x: Any) -> Any:
    return x
