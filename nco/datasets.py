"""Datasets by name or path: `data=kool:tsp100_test`, `data=taillard:15x15`, `data=my.npz`.

A `Dataset` holds the arrays of DESIGN.md's `.npz` layout (TSP `coords`; CVRP `depot`, `locs`,
`demands`, `capacity`; JSSP `durations`, `machines`) with a leading instance dimension, plus
per-instance reference costs. Named sets:

- `kool:{tsp,cvrp}{20,50,100}_{test,val}`: Kool et al.'s 10,000-instance sets, regenerated bit
  for bit from numpy legacy seeds 1234 (test) / 4321 (val) and cached in data/generated/.
- `bq:tsp{200,500}` (seed 777) and `lehd:cvrp{200,500}` (seeds 12345 / 1234): the 128-instance
  generalization sets, also regenerated bit for bit; their published references (optimal tours,
  LKH-3) are read from ../shared/data/reference/ when that folder exists.
- `taillard:ta01` ... `taillard:ta80` or a size such as `taillard:15x15`, with best-known upper
  bounds as references.

References computed by scripts/compute_references.py live in data/references/ and may cover only
some instances: `references` is then NaN for the others, and gaps are taken where present. When
several sources cover an instance, the smallest cost (the best known) is its reference.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
GENERATED_DIR = REPO / "data" / "generated"
REFERENCES_DIR = REPO / "data" / "references"
SHARED_REFERENCE_DIR = REPO / ".." / "shared" / "data" / "reference"

PROBLEMS = ("tsp", "cvrp", "jssp")
FIELDS = {
    "tsp": ("coords",),
    "cvrp": ("depot", "locs", "demands", "capacity"),
    "jssp": ("durations", "machines"),
}
COORD_FIELDS = {"tsp": ("coords",), "cvrp": ("depot", "locs")}  # routing coordinates
KOOL_SIZES = (20, 50, 100)
KOOL_SPLIT_SEEDS = {"test": 1234, "val": 4321}
KOOL_NUM = 10_000
CVRP_CAPACITY = {10: 20, 20: 30, 50: 40, 100: 50, 200: 80, 500: 100, 1000: 250}
GENERALIZATION_SETS = {  # name: (problem, size, numpy legacy seed, shared reference file)
    "bq:tsp200": ("tsp", 200, 777, "tsp200_bq_128.npz"),
    "bq:tsp500": ("tsp", 500, 777, "tsp500_bq_128.npz"),
    "lehd:cvrp200": ("cvrp", 200, 12345, "cvrp200_128.npz"),
    "lehd:cvrp500": ("cvrp", 500, 1234, "cvrp500_128.npz"),
}
GENERALIZATION_NUM = 128


@dataclasses.dataclass(frozen=True)
class Dataset:
    """Instances of one problem as arrays with a leading instance dimension, and references.

    `references` is float64 (N,), NaN where an instance has no reference, or None when none has.
    """

    problem: str
    name: str
    arrays: dict[str, np.ndarray]
    references: np.ndarray | None = None
    reference_source: str | None = None
    names: list[str] | None = None

    def __post_init__(self) -> None:
        if self.problem not in PROBLEMS:
            raise ValueError(f"{self.name}: expected problem in {PROBLEMS}, got {self.problem!r}.")
        missing = [f for f in FIELDS[self.problem] if f not in self.arrays]
        if missing:
            raise ValueError(f"{self.name}: missing fields {missing} for problem {self.problem}.")
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

    def unit_square(self) -> tuple[Dataset, np.ndarray]:
        """The dataset with every routing instance that has a coordinate outside [0, 1]^2 mapped
        into it by (x - min) / scale, one scale for both axes (policies are trained on the unit
        square); other instances and problems are unchanged. Returns it and the per-instance
        scale (1 where unchanged), by which lengths computed on it convert back to file units.
        """
        fields = COORD_FIELDS.get(self.problem, ())
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

    def head(self, limit: int | None) -> Dataset:
        """The first `limit` instances (all when `limit` is None)."""
        if limit is None or limit >= len(self):
            return self
        if limit < 1:
            raise ValueError(f"{self.name}: expected limit >= 1, got {limit}.")
        return dataclasses.replace(
            self,
            arrays={k: v[:limit] for k, v in self.arrays.items()},
            references=None if self.references is None else self.references[:limit],
            names=None if self.names is None else self.names[:limit],
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


def kool_tsp(num: int, size: int, seed: int) -> dict[str, np.ndarray]:
    """Kool et al.'s TSP generator: `np.random.seed(seed); uniform(size=(num, size, 2))`."""
    rng = np.random.RandomState(seed)
    return {"coords": rng.uniform(size=(num, size, 2))}


def kool_cvrp(num: int, size: int, seed: int, capacity: int | None = None) -> dict[str, np.ndarray]:
    """Kool et al.'s CVRP generator: depots, then locations, then demands randint(1, 10).

    The capacity defaults to the standard one for `size` (50 for 100 customers).
    """
    if capacity is None:
        if size not in CVRP_CAPACITY:
            raise ValueError(f"No standard CVRP capacity for {size} customers; pass capacity.")
        capacity = CVRP_CAPACITY[size]
    rng = np.random.RandomState(seed)
    depot = rng.uniform(size=(num, 2))
    locs = rng.uniform(size=(num, size, 2))
    demands = rng.randint(1, 10, size=(num, size)).astype(np.int64)
    return {
        "depot": depot,
        "locs": locs,
        "demands": demands,
        "capacity": np.full(num, capacity, dtype=np.int64),
    }


def named_sets() -> list[str]:
    """Every named set except Taillard's (`taillard:ta01`..`ta80`, `taillard:JxM`)."""
    kool = [
        f"kool:{p}{n}_{split}"
        for p in ("tsp", "cvrp")
        for n in KOOL_SIZES
        for split in KOOL_SPLIT_SEEDS
    ]
    return kool + list(GENERALIZATION_SETS)


def _parse_named(name: str) -> tuple[str, int, int, int]:
    """Problem, size, seed and instance count of a generated named set."""
    match = re.fullmatch(r"kool:(tsp|cvrp)(\d+)_(test|val)", name)
    if match and int(match.group(2)) in KOOL_SIZES:
        seed = KOOL_SPLIT_SEEDS[match.group(3)]
        return match.group(1), int(match.group(2)), seed, KOOL_NUM
    if name in GENERALIZATION_SETS:
        problem, size, seed, _ = GENERALIZATION_SETS[name]
        return problem, size, seed, GENERALIZATION_NUM
    raise ValueError(
        f"Unknown dataset {name!r}; expected one of {named_sets()} or taillard:<spec>."
    )


def generate_named(name: str) -> tuple[str, dict[str, np.ndarray]]:
    """Problem and arrays of a generated named set (Kool or generalization set)."""
    problem, size, seed, num = _parse_named(name)
    make = kool_tsp if problem == "tsp" else kool_cvrp
    return problem, make(num, size, seed)


def cache_path(name: str, cache_dir: Path | None = None) -> Path:
    """Where a generated named set is cached: `kool:tsp100_test` -> kool_tsp100_test.npz."""
    return Path(cache_dir or GENERATED_DIR) / (name.replace(":", "_") + ".npz")


def save_npz(path: Path, arrays: dict[str, np.ndarray], compress: bool = False) -> None:
    """Write arrays as .npz (zip-compressed if `compress`) atomically: temporary file, rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".npz")
    os.close(fd)
    try:
        (np.savez_compressed if compress else np.savez)(tmp, **arrays)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _cached(name: str, cache_dir: Path | None) -> tuple[str, dict[str, np.ndarray]]:
    """A generated named set from the cache, generating (and caching) it when missing."""
    path = cache_path(name, cache_dir)
    if path.is_file():
        problem = _parse_named(name)[0]
        with np.load(path, allow_pickle=False) as data:
            return problem, {k: data[k] for k in FIELDS[problem]}
    problem, arrays = generate_named(name)
    try:
        save_npz(path, arrays)
    except OSError as err:
        warnings.warn(f"Could not cache {name} at {path}: {err}", stacklevel=3)
    return problem, arrays


def reference_manifest(references_dir: Path | None = None) -> list[dict]:
    """Entries of data/references/manifest.json (empty when there is none)."""
    path = Path(references_dir or REFERENCES_DIR) / "manifest.json"
    if not path.is_file():
        return []
    return json.loads(path.read_text())["entries"]


def project_references(
    name: str, num: int, references_dir: Path | None = None
) -> list[tuple[np.ndarray, str]]:
    """Per-instance costs (NaN where missing) and a description, per stored reference file."""
    ref_dir = Path(references_dir or REFERENCES_DIR)
    found = []
    for entry in reference_manifest(ref_dir):
        if entry["dataset"] != name:
            continue
        path = ref_dir / entry["file"]
        if not path.is_file():
            raise ValueError(f"{ref_dir / 'manifest.json'}: lists {entry['file']}, not found.")
        with np.load(path, allow_pickle=False) as data:
            idx, costs = data["indices"], data["costs"]
        refs = np.full(num, np.nan)
        keep = idx < num
        refs[idx[keep]] = costs[keep]
        proven = entry.get("proven_optimal")
        status = f", {proven} proven optimal" if proven is not None else ""
        found.append((refs, f"{entry['solver']} on {len(idx)} instances{status} ({entry['file']})"))
    return found


def _merge(sources: list[tuple[np.ndarray, str]]) -> tuple[np.ndarray | None, str | None]:
    """Per-instance minimum over the sources (NaN where none has a value)."""
    if not sources:
        return None, None
    stacked = np.stack([refs for refs, _ in sources])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns stay NaN
        merged = np.nanmin(stacked, axis=0)
    return merged, "; ".join(desc for _, desc in sources)


def _shared_references(name: str, num: int) -> list[tuple[np.ndarray, str]]:
    problem, _, _, file = GENERALIZATION_SETS[name]
    path = SHARED_REFERENCE_DIR / file
    if not path.is_file():
        warnings.warn(
            f"{name}: reference file {path} not found; no published references.", stacklevel=3
        )
        return []
    with np.load(path, allow_pickle=False) as data:
        refs = data["tour_lengths"].astype(np.float64)[:num]
    solver = "Concorde optimal tours (BQ-NCO)" if problem == "tsp" else "LKH-3 (LEHD)"
    return [(refs, f"{solver}, ../shared/data/reference/{file}")]


def _taillard(spec: str) -> Dataset:
    try:
        from problems.jssp.taillard import taillard_group
    except ImportError as err:
        raise ValueError(f"taillard:{spec} needs problems.jssp.taillard ({err}).") from err
    instances, names, upper = taillard_group(spec)
    durations = instances.durations.cpu().numpy()
    if np.array_equal(durations, np.rint(durations)):
        durations = durations.astype(np.int64)
    arrays = {"durations": durations, "machines": instances.machines.cpu().numpy()}
    refs = upper.cpu().numpy().astype(np.float64)
    source = "best-known upper bounds, data/jssp/taillard_bounds.csv"
    return Dataset("jssp", f"taillard:{spec}", arrays, refs, source, names)


def _file_loader(problem: str) -> Callable:
    """The problem's reader of dataset files, imported on demand."""
    try:
        if problem == "tsp":
            from problems.tsp.io import load_tsp

            return load_tsp
        if problem == "cvrp":
            from problems.cvrp.io import load_cvrp

            return load_cvrp
        from problems.jssp.io import read_npz, read_orlib, read_taillard
    except ImportError as err:
        raise ValueError(f"Reading {problem} files needs problems.{problem}.io ({err}).") from err

    def load_jssp(path: Path) -> tuple:
        if path.suffix.lower() == ".npz":
            instances, refs, _ = read_npz(path)
            return instances, refs
        text = path.read_text().lower()
        return (read_taillard(path) if "nb of jobs" in text else read_orlib(path)), None

    return load_jssp


def _infer_problem(path: Path) -> str:
    """tsp / cvrp / jssp from the fields of an .npz file."""
    if path.suffix.lower() != ".npz":
        raise ValueError(f"{path}: pass problem= for files other than .npz.")
    with np.load(path, allow_pickle=False) as data:
        files = set(data.files)
    if "coords" in files:
        return "tsp"
    if {"depot", "locs"} <= files or "nodes" in files:
        return "cvrp"
    if "locs" in files:  # rl4co's TSP files
        return "tsp"
    if "durations" in files:
        return "jssp"
    raise ValueError(f"{path}: cannot tell the problem from fields {sorted(files)}.")


def _load_file(path: Path, problem: str | None) -> Dataset:
    problem = problem or _infer_problem(path)
    if problem not in PROBLEMS:
        raise ValueError(f"{path}: expected problem in {PROBLEMS}, got {problem!r}.")
    instances, refs = _file_loader(problem)(path)
    arrays = {field: getattr(instances, field).detach().cpu().numpy() for field in FIELDS[problem]}
    source = None
    if refs is not None:
        refs = np.asarray(refs, dtype=np.float64)
        source = path.name
        if path.suffix.lower() == ".npz":
            with np.load(path, allow_pickle=False) as data:
                if "reference_source" in data.files:
                    source = str(data["reference_source"])
    return Dataset(problem, str(path), arrays, refs, source)


def load_dataset(
    data: str | os.PathLike,
    problem: str | None = None,
    cache_dir: Path | None = None,
    references_dir: Path | None = None,
) -> Dataset:
    """Resolve `data=`: a named set (see the module docstring) or a dataset file.

    `problem`, when given, must match the set; for files it picks the reader (.npz files are
    recognised by their fields). Generated sets are cached in `cache_dir` (data/generated/).
    """
    text = str(data)
    if text.startswith("taillard:"):
        dataset = _taillard(text.split(":", 1)[1])
    elif re.match(r"^(kool|bq|lehd):", text):
        kind, arrays = _cached(text, cache_dir)
        num = len(next(iter(arrays.values())))
        sources = project_references(text, num, references_dir)
        if text in GENERALIZATION_SETS:
            sources = _shared_references(text, num) + sources
        refs, source = _merge(sources)
        dataset = Dataset(kind, text, arrays, refs, source)
    else:
        path = Path(text)
        if not path.is_file():
            raise ValueError(
                f"data={text!r} is neither a file nor a named set ({', '.join(named_sets())}, "
                "taillard:ta01, taillard:15x15)."
            )
        return _load_file(path, problem)
    if problem is not None and problem != dataset.problem:
        raise ValueError(f"data={text!r} is a {dataset.problem} set, not {problem}.")
    return dataset
