"""Reference costs for a validation set from a classical solver: parallel, cached on disk.

The solver is named `<problem>:<solver>` ("tsp:lkh"), a classical solver of the problem's
descriptor (the ones `nco-baseline solver=` takes). Training runs of one study validate on the
same generated instances, so the costs are cached by content: the key is the solver, its time
limit and seed, and a hash of the instances' arrays
(which fixes problem, size, generator seed and count). A sweep or a resumed run reads them back
instead of solving 1000 instances again. The cache folder is `$NCO_CACHE_DIR/references`
(default `~/.cache/nco/references`); each entry is one .npz with the costs and a JSON manifest
of its key, written atomically. A file whose manifest or costs do not validate is recomputed
with a warning.

Progress: a tqdm bar in a terminal; otherwise (a log file, a cluster job) one summary line on
stderr every `SUMMARY_EVERY_S` seconds.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import torch

from nco.env import Batch
from nco.paths import user_cache
from nco.progress import progress_bar
from nco.registry import get_problem
from nco.solver import Solver

PARALLEL_ABOVE_S = 20.0  # estimated solve time above which a process pool is used
SUMMARY_EVERY_S = 60.0  # seconds between progress lines when stderr is not a terminal


def cache_dir() -> Path:
    """`$NCO_CACHE_DIR/references`, default `~/.cache/nco/references`."""
    return user_cache() / "references"


def instances_digest(instances: Batch) -> str:
    """SHA-256 of the instances' field names, dtypes, shapes and bytes."""
    digest = hashlib.sha256()
    for name, value in sorted(instances._items()):
        arr = np.ascontiguousarray(value.cpu().numpy())
        digest.update(f"{name}:{arr.dtype}:{arr.shape}".encode())
        digest.update(arr.tobytes())
    return digest.hexdigest()


def solver_of(solver: str) -> tuple[str, Solver]:
    """The problem name and solver function of `<problem>:<solver>`; ValueError naming the
    registered solvers otherwise."""
    problem, sep, name = solver.partition(":")
    if not sep:
        raise ValueError(
            f"problem.reference_solver: expected a solver name such as 'lkh', got {solver!r}."
        )
    return problem, get_problem(problem).solver(name)


def _legacy_solver(solver: str) -> str:
    """The dotted function path that keyed caches written before solvers were named."""
    problem, fn = solver_of(solver)
    return f"problems.{problem}.solvers.{fn.__name__}"


def cache_key(solver: str, instances: Batch, time_limit: float, seed: int) -> dict:
    """What a cache entry must match: solver, time limit, seed, count and instance content."""
    return {
        "solver": solver,
        "time_limit": float(time_limit),
        "seed": int(seed),
        "count": int(instances.batch_size),
        "instances_sha256": instances_digest(instances),
    }


def cache_path(solver: str, instances: Batch, time_limit: float, seed: int) -> Path:
    """The cache file of these instances solved by `solver` ("tsp:lkh"), e.g.
    `tsp__solve_lkh__1s__seed0__1000x__<hash>.npz`."""
    key = cache_key(solver, instances, time_limit, seed)
    problem, fn = solver_of(solver)
    name = (
        f"{problem}__{fn.__name__}__{time_limit:g}s__seed{seed}__{key['count']}x__"
        f"{key['instances_sha256'][:20]}.npz"
    )
    return cache_dir() / name


def _solve(task: tuple[str, dict[str, np.ndarray], float, int]) -> float:
    solver, instance, time_limit, seed = task
    return float(solver_of(solver)[1](instance, time_limit, seed).cost)


def reference_costs(
    solver: str,
    instances: Batch,
    time_limit: float,
    seed: int = 0,
    workers: int | None = None,
    summary_every_s: float | None = None,
) -> torch.Tensor:
    """Float64[N] costs of `instances` by the classical solver `solver` ("tsp:lkh").

    Read from the cache when present and valid; otherwise solved in `workers` processes
    (default: one per core when the first instance's time predicts more than
    `PARALLEL_ABOVE_S` seconds in all, else in this process), with a progress bar in a
    terminal or a summary line every `summary_every_s` seconds (default `SUMMARY_EVERY_S`)
    elsewhere, and cached.
    """
    key = cache_key(solver, instances, time_limit, seed)
    path = cache_path(solver, instances, time_limit, seed)
    n = instances.batch_size
    cached = _read(path, key)
    if cached is not None:
        print(f"validation references: {n} from cache {path}", file=sys.stderr)
        return torch.from_numpy(cached)
    fields = {k: v.cpu().numpy() for k, v in instances._items()}
    tasks = [(solver, {k: v[i] for k, v in fields.items()}, time_limit, seed) for i in range(n)]
    start = time.perf_counter()
    progress = _Progress(n, SUMMARY_EVERY_S if summary_every_s is None else summary_every_s)
    costs = [_solve(tasks[0])]  # timed, to decide whether processes pay for their start
    progress.update()
    if workers is None:
        slow = (time.perf_counter() - start) * n > PARALLEL_ABOVE_S
        workers = os.cpu_count() or 1 if slow else 1
    workers = max(1, min(n - 1, workers))
    if workers == 1:
        for task in tasks[1:]:
            costs.append(_solve(task))
            progress.update()
    else:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            for cost in pool.map(_solve, tasks[1:], chunksize=max(1, n // (8 * workers))):
                costs.append(cost)
                progress.update()
    progress.close()
    out = np.asarray(costs, dtype=np.float64)
    wall = time.perf_counter() - start
    manifest = {**key, "workers": workers, "wall_time_s": round(wall, 3), "created": time.time()}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npz")
    np.savez(tmp, costs=out, manifest=np.array(json.dumps(manifest)))
    os.replace(tmp, path)
    print(
        f"validation references: {n} instances by {solver} in {wall:.0f} s"
        f" ({workers} processes), cached at {path}",
        file=sys.stderr,
    )
    return torch.from_numpy(out)


class _Progress:
    """A tqdm bar in a terminal; elsewhere a line on stderr every `every_s` seconds."""

    def __init__(self, total: int, every_s: float) -> None:
        self.total, self.every_s, self.done = total, every_s, 0
        self.bar = progress_bar(total=total, desc="validation references")
        self.start = self.last = time.perf_counter()

    def update(self) -> None:
        self.done += 1
        self.bar.update()
        now = time.perf_counter()
        if self.bar.disable and now - self.last >= self.every_s and self.done < self.total:
            self.last = now
            elapsed = now - self.start
            left = elapsed / self.done * (self.total - self.done)
            share = 100 * self.done / self.total
            print(
                f"validation references: {self.done}/{self.total} ({share:.0f}%), "
                f"{elapsed:.0f} s elapsed, ~{left:.0f} s left",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        self.bar.close()


def _read(path: Path, key: dict) -> np.ndarray | None:
    """The cached costs if the file is a valid cache entry for `key` (see `cache_key`)."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            costs, manifest = data["costs"], json.loads(str(data["manifest"]))
        stored = {k: manifest.get(k) for k in key}
        if stored["solver"] == _legacy_solver(key["solver"]):  # same solver, older naming
            stored["solver"] = key["solver"]
        if stored != key:
            diff = sorted(k for k in key if stored[k] != key[k])
            raise ValueError(f"its manifest differs in {diff}")
        if costs.shape != (key["count"],) or costs.dtype != np.float64:
            raise ValueError(f"holds costs of shape {costs.shape} and dtype {costs.dtype}")
        if not np.isfinite(costs).all() or (costs <= 0).any():
            raise ValueError("holds non-finite or non-positive costs")
        return costs
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        warnings.warn(f"{path}: invalid reference cache ({err}); recomputing.", stacklevel=3)
        return None
