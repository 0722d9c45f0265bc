"""Taillard's ta01-ta80 regenerated from the published seeds, with best-known bounds.

Taillard (1993) draws durations job by job from a Park-Miller generator seeded with the time
seed, then shuffles each job's machine order with a second generator seeded with the machine
seed. Bounds come from data/jssp/taillard_bounds.csv (see data/jssp/README.md for sources).
"""

from __future__ import annotations

import csv
import re

import torch

from nco.paths import DATA_DIR
from nco.problems.jssp.taillard_seeds import TAILLARD_SEEDS
from nco.problems.jssp.types import JSSPInstances, make_instances

BOUNDS_CSV = DATA_DIR / "jssp" / "taillard_bounds.csv"  # shipped in the wheel too (nco.paths)

_A, _M, _Q, _R = 16807, 2**31 - 1, 127773, 2836  # Park-Miller; q = m // a, r = m % a (Schrage)


class ParkMiller:
    """Taillard's minimal standard generator (a = 16807, m = 2^31 - 1) via Schrage's method."""

    def __init__(self, seed: int) -> None:
        if not 0 < seed < _M:
            raise ValueError(f"Expected a seed in 1..{_M - 1}, got {seed}.")
        self.seed = seed

    def unif(self, low: int, high: int) -> int:
        """Advance the seed; return low + floor(seed / m * (high - low + 1))."""
        k = self.seed // _Q
        self.seed = _A * (self.seed % _Q) - k * _R
        if self.seed < 0:
            self.seed += _M
        return low + int(self.seed / _M * (high - low + 1))


def taillard_matrices(
    jobs: int, machines: int, time_seed: int, machine_seed: int
) -> tuple[list[list[int]], list[list[int]]]:
    """Durations (J, M) in 1..99 and 0-based machine orders (J, M) of Taillard's generator."""
    times = ParkMiller(time_seed)
    durations = [[times.unif(1, 99) for _ in range(machines)] for _ in range(jobs)]
    shuffle = ParkMiller(machine_seed)
    orders = []
    for _ in range(jobs):
        order = list(range(machines))
        for l in range(machines):
            k = shuffle.unif(l, machines - 1)
            order[l], order[k] = order[k], order[l]
        orders.append(order)
    return durations, orders


def taillard_bounds() -> dict[str, dict[str, str]]:
    """Rows of data/jssp/taillard_bounds.csv by instance name."""
    if not BOUNDS_CSV.is_file():
        raise ValueError(f"{BOUNDS_CSV}: Taillard bounds table not found (run from a checkout).")
    with BOUNDS_CSV.open(newline="") as f:
        return {row["name"]: row for row in csv.DictReader(f)}


def taillard_instance(name: str) -> JSSPInstances:
    """Instance `name` (ta01..ta80) as a batch of one."""
    if name not in TAILLARD_SEEDS:
        raise ValueError(f"Expected a Taillard instance name ta01..ta80, got {name!r}.")
    durations, machines = taillard_matrices(*TAILLARD_SEEDS[name])
    return make_instances(durations, machines, source=name)


def taillard_names(spec: str) -> list[str]:
    """Instance names for "ta07" or a size like "15x15" (its ten instances, in order)."""
    if spec in TAILLARD_SEEDS:
        return [spec]
    size = re.fullmatch(r"(\d+)x(\d+)", spec)
    shape = (int(size.group(1)), int(size.group(2))) if size else None
    names = [n for n, (j, m, _, _) in TAILLARD_SEEDS.items() if (j, m) == shape]
    if not names:
        sizes = sorted({f"{j}x{m}" for j, m, _, _ in TAILLARD_SEEDS.values()})
        raise ValueError(f"Expected a Taillard name ta01..ta80 or a size in {sizes}, got {spec!r}.")
    return names


def taillard_group(spec: str) -> tuple[JSSPInstances, list[str], torch.Tensor]:
    """Instances, names and best-known upper bounds (float64) for "ta07" or a size like "15x15"."""
    names = taillard_names(spec)
    batches = [taillard_instance(n) for n in names]
    instances = JSSPInstances(
        durations=torch.cat([b.durations for b in batches]),
        machines=torch.cat([b.machines for b in batches]),
    )
    bounds = taillard_bounds()
    upper = torch.tensor([float(bounds[n]["upper_bound"]) for n in names], dtype=torch.float64)
    return instances, names, upper
