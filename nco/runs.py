"""Read an `nco-train` run folder: its per-epoch metrics, checkpoints and how far it got.

A run folder (`hydra.run.dir`) holds `logs/metrics.csv` (Lightning's CSV log: an `epoch`
column and one column per metric, each row filling only the metrics logged at that step),
`best.pt` (the policy of the best validated epoch) and `checkpoints/last.ckpt` (what a rerun
of the same command resumes from). Studies, reports and plots read runs through `Run` instead
of parsing the CSV each their own way.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

METRICS_FILE = Path("logs") / "metrics.csv"
BEST_FILE = Path("best.pt")
LAST_FILE = Path("checkpoints") / "last.ckpt"
VALIDATED = "val/objective"  # logged once per validated epoch

Status = Literal["new", "resumable", "finished", "closed"]


def read_metrics_file(path: Path) -> list[dict[str, float]]:
    """The rows of a Lightning metrics CSV in file order, each with only its filled cells as
    floats (`epoch` included). ValueError naming the file when it is missing, has no `epoch`
    column, or a cell is not a number."""
    if not path.is_file():
        raise ValueError(f"{path}: no such metrics file (expected <run>/{METRICS_FILE}).")
    rows: list[dict[str, float]] = []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is not None and "epoch" not in reader.fieldnames:
            raise ValueError(f"{path}: expected an 'epoch' column, got {reader.fieldnames}.")
        for line, row in enumerate(reader, start=2):
            try:
                rows.append({k: float(v) for k, v in row.items() if k and v not in ("", None)})
            except ValueError as err:
                raise ValueError(f"{path}:{line}: expected numbers, {err}.") from None
    return rows


def per_epoch(
    rows: list[dict[str, float]], names: list[str] | tuple[str, ...]
) -> dict[str, dict[int, float]]:
    """Per metric its value per epoch (the last logged in that epoch), in epoch order."""
    out: dict[str, dict[int, float]] = {name: {} for name in names}
    for row in rows:
        for name in names:
            if name in row:
                out[name][int(row["epoch"])] = row[name]
    return {name: dict(sorted(values.items())) for name, values in out.items()}


@dataclass(frozen=True)
class Run:
    """One `nco-train` run folder (it need not exist yet: a run about to start is `new`)."""

    folder: Path

    @property
    def metrics_file(self) -> Path:
        """`<run>/logs/metrics.csv`."""
        return self.folder / METRICS_FILE

    @property
    def best_file(self) -> Path:
        """`<run>/best.pt`, the best validated policy."""
        return self.folder / BEST_FILE

    @property
    def last_file(self) -> Path:
        """`<run>/checkpoints/last.ckpt`, what a rerun resumes from."""
        return self.folder / LAST_FILE

    def has_metrics(self) -> bool:
        """Whether the run has logged anything."""
        return self.metrics_file.is_file()

    def rows(self) -> list[dict[str, float]]:
        """Its metrics rows in logged order ([] before the first); see `read_metrics_file`."""
        return read_metrics_file(self.metrics_file) if self.has_metrics() else []

    def metrics(self, names: list[str] | tuple[str, ...]) -> dict[str, dict[int, float]]:
        """Per metric its value per epoch (the last logged in that epoch), in epoch order."""
        return per_epoch(self.rows(), names)

    def metric(self, name: str) -> dict[int, float]:
        """One metric's value per epoch, in epoch order ({} when never logged)."""
        return self.metrics([name])[name]

    def epochs_done(self) -> int:
        """Validated epochs: one more than the last epoch that logged `val/objective` (0
        before the first)."""
        epochs = self.metric(VALIDATED)
        return max(epochs) + 1 if epochs else 0

    def status(self, max_epochs: int | None = None) -> Status:
        """`new` (nothing validated yet), `finished` (at least `max_epochs` validated),
        `resumable` (a rerun continues from `last.ckpt`) or `closed` (epochs validated but
        `last.ckpt` not kept, e.g. a committed run: extending it would start over)."""
        done = self.epochs_done()
        if done == 0:
            return "new"
        if max_epochs is not None and done >= max_epochs:
            return "finished"
        return "resumable" if self.last_file.is_file() else "closed"

    def wall_seconds(self, keys: tuple[str, ...]) -> dict[int, float]:
        """Per validated-or-timed epoch the sum of the timers `keys` (e.g. sampling, training
        and validation seconds), in epoch order."""
        total: dict[int, float] = {}
        for values in self.metrics(keys).values():
            for epoch, seconds in values.items():
                total[epoch] = total.get(epoch, 0.0) + seconds
        return dict(sorted(total.items()))

    def best_epoch(self, name: str = "val/gap") -> int | None:
        """The epoch with the lowest value of `name` (None when never logged); NaN never wins."""
        values = {e: v for e, v in self.metric(name).items() if not math.isnan(v)}
        return min(values, key=values.__getitem__) if values else None
