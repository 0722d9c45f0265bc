"""Training progress for output that is not a terminal: periodic one-line summaries."""

from __future__ import annotations

import sys
import time
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import ProgressBar

SHOWN = ("val/objective", "val/gap", "val/best_objective")


class LineProgress(ProgressBar):
    """A progress bar for log files: a line every `interval_s` seconds of training and one line
    per validated epoch (its sampling cost, validation metrics and wall time), instead of a tqdm
    bar that redraws once per step into the file."""

    def __init__(self, interval_s: float = 60.0) -> None:
        super().__init__()
        if interval_s <= 0:
            raise ValueError(f"progress: expected interval_s > 0, got {interval_s}.")
        self.interval_s = interval_s
        self._enabled = True
        self._epoch_start = self._last = time.monotonic()

    def disable(self) -> None:
        self._enabled = False

    def enable(self) -> None:
        self._enabled = True

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._epoch_start = self._last = time.monotonic()

    def on_train_batch_end(
        self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any, batch: Any, idx: int
    ) -> None:
        now = time.monotonic()
        if not self._enabled or now - self._last < self.interval_s:
            return
        self._last = now
        metrics = self.get_metrics(trainer, pl_module)
        loss = " ".join(f"{k} {v}" for k, v in metrics.items() if k.startswith("train/"))
        total = trainer.num_training_batches
        self._print(
            f"epoch {trainer.current_epoch} step {idx + 1}/{total} {loss} "
            f"({now - self._epoch_start:.0f} s)"
        )

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if not self._enabled or trainer.sanity_checking:
            return
        datamodule = getattr(trainer, "datamodule", None)  # absent from Trainer's type stubs
        stats = dict(getattr(datamodule, "epoch_stats", {}) or {})
        values = {k: stats[k] for k in ("sample/cost",) if k in stats}
        values.update(
            {k: float(trainer.callback_metrics[k]) for k in SHOWN if k in trainer.callback_metrics}
        )
        shown = " ".join(f"{k} {v:.4f}" for k, v in values.items())
        elapsed = time.monotonic() - self._epoch_start
        self._print(f"epoch {trainer.current_epoch} done: {shown} ({elapsed:.0f} s)")

    @staticmethod
    def _print(line: str) -> None:
        print(line, file=sys.stderr, flush=True)
