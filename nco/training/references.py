"""Reference costs for a validation set from a classical solver: parallel, cached on disk.

Training runs of one study validate on the same generated instances, so the costs are cached
by content: the file name holds the solver, its time limit and seed, and a hash of the
instances' arrays (which fixes problem, size, generator seed and count). A sweep or a resumed
run reads them back instead of solving 1000 instances again. The cache folder is
`$NCO_CACHE_DIR/references` (default `~/.cache/nco/references`); a file that does not
validate is recomputed with a warning.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import torch
from hydra.utils import get_method

from nco.env import Batch
from nco.progress import progress_bar

PARALLEL_ABOVE_S = 20.0  # estimated solve time above which a process pool is used


def cache_dir() -> Path:
    """`$NCO_CACHE_DIR/references`, default `~/.cache/nco/references`."""
    root = os.environ.get("NCO_CACHE_DIR") or Path.home() / ".cache" / "nco"
    return Path(root) / "references"


def cache_path(solver: str, instances: Batch, time_limit: float, seed: int) -> Path:
    """The cache file of these instances solved by `solver` (a dotted function path)."""
    digest = hashlib.sha256()
    for name, value in sorted(instances._items()):
        arr = np.ascontiguousarray(value.cpu().numpy())
        digest.update(f"{name}:{arr.dtype}:{arr.shape}".encode())
        digest.update(arr.tobytes())
    short = solver.rsplit(".", 1)[-1]
    return cache_dir() / f"{short}__{time_limit:g}s__seed{seed}__{digest.hexdigest()[:20]}.npz"


def _solve(task: tuple[str, dict[str, np.ndarray], float, int]) -> float:
    solver, instance, time_limit, seed = task
    return float(get_method(solver)(instance, time_limit, seed).cost)


def reference_costs(
    solver: str, instances: Batch, time_limit: float, seed: int = 0, workers: int | None = None
) -> torch.Tensor:
    """Float64[N] costs of `instances` by the solver function at dotted path `solver`.

    Read from the cache when present and valid; otherwise solved in `workers` processes
    (default: one per core when the first instance's time predicts more than
    `PARALLEL_ABOVE_S` seconds in all, else in this process), with a progress bar in a
    terminal, and cached.
    """
    path = cache_path(solver, instances, time_limit, seed)
    n = instances.batch_size
    cached = _read(path, solver, n)
    if cached is not None:
        print(f"validation references: {n} from cache {path}", file=sys.stderr)
        return torch.from_numpy(cached)
    fields = {k: v.cpu().numpy() for k, v in instances._items()}
    tasks = [(solver, {k: v[i] for k, v in fields.items()}, time_limit, seed) for i in range(n)]
    start = time.perf_counter()
    bar = progress_bar(total=n, desc="validation references")
    costs = [_solve(tasks[0])]  # timed, to decide whether processes pay for their start
    bar.update()
    if workers is None:
        slow = (time.perf_counter() - start) * n > PARALLEL_ABOVE_S
        workers = os.cpu_count() or 1 if slow else 1
    workers = max(1, min(n - 1, workers))
    if workers == 1:
        for task in tasks[1:]:
            costs.append(_solve(task))
            bar.update()
    else:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            for cost in pool.map(_solve, tasks[1:], chunksize=max(1, n // (8 * workers))):
                costs.append(cost)
                bar.update()
    bar.close()
    out = np.asarray(costs, dtype=np.float64)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npz")
    np.savez(tmp, costs=out, solver=np.array(solver))
    os.replace(tmp, path)
    print(
        f"validation references: {n} instances by {solver} in {time.perf_counter() - start:.0f} s"
        f" ({workers} processes), cached at {path}",
        file=sys.stderr,
    )
    return torch.from_numpy(out)


def _read(path: Path, solver: str, n: int) -> np.ndarray | None:
    """The cached costs if the file is a valid cache entry for `solver` and n instances."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            costs, stored = data["costs"], str(data["solver"])
        if stored != solver or costs.shape != (n,) or costs.dtype != np.float64:
            raise ValueError(f"holds {stored!r} costs of shape {costs.shape}")
        if not np.isfinite(costs).all() or (costs <= 0).any():
            raise ValueError("holds non-finite or non-positive costs")
        return costs
    except (OSError, ValueError, KeyError) as err:
        warnings.warn(f"{path}: invalid reference cache ({err}); recomputing.", stacklevel=3)
        return None
