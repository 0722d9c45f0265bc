"""Datasets by name or path: `data=kool:tsp100_test`, `data=taillard:15x15`, `data=my.npz`.

A `Dataset` holds the arrays of DESIGN.md's `.npz` layout (TSP `coords`; CVRP `depot`, `locs`,
`demands`, `capacity`; JSSP `durations`, `machines`) with a leading instance dimension, plus
per-instance reference costs. Named sets:

Named sets belong to the problems (their descriptors in `nco/problems/<p>/problem.py` declare them;
this module names none):

- `kool:{tsp,cvrp}{20,50,100}_{test,val}`: Kool et al.'s 10,000-instance sets, regenerated bit
  for bit from numpy legacy seeds 1234 (test) / 4321 (val) and cached in data/generated/.
- `bq:tsp{200,500,1000}` (seed 777) and `lehd:cvrp{200,500,1000}` (seeds 12345 / 1234 / 1234):
  the 128-instance generalization sets, also regenerated bit for bit; their published
  references (optimal tours, LKH-3) are read from ../shared/data/reference/ when it exists.
- `taillard:ta01` ... `taillard:ta80` or a size such as `taillard:15x15`, with best-known upper
  bounds as references.

A folder of library files (`.tsp`, `.vrp`) is one dataset per file (`load_datasets`).

References computed by scripts/compute_references.py live in data/references/ and may cover only
some instances: `references` is then NaN for the others, and gaps are taken where present. When
several sources cover an instance, the smallest cost (the best known) is its reference.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from nco.paths import DATA_DIR, SOURCE_ROOT, generated_dir
from nco.registry import get_problem, load_plugins, problem_names

GENERATED_DIR = generated_dir()
REFERENCES_DIR = DATA_DIR / "references"  # shipped: read only in a wheel install
SHARED_REFERENCE_DIR = SOURCE_ROOT / ".." / "shared" / "data" / "reference"


def __getattr__(name: str) -> list[str]:
    """`PROBLEMS`: the registered problems that have dataset fields (read from the registry)."""
    if name == "PROBLEMS":
        return [p for p in problem_names() if get_problem(p).fields]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
        fields = get_problem(self.problem).fields
        if not fields:
            raise ValueError(f"{self.name}: problem {self.problem} has no dataset fields.")
        missing = [f for f in fields if f not in self.arrays]
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
        The coordinate fields are the problem descriptor's `coord_fields`; `weights` (a library
        file's own distances) are left as they are.
        """
        fields = get_problem(self.problem).coord_fields
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


def _generated_sets() -> dict[str, GeneratedSet]:
    """Every problem's generated named sets, by name."""
    load_plugins()
    sets: dict[str, GeneratedSet] = {}
    for name in problem_names():
        sets.update(get_problem(name).generated_sets())
    return sets


def named_sets() -> list[str]:
    """Every generated named set of the registered problems (not Taillard's `taillard:<spec>`)."""
    return list(_generated_sets())


def _generated(name: str) -> GeneratedSet:
    sets = _generated_sets()
    if name not in sets:
        raise ValueError(f"Unknown dataset {name!r}; expected one of {list(sets)}{_hints()}.")
    return sets[name]


def _hints() -> str:
    hints = [get_problem(p).dataset_hint for p in problem_names() if get_problem(p).dataset_hint]
    return f" or {', '.join(hints)}" if hints else ""


def generate_named(name: str) -> tuple[str, dict[str, np.ndarray]]:
    """Problem and arrays of a generated named set."""
    spec = _generated(name)
    return spec.problem, spec.generate()


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
    spec = _generated(name)
    path = cache_path(name, cache_dir)
    fields = get_problem(spec.problem).fields
    if path.is_file():
        with np.load(path, allow_pickle=False) as data:
            if set(fields) <= set(data.files):
                return spec.problem, {k: data[k] for k in fields}
    arrays = spec.generate()
    try:
        save_npz(path, arrays)
    except OSError as err:
        warnings.warn(f"Could not cache {name} at {path}: {err}", stacklevel=3)
    return spec.problem, arrays


def reference_manifest(references_dir: Path | None = None) -> list[dict]:
    """Entries of data/references/manifest.json (empty when there is none)."""
    path = Path(references_dir or REFERENCES_DIR) / "manifest.json"
    if not path.is_file():
        return []
    entries = json.loads(path.read_text()).get("entries")
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("dataset"), str) and isinstance(e.get("file"), str)
        for e in entries
    ):
        raise ValueError(f"{path}: field 'entries' expected a list of {{dataset, file, ...}}.")
    return entries


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
        if Path(entry["file"]).name != entry["file"]:
            raise ValueError(
                f"{ref_dir / 'manifest.json'}: field 'file' expected a file name in the folder, "
                f"got {entry['file']!r}."
            )
        if not path.is_file():
            raise ValueError(f"{ref_dir / 'manifest.json'}: lists {entry['file']}, not found.")
        with np.load(path, allow_pickle=False) as data:
            idx, costs = data["indices"], data["costs"]
        refs = np.full(num, np.nan)
        keep = idx < num
        refs[idx[keep]] = costs[keep]
        proven = entry.get("proven_optimal")
        status = f", {proven} proven optimal" if proven is not None else ""
        found.append(
            (refs, f"{entry.get('solver')} on {len(idx)} instances{status} ({entry['file']})")
        )
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


def _shared_references(name: str, spec: GeneratedSet, num: int) -> list[tuple[np.ndarray, str]]:
    if spec.shared_file is None:
        return []
    path = SHARED_REFERENCE_DIR / spec.shared_file
    if not path.is_file():
        warnings.warn(
            f"{name}: reference file {path} not found; no published references.", stacklevel=3
        )
        return []
    with np.load(path, allow_pickle=False) as data:
        refs = data[spec.shared_field].astype(np.float64)[:num]
    return [(refs, f"{spec.shared_source}, ../shared/data/reference/{spec.shared_file}")]


def npz_reference_source(path: Path) -> str | None:
    """The `reference_source` string stored in an .npz file, if any."""
    with np.load(path, allow_pickle=False) as data:
        return str(data["reference_source"]) if "reference_source" in data.files else None


def _reader(path: Path, problem: str | None) -> str:
    """The problem whose reader takes `path`: `problem`, else by suffix / .npz fields."""
    if problem is not None:
        if get_problem(problem).read is None:
            raise ValueError(f"{path}: problem {problem} has no dataset files.")
        return problem
    suffix = path.suffix.lower()
    keys: set[str] = set()
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as data:
            keys = set(data.files)
    found = []
    for name in problem_names():
        spec = get_problem(name)
        if spec.read is None:
            continue
        if suffix == ".npz" and spec.recognise is not None and spec.recognise(keys):
            found.append(name)
        elif suffix != ".npz" and suffix in spec.suffixes:
            found.append(name)
    if len(found) == 1:
        return found[0]
    if suffix == ".npz":
        raise ValueError(
            f"{path}: cannot tell the problem from fields {sorted(keys)}"
            + (f" (it fits {found})." if found else "; pass problem=.")
        )
    raise ValueError(f"{path}: pass problem= for files ending in {suffix!r}.")


def library_files(data: str | os.PathLike, problem: str | None = None) -> list[Path] | None:
    """The library files a folder `data=` holds (each its own instance), or None if no folder.

    Library files are those ending in a problem's `library_suffixes` (.tsp, .vrp); `problem`
    restricts them to that problem's and refuses other library files in the folder.
    """
    path = Path(data)
    if not path.is_dir():
        return None
    owners = {
        suffix: name for name in problem_names() for suffix in get_problem(name).library_suffixes
    }
    files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in owners)
    if not files:
        raise ValueError(f"data={path}: the folder holds no library files ({sorted(owners)}).")
    kinds = {owners[f.suffix.lower()] for f in files}
    wanted = problem or (kinds.pop() if len(kinds) == 1 else None)
    if wanted is None:
        raise ValueError(f"data={path}: the folder mixes problems; pass problem=.")
    wrong = [f.name for f in files if owners[f.suffix.lower()] != wanted]
    if wrong:
        raise ValueError(f"data={path}: {wrong} are not {wanted} files.")
    return files


def load_datasets(
    data: str | os.PathLike,
    problem: str | None = None,
    cache_dir: Path | None = None,
    references_dir: Path | None = None,
) -> list[Dataset]:
    """`data=` as datasets: one per library file of a folder, else the one `load_dataset` gives."""
    files = library_files(data, problem)
    if files is None:
        return [load_dataset(data, problem, cache_dir, references_dir)]
    return [load_dataset(f, problem) for f in files]


def load_dataset(
    data: str | os.PathLike,
    problem: str | None = None,
    cache_dir: Path | None = None,
    references_dir: Path | None = None,
) -> Dataset:
    """Resolve `data=`: a named set of a registered problem or a dataset file.

    `problem`, when given, must match the set; for files it picks the reader (others are found
    by suffix, .npz files by their fields). Generated sets are cached in `cache_dir`
    (data/generated/); their references come from ../shared/data/reference/ (published) and
    data/references/ (computed by scripts/compute_references.py), the smallest per instance.
    """
    text = str(data)
    path = Path(text)
    if path.is_file():
        return get_problem(_reader(path, problem)).read(path)
    dataset = None
    if text in _generated_sets():
        kind, arrays = _cached(text, cache_dir)
        num = len(next(iter(arrays.values())))
        sources = _shared_references(text, _generated(text), num)
        sources += project_references(text, num, references_dir)
        refs, source = _merge(sources)
        dataset = Dataset(kind, text, arrays, refs, source)
    elif ":" in text:
        for name in problem_names():
            loader = get_problem(name).dataset
            dataset = loader(text) if loader is not None else None
            if dataset is not None:
                break
    if dataset is None:
        kind = "Unknown dataset" if ":" in text else "Neither a file nor a named set:"
        raise ValueError(
            f"{kind} data={text!r}; expected a file, a folder of library files or a named set "
            f"({', '.join(named_sets())}{_hints().replace(' or ', ', ')})."
        )
    if problem is not None and problem != dataset.problem:
        raise ValueError(f"data={text!r} is a {dataset.problem} set, not {problem}.")
    return dataset


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
