"""Callbacks nco-train always adds: `best.pt` export, log flushing, memory release between
phases."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import lightning as L

from nco import checkpoint
from nco.allocator import release_freed_memory
from nco.training.module import SelfImprovementModule


class ExportBest(L.Callback):
    """After a validation that promoted the trained policy, save the best policy to `path`.

    The first validation of a run also writes the file (holding the initial policy if training
    did not beat it yet), so every run that validated has a `best.pt`.

    `model` and `problem` are the plain Hydra configs that rebuild policy and env; `meta` adds
    run facts (mode, seed, search) to the epoch and validation metrics recorded here.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        model: Mapping[str, Any],
        problem: Mapping[str, Any],
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        self.path = Path(path)
        self.model, self.problem, self.meta = dict(model), dict(problem), dict(meta or {})

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.sanity_checking or not trainer.is_global_zero:
            return
        if not isinstance(pl_module, SelfImprovementModule):
            return
        if not pl_module.improved and self.path.exists():
            return
        meta = {
            **self.meta,
            "epoch": pl_module.best_epoch,  # -1: the initial policy
            "val_objective": pl_module.best_objective,
            "val": dict(pl_module.last_val) if pl_module.improved else {},
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        checkpoint.save(self.path, pl_module.best_policy, self.model, self.problem, meta)


class KeepLogs(L.Callback):
    """Loggers lose no finished epoch when a run is killed, and log each epoch once on resume.

    Flushes every logger after each validation and at each epoch start (Lightning's CSV logger
    otherwise writes every 100 steps), and when the fit resumes from a checkpoint, drops the
    rows that a killed run logged for epochs it had not checkpointed (loggers with
    `drop_from_epoch`, e.g. `ResumableCSVLogger`).
    """

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.ckpt_path is None:
            return
        for logger in trainer.loggers:
            drop = getattr(logger, "drop_from_epoch", None)
            if callable(drop):
                drop(trainer.current_epoch)

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._flush(trainer)

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if not trainer.sanity_checking:
            self._flush(trainer)

    @staticmethod
    def _flush(trainer: L.Trainer) -> None:
        if trainer.is_global_zero:
            for logger in trainer.loggers:
                logger.save()


class ReleaseMemory(L.Callback):
    """Return the heap's free pages to the kernel after each epoch's sampling and after each
    validation (`nco.allocator.release_freed_memory`), so that a long run's resident set stays
    at one phase's need instead of growing epoch by epoch."""

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        release_freed_memory()  # the epoch's dataloader, i.e. its sampling, is built by now

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        release_freed_memory()
