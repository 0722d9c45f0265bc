"""The results JSON every scoring command writes (`nco-baseline`, `nco-eval`), and its table.

One file per run: `{"problem", "dataset", "method", "num_instances", "objectives",
"references", "gaps", "mean_cost", "mean_gap", "wall_time_s", "solutions"}` (docs/evaluation.md),
plus the optional per-instance `times_s` and `names` and a free-form `info` dict. Objectives are
the problem's natural cost (tour length, makespan). References may be missing for some
instances (null): their gaps are null and `mean_gap` (percent) averages the others.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

REQUIRED = (
    "problem",
    "dataset",
    "method",
    "num_instances",
    "objectives",
    "references",
    "gaps",
    "mean_cost",
    "mean_gap",
    "wall_time_s",
)


def _finite_or_none(values: Any, n: int, field: str) -> list[float | None]:
    """A list of n floats with NaN (or None) mapped to None; ValueError on a wrong length."""
    values = list(values)
    if len(values) != n:
        raise ValueError(f"results: expected {n} values in '{field}', got {len(values)}.")
    out: list[float | None] = []
    for v in values:
        if v is None or (isinstance(v, float | np.floating) and math.isnan(v)):
            out.append(None)
        else:
            out.append(float(v))
    return out


@dataclasses.dataclass
class Results:
    """Per-instance costs of one method on one dataset, with gaps to references."""

    problem: str
    dataset: str
    method: str
    objectives: list[float]
    references: list[float | None] | None
    wall_time_s: float
    solutions: list[Any] | None = None
    times_s: list[float] | None = None
    names: list[str] | None = None
    info: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.objectives)
        self.objectives = [float(v) for v in self.objectives]
        if not all(math.isfinite(v) for v in self.objectives):
            raise ValueError("results: every value in 'objectives' must be finite.")
        if self.references is not None:
            self.references = _finite_or_none(self.references, n, "references")
        for field in ("solutions", "times_s", "names"):
            value = getattr(self, field)
            if value is not None and len(value) != n:
                raise ValueError(f"results: expected {n} entries in '{field}', got {len(value)}.")

    @property
    def num_instances(self) -> int:
        """Number of scored instances."""
        return len(self.objectives)

    @property
    def gaps(self) -> list[float | None] | None:
        """(cost - ref) / ref per instance; None where the reference is missing."""
        if self.references is None:
            return None
        return [
            None if r is None else (c - r) / r
            for c, r in zip(self.objectives, self.references, strict=True)
        ]

    @property
    def mean_cost(self) -> float:
        """Mean objective over all instances."""
        return float(np.mean(self.objectives)) if self.objectives else math.nan

    @property
    def mean_gap(self) -> float | None:
        """Mean of the available per-instance gaps, in percent; None without any reference."""
        gaps = [g for g in self.gaps or [] if g is not None]
        return 100.0 * float(np.mean(gaps)) if gaps else None

    @property
    def mean_reference(self) -> float | None:
        """Mean of the available references."""
        refs = [r for r in self.references or [] if r is not None]
        return float(np.mean(refs)) if refs else None

    def to_dict(self) -> dict[str, Any]:
        """The results JSON object (plus the optional fields that are set)."""
        out: dict[str, Any] = {
            "problem": self.problem,
            "dataset": self.dataset,
            "method": self.method,
            "num_instances": self.num_instances,
            "objectives": self.objectives,
            "references": self.references,
            "gaps": self.gaps,
            "mean_cost": self.mean_cost,
            "mean_gap": self.mean_gap,
            "wall_time_s": float(self.wall_time_s),
            "solutions": self.solutions,
        }
        for field in ("times_s", "names"):
            if getattr(self, field) is not None:
                out[field] = getattr(self, field)
        if self.info:
            out["info"] = self.info
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "results") -> Results:
        """Parse and validate a results object; derived fields must match the stored ones."""
        missing = [k for k in REQUIRED if k not in data]
        if missing:
            raise ValueError(f"{source}: missing fields {missing}.")
        res = cls(
            problem=data["problem"],
            dataset=data["dataset"],
            method=data["method"],
            objectives=data["objectives"],
            references=data["references"],
            wall_time_s=data["wall_time_s"],
            solutions=data.get("solutions"),
            times_s=data.get("times_s"),
            names=data.get("names"),
            info=data.get("info") or {},
        )
        if data["num_instances"] != res.num_instances:
            raise ValueError(
                f"{source}: 'num_instances' is {data['num_instances']} but there are "
                f"{res.num_instances} objectives."
            )
        stored, derived = data["gaps"], res.gaps
        if (stored is None) != (derived is None) or (
            derived is not None and not _close_lists(stored, derived)
        ):
            raise ValueError(f"{source}: 'gaps' do not equal (objective - reference) / reference.")
        if not _close(data["mean_gap"], res.mean_gap) or not _close(
            data["mean_cost"], res.mean_cost
        ):
            raise ValueError(f"{source}: 'mean_cost' or 'mean_gap' disagree with the objectives.")
        return res


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) or (math.isnan(a) and math.isnan(b))


def _close_lists(a: list[float | None], b: list[float | None]) -> bool:
    return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))


def write_results(results: Results, path: str | Path) -> Path:
    """Write the results JSON atomically (temporary file in the same folder, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(results.to_dict(), f, indent=1, allow_nan=False)
            f.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_results(path: str | Path) -> Results:
    """Read and validate a results JSON written by `write_results`."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err.msg}).") from err
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object.")
    return Results.from_dict(data, source=str(path))


def format_table(results: Results, max_rows: int | None = 50) -> str:
    """Per-instance rows (Instance, Cost, Ref, Gap %, Time) and a line of averages.

    With more than `max_rows` instances only the first `max_rows` rows are shown.
    """
    none: list[float | None] = [None] * results.num_instances
    gaps = results.gaps or none
    refs = results.references or none
    times: list[float | None] = list(results.times_s) if results.times_s else none
    names = results.names or [str(i) for i in range(results.num_instances)]
    width = max([8, *(len(n) for n in names)])
    header = f"{'Instance':<{width}} {'Cost':>12} {'Ref':>12} {'Gap %':>9} {'Time':>9}"
    lines = [f"{results.method} on {results.dataset} ({results.problem})", header]
    lines.append("-" * len(header))
    shown = range(results.num_instances if max_rows is None else min(max_rows, len(names)))
    for i in shown:
        gap = gaps[i]
        lines.append(
            f"{names[i]:<{width}} {results.objectives[i]:>12.6f} {_fmt(refs[i], 12, 6)} "
            f"{_fmt(None if gap is None else 100 * gap, 9, 3)} {_fmt(times[i], 9, 2)}"
        )
    if len(shown) < results.num_instances:
        lines.append(f"... ({results.num_instances - len(shown)} more)")
    lines.append("-" * len(header))
    mean_time = None if results.times_s is None else float(np.mean(results.times_s))
    lines.append(
        f"{'Average':<{width}} {results.mean_cost:>12.6f} {_fmt(results.mean_reference, 12, 6)} "
        f"{_fmt(results.mean_gap, 9, 3)} {_fmt(mean_time, 9, 2)}"
    )
    lines.append(f"{results.num_instances} instances, wall time {results.wall_time_s:.1f} s")
    with_ref = sum(r is not None for r in refs)
    if 0 < with_ref < results.num_instances:
        lines.append(
            f"Ref and Gap average over the {with_ref} instances with a reference; "
            f"{results.num_instances - with_ref} have none."
        )
    return "\n".join(lines)


def _fmt(value: float | None, width: int, digits: int) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.{digits}f}"
