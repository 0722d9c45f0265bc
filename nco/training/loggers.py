"""A CSV logger whose metrics file survives resuming: earlier rows are kept and appended to."""

from __future__ import annotations

import csv
import os

from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.loggers.csv_logs import ExperimentWriter


class _AppendingWriter(ExperimentWriter):
    """Lightning's CSV writer, except that an existing metrics file is continued, not deleted."""

    def _check_log_dir_exists(self) -> None:
        if os.path.isfile(self.metrics_file_path):
            with open(self.metrics_file_path, newline="") as f:
                self.metrics_keys = list(csv.DictReader(f).fieldnames or [])


class ResumableCSVLogger(CSVLogger):
    """`lightning.pytorch.loggers.CSVLogger` for runs that resume in their own folder.

    Lightning's logger deletes `metrics.csv` when it finds one, so resuming a run lost the
    learning curve of every earlier chunk. This one appends to it; `drop_from_epoch` removes the
    rows of epochs that a killed run had started but not checkpointed, so a resumed run logs
    every epoch exactly once.
    """

    @property
    def experiment(self) -> ExperimentWriter:
        writer = self._experiment
        if not isinstance(writer, _AppendingWriter):  # only this property sets it
            os.makedirs(self.root_dir, exist_ok=True)
            writer = _AppendingWriter(log_dir=self.log_dir)
            self._experiment = writer
        return writer

    def drop_from_epoch(self, epoch: int) -> int:
        """Remove saved and pending rows logged at `epoch` or later; returns how many went."""
        writer = self.experiment
        kept = [m for m in writer.metrics if _epoch(m.get("epoch")) < epoch]
        dropped = len(writer.metrics) - len(kept)
        writer.metrics = kept
        path = writer.metrics_file_path
        if not os.path.isfile(path):
            return dropped
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            fields, rows = list(reader.fieldnames or []), list(reader)
        keep = [r for r in rows if _epoch(r.get("epoch")) < epoch]
        if len(keep) < len(rows):
            tmp = f"{path}.tmp"
            with open(tmp, "w", newline="") as f:
                out = csv.DictWriter(f, fieldnames=fields)
                out.writeheader()
                out.writerows(keep)
            os.replace(tmp, path)
        return dropped + len(rows) - len(keep)


def _epoch(value: object) -> float:
    """A row's epoch; rows without one (never written by the trainer) count as epoch -1."""
    if value in (None, ""):
        return -1.0
    return float(value)  # type: ignore[arg-type]
