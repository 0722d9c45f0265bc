"""Peak memory of one Gumbeldore call: 128 TSP100 instances, beam width 32 x 4 rounds.

Each case runs in a fresh subprocess, which reports its peak resident memory (and on a GPU the
peak allocated device memory) above what it held before the search, the trie's rows and bytes
and the wall time. The default policy is a tiny BQ, so the trie dominates and the run takes
minutes on a CPU; `--model paper` adds the paper-size network's activations (slow on a CPU).

    python benchmarks/bench_memory.py --out data/results/bench_memory_cpu.json
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

MODELS = {"tiny": (16, 1, 2, 32), "paper": (128, 9, 8, 512)}


def peak_rss_gib() -> float:
    """This process's peak resident memory (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """One Gumbeldore call in this process; its memory and trie statistics."""
    from nco import search
    from nco.models.bq import BQPolicy
    from nco.problems.tsp import TSPEnv
    from nco.search import decoders

    tries = []

    class Recorded(decoders.Trie):  # the decoder's trie, kept for its statistics
        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, **kw)
            tries.append(self)

    decoders.Trie = Recorded
    torch.manual_seed(0)
    device = torch.device(args.device)
    policy = BQPolicy(*MODELS[args.model], precision=args.precision).to(device).eval()
    env = TSPEnv(args.nodes)
    instances = env.generate(args.instances, torch.Generator().manual_seed(1)).to(device)
    before = peak_rss_gib()
    start = time.perf_counter()
    sols = search.gumbeldore(
        policy, env, instances, args.beam, args.rounds, sigma=0.3,
        generator=torch.Generator().manual_seed(0),
    )  # fmt: skip
    wall = time.perf_counter() - start
    trie = tries[0]
    stored = [t for t in (trie.logmass, trie.adv, trie.visits) if t is not None]
    per_entry = sum(t.element_size() for t in stored)
    out = {
        "wall_s": wall,
        "peak_rss_gib": peak_rss_gib(),
        "peak_rss_above_start_gib": peak_rss_gib() - before,
        "trie_rows": trie.size,
        "trie_bytes_per_entry": per_entry,
        "trie_gib": trie.size * (trie.num_actions * per_entry + 8) / 2**30,
        "sequences": int(sols.valid.sum()),
        "best_tour_mean": float(env.cost(sols.best().objective).mean()),
    }
    if device.type == "cuda":
        out["cuda_max_allocated_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=128)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--beam", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--model", choices=list(MODELS), default="tiny")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", default="bench_memory.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.child:
        print(json.dumps(measure(args)))
        return
    cmd = [sys.executable, __file__, "--child", *sys.argv[1:]]
    proc = subprocess.run(cmd, check=True, capture_output=True, text=True)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    report = {
        "config": vars(args),
        "torch": torch.__version__,
        "machine": platform.processor() or platform.machine(),
        "result": result,
    }
    print(
        f"{args.instances} x TSP{args.nodes}, Gumbeldore {args.beam} x {args.rounds}, "
        f"{args.model} BQ: peak RSS {result['peak_rss_gib']:.2f} GiB "
        f"({result['peak_rss_above_start_gib']:.2f} for the search), trie "
        f"{result['trie_rows']} rows x {result['trie_bytes_per_entry']} B per entry = "
        f"{result['trie_gib']:.2f} GiB, {result['wall_s']:.0f} s"
    )
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
