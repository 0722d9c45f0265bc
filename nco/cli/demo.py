"""The quickstart job: train a small TSP20 policy by self-improvement, then compare decoders.

Runs `nco-train experiment=tsp20_quick` for a few epochs on the CPU, loads its `best.pt`, and
decodes the first instances of the Kool et al. TSP20 test set (seed 1234) with greedy, beam
search and Gumbeldore, scoring each against LKH-3 solved on the same machine. Beside the
minutes-old policy, the shipped TSP20 checkpoint (`data/checkpoints/tsp20/best.pt`, trained for
hours by scripts/reproduction.py) decodes the same instances greedily and by beam search 16:
what longer training gives (`--no-shipped` skips it).

    nco-demo                      # defaults: 10 epochs (about 3-5 minutes), 200 test instances
    nco-demo --epochs 15 --instances 1000 --out outputs/demo
    nco-demo --epochs 1 --instances 4 training.batches_per_epoch=2   # smoke test, seconds

Without the optional LKH-3 package (`pip install 'nco[lkh]'`), the references come from the
exact solver (OR-Tools branch-and-cut), which proves TSP20 optimal in well under a second.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

from nco import search
from nco.allocator import keep_freed_memory
from nco.checkpoint import load
from nco.paths import DATA_DIR
from nco.progress import progress_bar
from nco.registry import get_problem
from nco.solver import Solver

SHIPPED = DATA_DIR / "checkpoints" / "tsp20" / "best.pt"


def _reference_solver() -> tuple[str, Solver, float]:
    """LKH-3 where elkai is installed, else the exact solver: (name, solver, time limit)."""
    try:
        import elkai  # noqa: F401  (optional: LKH-3's licence is non-commercial)
    except ImportError:
        return "exact", get_problem("tsp").solver("exact"), 10.0
    return "LKH-3", get_problem("tsp").solver("lkh"), 1.0


def _reference_costs(coords: np.ndarray) -> tuple[str, np.ndarray, float]:
    """The reference solver's costs of `coords`: (solver name, costs, seconds)."""
    name, solver, limit = _reference_solver()
    start = time.perf_counter()
    costs = [
        solver({"coords": c}, limit, 0).cost for c in progress_bar(coords, desc=name, leave=False)
    ]
    return name, np.array(costs), time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    """Train, evaluate and print the result table."""
    parser = argparse.ArgumentParser(description="nco quickstart: train TSP20, compare decoders.")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--instances", type=int, default=200)
    parser.add_argument("--out", default="outputs/quickstart")
    parser.add_argument(
        "--shipped",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also decode with the shipped TSP20 checkpoint",
    )
    parser.add_argument(
        "overrides",
        nargs="*",
        help="extra nco-train overrides, e.g. training.batches_per_epoch=5",
    )
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.instances < 1:
        parser.error("--epochs and --instances must be positive")
    keep_freed_memory()
    torch.set_num_threads(1)  # small models: threads only add contention on a few cores
    out = Path(args.out).resolve()
    print(f"[1/3] Training TSP20 by Gumbeldore self-improvement for {args.epochs} epochs -> {out}")
    cmd = [
        sys.executable, "-m", "nco.cli.train", "experiment=tsp20_quick",
        f"trainer.max_epochs={args.epochs}", f"hydra.run.dir={out}",
    ]  # fmt: skip
    if _reference_solver()[0] == "exact":  # validation references without LKH-3 too
        cmd.append("problem.reference_solver=exact")
    cmd += args.overrides
    subprocess.run(cmd, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    loaded = load(out / "best.pt")
    policy, env = loaded.policy, loaded.env

    print(f"[2/3] References for {args.instances} Kool TSP20 test instances (seed 1234)")
    coords = np.random.RandomState(1234).uniform(size=(args.instances, 20, 2))
    ref_name, refs, ref_time = _reference_costs(coords)
    instances = get_problem("tsp").instances(coords=torch.from_numpy(coords))

    print("[3/3] Decoding with the trained policy")
    decoders = {
        "greedy": lambda: search.greedy(policy, env, instances),
        "beam search 16": lambda: search.beam_search(policy, env, instances, 16),
        "gumbeldore 16x4": lambda: search.gumbeldore(
            policy, env, instances, 16, 4, sigma=0.3, generator=torch.Generator().manual_seed(0)
        ),
    }
    if args.shipped:
        shipped = load(SHIPPED)
        decoders["shipped: greedy"] = lambda: search.greedy(shipped.policy, env, instances)
        decoders["shipped: beam 16"] = lambda: search.beam_search(
            shipped.policy, env, instances, 16
        )
    rows = [(f"{ref_name} (reference)", float(refs.mean()), 0.0, ref_time)]
    for name, fn in decoders.items():
        start = time.perf_counter()
        costs = env.cost(fn().best().objective).numpy()
        elapsed = time.perf_counter() - start
        gap = float(100 * ((costs - refs) / refs).mean())
        rows.append((name, float(costs.mean()), gap, elapsed))
    print(f"\nTSP20, {args.instances} instances, policy from epoch {loaded.meta.get('epoch')}")
    if args.shipped:
        print(f"shipped: {SHIPPED} (epoch {shipped.meta.get('epoch')} of a longer run)")
    print(f"{'method':<20}{'mean length':>12}{'gap %':>9}{'time s':>9}")
    for name, cost, gap, secs in rows:
        print(f"{name:<20}{cost:>12.4f}{gap:>9.2f}{secs:>9.1f}")
    table = [dict(zip(("method", "mean_cost", "mean_gap", "time_s"), r, strict=True)) for r in rows]
    (out / "demo_results.json").write_text(json.dumps(table, indent=2))
    print(f"\nwrote {out / 'demo_results.json'}; checkpoint {out / 'best.pt'}")


if __name__ == "__main__":
    main()
