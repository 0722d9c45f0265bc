"""The dataset resolver: `data=kool:tsp100_test`, `data=taillard:15x15`, `data=my.npz`, a folder.

Every `nco.dataset.Dataset` it returns is checked against its problem's descriptor (fields).
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

References computed by nco-references live in data/references/ and may cover only
some instances: `references` is then NaN for the others, and gaps are taken where present. When
several sources cover an instance, the smallest cost (the best known) is its reference.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np

from nco.dataset import (  # noqa: F401  (re-exported: the resolver's own value types)
    BEST_KNOWN_TABLES,
    Dataset,
    GeneratedSet,
    best_known,
    checksum,
    npz_reference_source,
    save_npz,
)
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


def _reader(path: Path, problem: str | None) -> str:
    """The problem whose reader takes `path`: `problem`, else by suffix / .npz fields."""
    if problem is not None:
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
    skipped: list[tuple[Path, str]] | None = None,
) -> list[Dataset]:
    """`data=` as datasets: one per library file of a folder, else the one `load_dataset` gives.

    With `skipped` (a list), a folder's files that cannot be read are appended to it as
    (file, reason) instead of failing the whole folder; a folder none of whose files can be
    read still raises.
    """
    files = library_files(data, problem)
    if files is None:
        return [load_dataset(data, problem, cache_dir, references_dir)]
    if skipped is None:
        return [load_dataset(f, problem) for f in files]
    datasets, refused = [], []
    for f in files:
        try:
            datasets.append(load_dataset(f, problem))
        except ValueError as err:
            refused.append((f, str(err)))
    if not datasets:
        reasons = "; ".join(reason for _, reason in refused)
        raise ValueError(f"data={data}: no file in the folder could be read: {reasons}")
    skipped.extend(refused)
    return datasets


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
    data/references/ (computed by nco-references), the smallest per instance.
    """
    text = str(data)
    path = Path(text)
    if path.is_file():
        spec = get_problem(_reader(path, problem))
        if spec.read is None:
            raise ValueError(f"{path}: problem {spec.name} has no dataset files.")
        return spec.read(path).require(spec.fields)
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
    return dataset.require(get_problem(dataset.problem).fields)
