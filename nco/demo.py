"""The quickstart job: train a small TSP20 policy by self-improvement, then compare decoders.

Runs `nco.train experiment=tsp20_quick` for a few epochs on the CPU, loads its `best.pt`, and
decodes the first instances of the Kool et al. TSP20 test set (seed 1234) with greedy, beam
search and Gumbeldore, scoring each against LKH-3 solved on the same machine.

    nco-demo                      # defaults: 10 epochs (about 3-5 minutes), 200 test instances
    nco-demo --epochs 15 --instances 1000 --out outputs/demo
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
from nco.checkpoint import load
from nco.progress import progress_bar
from problems.tsp import TSPInstances
from problems.tsp.solvers import solve_lkh


def _lkh_costs(coords: np.ndarray) -> tuple[np.ndarray, float]:
    start = time.perf_counter()
    costs = [
        solve_lkh({"coords": c}, 1.0, 0).cost
        for c in progress_bar(coords, desc="LKH-3", leave=False)
    ]
    return np.array(costs), time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    """Train, evaluate and print the result table."""
    parser = argparse.ArgumentParser(description="nco quickstart: train TSP20, compare decoders.")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--instances", type=int, default=200)
    parser.add_argument("--out", default="outputs/quickstart")
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.instances < 1:
        parser.error("--epochs and --instances must be positive")
    torch.set_num_threads(1)  # small models: threads only add contention on a few cores
    out = Path(args.out).resolve()
    print(f"[1/3] Training TSP20 by Gumbeldore self-improvement for {args.epochs} epochs -> {out}")
    cmd = [
        sys.executable, "-m", "nco.train", "experiment=tsp20_quick",
        f"trainer.max_epochs={args.epochs}", f"hydra.run.dir={out}",
    ]  # fmt: skip
    subprocess.run(cmd, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    loaded = load(out / "best.pt")
    policy, env = loaded.policy, loaded.env

    print(f"[2/3] LKH-3 references for {args.instances} Kool TSP20 test instances (seed 1234)")
    coords = np.random.RandomState(1234).uniform(size=(args.instances, 20, 2))
    refs, lkh_time = _lkh_costs(coords)
    instances = TSPInstances(coords=torch.from_numpy(coords))

    print("[3/3] Decoding with the trained policy")
    decoders = {
        "greedy": lambda: search.greedy(policy, env, instances),
        "beam search 16": lambda: search.beam_search(policy, env, instances, 16),
        "gumbeldore 16x4": lambda: search.gumbeldore(
            policy, env, instances, 16, 4, sigma=0.3, generator=torch.Generator().manual_seed(0)
        ),
    }
    rows = [("LKH-3 (reference)", float(refs.mean()), 0.0, lkh_time)]
    for name, fn in decoders.items():
        start = time.perf_counter()
        costs = env.cost(fn().best().objective).numpy()
        elapsed = time.perf_counter() - start
        gap = float(100 * ((costs - refs) / refs).mean())
        rows.append((name, float(costs.mean()), gap, elapsed))
    print(f"\nTSP20, {args.instances} instances, policy from epoch {loaded.meta.get('epoch')}")
    print(f"{'method':<20}{'mean length':>12}{'gap %':>9}{'time s':>9}")
    for name, cost, gap, secs in rows:
        print(f"{name:<20}{cost:>12.4f}{gap:>9.2f}{secs:>9.1f}")
    table = [dict(zip(("method", "mean_cost", "mean_gap", "time_s"), r, strict=True)) for r in rows]
    (out / "demo_results.json").write_text(json.dumps(table, indent=2))
    print(f"\nwrote {out / 'demo_results.json'}; checkpoint {out / 'best.pt'}")


if __name__ == "__main__":
    main()
