"""Dataset value types and the file helpers that problem readers use; no registry lookups.

A `Dataset` holds the arrays of one problem's `.npz` layout (TSP `coords`; CVRP `depot`,
`locs`, `demands`, `capacity`; JSSP `durations`, `machines`) with a leading instance dimension,
plus per-instance reference costs. Problems build these in their readers; the resolver
(`nco.datasets`) checks each against its problem's descriptor and finds named sets.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np


@dataclasses.dataclass(frozen=True)
class GeneratedSet:
    """A named set regenerated bit for bit on demand (and cached), declared by its problem.

    `shared_file` names a file of ../shared/data/reference/ whose `shared_field` holds published
    per-instance references (`shared_source` describes them); it is read when present.
    """

    problem: str
    generate: Callable[[], dict[str, np.ndarray]]
    shared_file: str | None = None
    shared_field: str = "tour_lengths"
    shared_source: str = ""


@dataclasses.dataclass(frozen=True)
class Dataset:
    """Instances of one problem as arrays with a leading instance dimension, and references.

    `references` is float64 (N,), NaN where an instance has no reference, or None when none has.
    `metric` names a library file's own cost metric (TSPLIB EDGE_WEIGHT_TYPE such as "EUC_2D");
    costs and references are then in that metric, and `weights` [N, n, n] (when present) holds
    its distances for the solvers. None means the problem's natural cost (Euclidean length).
    """

    problem: str
    name: str
    arrays: dict[str, np.ndarray]
    references: np.ndarray | None = None
    reference_source: str | None = None
    names: list[str] | None = None
    metric: str | None = None

    def __post_init__(self) -> None:
        if not self.arrays:
            raise ValueError(f"{self.name}: a dataset needs at least one array.")
        sizes = {k: len(v) for k, v in self.arrays.items()}
        if len(set(sizes.values())) != 1:
            raise ValueError(f"{self.name}: fields disagree on the number of instances: {sizes}.")
        n = len(self)
        if self.references is not None and np.shape(self.references) != (n,):
            raise ValueError(
                f"{self.name}: expected {n} references, got {np.shape(self.references)}."
            )
        if self.names is not None and len(self.names) != n:
            raise ValueError(f"{self.name}: expected {n} instance names, got {len(self.names)}.")

    def __len__(self) -> int:
        return len(next(iter(self.arrays.values())))

    def require(self, fields: Sequence[str]) -> Dataset:
        """This dataset, after checking it holds `fields` (its problem's layout)."""
        if not fields:
            raise ValueError(f"{self.name}: problem {self.problem} has no dataset fields.")
        missing = [f for f in fields if f not in self.arrays]
        if missing:
            raise ValueError(f"{self.name}: missing fields {missing} for problem {self.problem}.")
        return self

    def unit_square(self, coord_fields: Sequence[str]) -> tuple[Dataset, np.ndarray]:
        """The dataset with every routing instance that has a coordinate outside [0, 1]^2 mapped
        into it by (x - min) / scale, one scale for both axes (policies are trained on the unit
        square); other instances and problems are unchanged. Returns it and the per-instance
        scale (1 where unchanged), by which lengths computed on it convert back to file units.
        `coord_fields` are the problem descriptor's; `weights` (a library file's own distances)
        are left as they are.
        """
        fields = coord_fields
        scales = np.ones(len(self))
        if not fields:
            return self, scales
        pts = np.concatenate(
            [np.asarray(self.arrays[f], np.float64).reshape(len(self), -1, 2) for f in fields], 1
        )
        lo, hi = pts.min(axis=1), pts.max(axis=1)  # (N, 2)
        outside = (lo < 0).any(axis=1) | (hi > 1).any(axis=1)
        if not outside.any():
            return self, scales
        offsets = np.where(outside[:, None], lo, 0.0)
        scales = np.where(outside, (hi - lo).max(axis=1), 1.0)
        scales[scales <= 0] = 1.0
        arrays = dict(self.arrays)
        for f in fields:
            lead = (1,) * (arrays[f].ndim - 2)
            shifted = np.asarray(arrays[f], np.float64) - offsets.reshape(-1, *lead, 2)
            arrays[f] = shifted / scales.reshape(-1, *lead, 1)
        return dataclasses.replace(self, arrays=arrays), scales

    def instance(self, i: int) -> dict[str, np.ndarray]:
        """Instance `i` as the dict of arrays a `nco.solver.Solver` takes."""
        return {k: v[i] for k, v in self.arrays.items()}

    def head(self, limit: int | None, offset: int = 0) -> Dataset:
        """The first `limit` instances after skipping `offset` (all the rest when `limit` is
        None); a slice lets a long evaluation run in resumable parts."""
        if offset < 0 or (offset and offset >= len(self)):
            raise ValueError(
                f"{self.name}: expected offset in 0..{len(self) - 1} ({len(self)} instances), "
                f"got {offset}."
            )
        if limit is not None and limit < 1:
            raise ValueError(f"{self.name}: expected limit >= 1, got {limit}.")
        stop = len(self) if limit is None else min(offset + limit, len(self))
        if offset == 0 and stop == len(self):
            return self
        return dataclasses.replace(
            self,
            arrays={k: v[offset:stop] for k, v in self.arrays.items()},
            references=None if self.references is None else self.references[offset:stop],
            names=None if self.names is None else self.names[offset:stop],
        )

    @property
    def num_references(self) -> int:
        """Number of instances that have a reference."""
        return 0 if self.references is None else int(np.isfinite(self.references).sum())


def checksum(arrays: dict[str, np.ndarray]) -> str:
    """sha256 over the fields in sorted order: name, dtype, shape and little-endian bytes."""
    digest = hashlib.sha256()
    for key in sorted(arrays):
        arr = np.ascontiguousarray(arrays[key])
        arr = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
        digest.update(f"{key}:{arr.dtype.str}:{arr.shape};".encode())
        digest.update(arr.tobytes())
    return digest.hexdigest()


def save_npz(path: Path, arrays: dict[str, np.ndarray], compress: bool = False) -> None:
    """Write arrays as .npz (zip-compressed if `compress`) atomically: temporary file, rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".npz")
    os.close(fd)
    try:
        (np.savez_compressed if compress else np.savez)(tmp, allow_pickle=False, **arrays)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def npz_reference_source(path: Path) -> str | None:
    """The `reference_source` string stored in an .npz file, if any."""
    with np.load(path, allow_pickle=False) as data:
        return str(data["reference_source"]) if "reference_source" in data.files else None


BEST_KNOWN_TABLES = ("bestSolutions.txt", "best_known.csv", "best_known.txt", "solutions")


def best_known(file: Path, name: str) -> tuple[float, str] | None:
    """The best-known cost of library instance `name` from a table beside `file`, with its source.

    A table is one of `BEST_KNOWN_TABLES` in the file's folder, one instance per line as
    `name value`, `name,value` or `name : value` (TSPLIB's `solutions` file; a trailing
    bracketed note such as "(opt)" is ignored); lines whose value is no number are skipped.
    """
    for table in BEST_KNOWN_TABLES:
        path = file.parent / table
        if not path.is_file():
            continue
        for line in path.read_text().splitlines():
            tokens = line.replace(",", " ").replace(":", " ").split()
            if len(tokens) >= 2 and tokens[0] in (name, file.stem):
                try:
                    return float(tokens[1]), path.name
                except ValueError:
                    continue
    return None
