"""Reference costs of a dataset by a classical solver, resumable (`nco-references`).

Each finished instance is appended to `<work_dir>/<set>__<solver>.jsonl` (index, cost, bound,
proven optimality, time, status, solver constants), and instances already there are skipped,
so an interrupted or time-capped run continues where it stopped when started again with the
same settings; on a machine without the log (it is git-ignored), the instances of the
committed reference file with the same solver, time limit and seed count as done; a `tag`
keeps a further run of the same solver apart (`<set>__<solver>-<tag>`).
At the end, the costs of all finished instances go to `<out_dir>/<set>__<solver>.npz`
(`indices` int32, `costs` float64, and for solvers that prove optimality `optimal` bool and
`bounds` float64) with an entry in `<out_dir>/manifest.json` (solver, settings, versions,
date, proof counts, solver time). `nco.datasets` attaches these as the set's references.
"""

from __future__ import annotations

import datetime
import importlib
import importlib.metadata
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from nco.baselines import get_solver, solve_all
from nco.datasets import GENERATED_DIR, REFERENCES_DIR, load_dataset, save_npz
from nco.solver import SolverResult

SOLVER_PACKAGES = {"lkh": "elkai", "exact": "ortools", "ortools": "ortools", "hgs": "pyvrp"}


def solver_constants(problem: str) -> dict[str, float]:
    """The numeric module constants of nco.problems.<problem>.solvers (scales, runs, tolerances).

    Each log line records them; a run that resumes a log made with other constants warns,
    since a heuristic's costs may depend on them (move the old log away to start afresh).
    """
    module = importlib.import_module(f"nco.problems.{problem}.solvers")
    return {k: v for k, v in vars(module).items() if k.isupper() and isinstance(v, int | float)}


def check_settings(where: str, recorded: dict, settings: dict, remedy: str) -> None:
    """ValueError naming `where` if `recorded` has another solver, time limit or seed."""
    for key, value in settings.items():
        if key != "constants" and recorded.get(key) != value:
            raise ValueError(
                f"{where}: field '{key}' is {recorded.get(key)!r}, this run uses {value!r}; "
                f"use the same settings or {remedy}."
            )


def read_done(path: Path, settings: dict) -> dict[int, dict]:
    """Finished instances of an earlier run; ValueError if its solver, limit or seed differ."""
    done: dict[int, dict] = {}
    warned = False
    if not path.is_file():
        return done
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:  # a line cut short by a kill: redo that instance
            print(f"{path}:{lineno}: skipping an incomplete line", file=sys.stderr)
            continue
        if row.get("constants") != settings["constants"] and not warned:
            print(f"{path}:{lineno}: made with solver constants {row.get('constants')}")
            warned = True
        check_settings(f"{path}:{lineno}", row, settings, "another --work-dir")
        done[int(row["index"])] = row
    return done


def committed_rows(out_dir: Path, file: str, settings: dict, done: dict[int, dict]) -> list[dict]:
    """Rows of a committed reference .npz that the log lacks, so a fresh machine resumes.

    The log is git-ignored and so absent on a new checkout; the .npz and its manifest entry
    are the durable record. Imported rows take the entry's mean time per instance and status
    "imported"; ValueError if the entry was made with another solver, time limit or seed.
    """
    path = out_dir / file
    manifest_path = out_dir / "manifest.json"
    if not path.is_file() or not manifest_path.is_file():
        return []
    entry = next(
        (e for e in json.loads(manifest_path.read_text()).get("entries", []) if e["file"] == file),
        None,
    )
    if entry is None:
        return []
    check_settings(
        f"{manifest_path}: entry '{file}'",
        entry["settings"],
        settings,
        "another --tag or --out-dir",
    )
    made_with = entry["settings"].get("constants") or [None]
    row_settings = {**settings, "constants": made_with[0] if len(made_with) == 1 else None}
    with np.load(path) as arrays:
        indices, costs = arrays["indices"], arrays["costs"]
        optimal = arrays["optimal"] if "optimal" in arrays else None
        bounds = arrays["bounds"] if "bounds" in arrays else None
    rows = []
    for k, index in enumerate(indices.tolist()):
        if index in done:
            continue
        res = SolverResult(
            cost=float(costs[k]),
            solution=[],
            time_s=entry["mean_time_s"],
            bound=None if bounds is None or np.isnan(bounds[k]) else float(bounds[k]),
            optimal=None if optimal is None else bool(optimal[k]),
            status="imported",
        )
        rows.append(result_row(index, res, row_settings))
    return rows


def result_row(index: int, res: SolverResult, settings: dict) -> dict:
    """One JSON line for a finished instance."""
    return {
        "index": index,
        "cost": res.cost,
        "bound": res.bound,
        "optimal": res.optimal,
        "time_s": round(res.time_s, 4),
        "status": res.status,
        **settings,
    }


def _complete_prefix(indices: np.ndarray) -> int:
    """K such that instances 0..K-1 are all done (`indices` sorted, unique)."""
    gaps = np.flatnonzero(indices != np.arange(len(indices)))
    return int(gaps[0]) if len(gaps) else len(indices)


def write_reference(
    rows: dict[int, dict], name: str, file: str, settings: dict, out_dir: Path
) -> dict:
    """Write the per-instance costs .npz `file` and its manifest entry; return the entry."""
    solver = settings["solver"]
    indices = np.array(sorted(rows), dtype=np.int32)
    arrays: dict[str, np.ndarray] = {
        "indices": indices,
        "costs": np.array([rows[i]["cost"] for i in indices], dtype=np.float64),
    }
    proofs = [rows[i]["optimal"] for i in indices]
    if any(p is not None for p in proofs):
        arrays["optimal"] = np.array([bool(p) for p in proofs])
        arrays["bounds"] = np.array(
            [np.nan if rows[i]["bound"] is None else rows[i]["bound"] for i in indices]
        )
    save_npz(out_dir / file, arrays, compress=True)
    times = [rows[i]["time_s"] for i in indices]
    constants: list[dict | None] = []  # every set of solver constants the rows were made with
    for i in indices:
        if rows[i].get("constants") not in constants:
            constants.append(rows[i].get("constants"))
    package = SOLVER_PACKAGES.get(solver)
    entry = {
        "file": file,
        "dataset": name,
        "solver": solver,
        "settings": {
            **settings,
            "constants": constants,
            "package": package,
            "version": importlib.metadata.version(package) if package else None,
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        },
        "date": datetime.date.today().isoformat(),
        "num_instances": len(indices),
        "complete_prefix": _complete_prefix(indices),
        "proven_optimal": int(arrays["optimal"].sum()) if "optimal" in arrays else None,
        "mean_cost": float(arrays["costs"].mean()),
        "solver_time_s": round(float(np.sum(times)), 1),
        "mean_time_s": round(float(np.mean(times)), 4),
    }
    manifest_path = out_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    entries = [e for e in manifest.get("entries", []) if e["file"] != file]
    manifest = {
        "description": "Reference costs computed by nco-references (nco.reference_costs); "
        "see nco/datasets.py for how they are attached to named sets.",
        "entries": sorted([*entries, entry], key=lambda e: e["file"]),
    }
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=".manifest.", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, manifest_path)
    return entry


def compute_references(
    data: str,
    solver: str,
    problem: str | None = None,
    limit: int | None = None,
    time_limit: float = 10.0,
    seed: int = 1234,
    workers: int = 1,
    max_wall: float | None = None,
    cache_dir: Path = GENERATED_DIR,
    work_dir: Path = GENERATED_DIR / "references",
    out_dir: Path = REFERENCES_DIR,
    tag: str = "",
    progress: bool = True,
) -> dict:
    """Solve the instances of `data` (its first `limit`) that the log and the committed file
    lack with `solver`, then write the reference file and its manifest entry; returns the
    entry ({} when nothing is solved). ValueError when the log or manifest was made with
    another solver, time limit or seed."""
    dataset = load_dataset(data, problem, cache_dir).head(limit)
    get_solver(dataset.problem, solver)
    settings = {
        "solver": solver,
        "time_limit": time_limit,
        "seed": seed,
        "constants": solver_constants(dataset.problem),
    }
    work_dir.mkdir(parents=True, exist_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    run = solver + (f"-{tag}" if tag else "")
    stem = f"{dataset.name.replace(':', '_')}__{run}"
    log = work_dir / f"{stem}.jsonl"
    done = read_done(log, settings)
    file = f"{stem}.npz"
    imported = committed_rows(out_dir, file, settings, done)
    if imported:
        with log.open("a") as f:
            f.writelines(json.dumps(row) + "\n" for row in imported)
        done.update((row["index"], row) for row in imported)
        print(f"{dataset.name}: took {len(imported)} instances from {out_dir}")
    todo = [i for i in range(len(dataset)) if i not in done]
    print(f"{dataset.name}: {len(done)} done, {len(todo)} to solve with {solver}")
    start = time.perf_counter()
    with log.open("a") as f:

        def append(index: int, res: SolverResult) -> None:
            row = result_row(index, res, settings)
            done[index] = row
            f.write(json.dumps(row) + "\n")
            f.flush()

        solve_all(
            dataset,
            solver,
            time_limit,
            seed,
            workers=workers,
            indices=todo,
            max_wall_s=max_wall,
            on_result=append,
            progress=progress,
        )
    print(f"solved {len(done)} of {len(dataset)} in {time.perf_counter() - start:.0f} s")
    if not done:
        return {}
    return write_reference(done, dataset.name, file, settings, out_dir)
