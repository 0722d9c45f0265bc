"""Benchmark the decoders with the paper-size BQ policy (random weights) on TSP100.

Prints a table and writes JSON: wall time per decoder, share of time in the policy forward,
states evaluated per second, and the ratio gumbeldore(k x 4) / (4 x beam_search(k)).

    python scripts/bench_search.py --precision bf16 --out bench_search.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

from models.bq import BQPolicy
from nco import search
from nco.search.policy_eval import STATS
from problems.tsp import TSPEnv


def _run(fn: Callable[[], object], repeats: int) -> dict[str, float]:
    walls, policy_s, rows = [], [], []
    for _ in range(repeats):
        STATS.reset()
        start = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - start)
        policy_s.append(STATS.seconds)
        rows.append(STATS.rows)
    wall = statistics.median(walls)
    pol = statistics.median(policy_s)
    return {
        "wall_s": wall,
        "wall_all_s": walls,
        "policy_s": pol,
        "policy_share": pol / wall,
        "search_overhead_s": wall - pol,
        "search_overhead_share": (wall - pol) / wall,
        "states_evaluated": int(statistics.median(rows)),
        "states_per_s": statistics.median(rows) / wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--instances", type=int, default=16)
    parser.add_argument("--beam", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="bf16")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument("--tiny", action="store_true", help="tiny model (smoke test)")
    parser.add_argument("--out", default="bench_search.json")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    dims = (32, 2, 4, 64) if args.tiny else (128, 9, 8, 512)
    policy = BQPolicy(*dims, precision=args.precision).to(args.device).eval()
    env = TSPEnv(args.nodes)
    instances = env.generate(args.instances, torch.Generator().manual_seed(1234)).to(args.device)
    k, n = args.beam, args.rounds

    def gen() -> torch.Generator:
        return torch.Generator(device=args.device).manual_seed(0)

    cases = {
        "greedy": lambda: search.greedy(policy, env, instances),
        f"beam_search_{k}": lambda: search.beam_search(policy, env, instances, k),
        f"sbs_{k}": lambda: search.sbs(policy, env, instances, k, generator=gen()),
        f"gumbeldore_{k}x{n}": lambda: search.gumbeldore(
            policy, env, instances, k, n, sigma=0.3, generator=gen()
        ),
    }
    results = {}
    print(f"{'decoder':<20}{'wall s':>10}{'policy %':>10}{'overhead s':>12}{'states/s':>12}")
    for name, fn in cases.items():
        r = _run(fn, args.repeats)
        results[name] = r
        print(
            f"{name:<20}{r['wall_s']:>10.2f}{100 * r['policy_share']:>10.1f}"
            f"{r['search_overhead_s']:>12.2f}{r['states_per_s']:>12.0f}"
        )
    ratio = results[f"gumbeldore_{k}x{n}"]["wall_s"] / (n * results[f"beam_search_{k}"]["wall_s"])
    print(f"gumbeldore / ({n} x beam_search_{k}) = {ratio:.3f}")
    report = {
        "config": vars(args),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "machine": platform.processor() or platform.machine(),
        "results": results,
        "ratio_gumbeldore_over_beam": ratio,
    }
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
