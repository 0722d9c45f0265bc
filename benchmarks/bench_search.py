"""Benchmark the decoders with the paper-size BQ policy (random weights) on TSP100.

Prints a table and writes JSON: wall time per decoder, share of time in the policy forward,
states evaluated per second, and the ratio gumbeldore(k x 4) / (4 x beam_search(k)). With
`--throughput N`, also decodes N instances by Gumbeldore (k x rounds) in chunks of
`--chunk` instances, as a training epoch's sampling does (`throughput_<N>x<k*rounds>`), and on
a GPU samples its utilisation meanwhile.

    python benchmarks/bench_search.py --precision bf16 --out bench_search.json
    python benchmarks/bench_search.py --device cuda --throughput 1000 --chunk 250 --out gpu.json

`--precision int8` (CPU) quantizes the encoder's linear layers dynamically to int8
(`torch.ao.quantization.quantize_dynamic`): a candidate for a cheaper network evaluation on CPUs
without bf16 units, measured here; nco's decoders do not use it (it changes the logits).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path

import torch

from nco import search
from nco.decode import decode
from nco.models.bq import BQPolicy
from nco.problems.tsp import TSPEnv
from nco.search.policy_eval import timed


def _run(fn: Callable[[], object], repeats: int) -> dict[str, float]:
    walls, policy_s, rows = [], [], []
    for _ in range(repeats):
        with timed() as stats:
            start = time.perf_counter()
            fn()
            walls.append(time.perf_counter() - start)
        policy_s.append(stats.seconds)
        rows.append(stats.rows)
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


class Utilisation:
    """GPU utilisation (percent, from NVML) sampled every `interval` seconds in a thread."""

    def __init__(self, device: str, interval: float = 0.1) -> None:
        self.device, self.interval = torch.device(device), interval
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.wait(self.interval):
            self.samples.append(torch.cuda.utilization(self.device))

    def __enter__(self) -> Utilisation:
        if self.device.type == "cuda":
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def summary(self) -> dict[str, float]:
        if not self.samples:
            return {}
        return {
            "gpu_util_mean_pct": statistics.mean(self.samples),
            "gpu_util_median_pct": statistics.median(self.samples),
            "gpu_util_samples": len(self.samples),
        }


def throughput(
    policy: torch.nn.Module, env: TSPEnv, args: argparse.Namespace
) -> tuple[str, dict[str, float]]:
    """Gumbeldore on `args.throughput` instances in chunks, as one epoch's sampling."""
    instances = env.generate(args.throughput, torch.Generator().manual_seed(99))
    cfg = {
        "method": "gumbeldore",
        "beam_width": args.beam,
        "rounds": args.rounds,
        "sigma": 0.3,
        "batch_size": args.chunk,
    }
    with timed() as stats, Utilisation(args.device) as util:
        start = time.perf_counter()
        sols = decode(policy, env, instances, cfg, torch.Generator().manual_seed(0))
        wall = time.perf_counter() - start
    name = f"throughput_{args.throughput}x{args.beam * args.rounds}"
    result = {
        "wall_s": wall,
        "instances": args.throughput,
        "samples_per_instance": args.beam * args.rounds,
        "chunk": args.chunk,
        "policy_s": stats.seconds,
        "policy_share": stats.seconds / wall,
        "states_evaluated": stats.rows,
        "best_tour_mean": float(env.cost(sols.best().objective).mean()),
        **util.summary(),
    }
    if torch.device(args.device).type == "cuda":
        result["max_memory_gib"] = torch.cuda.max_memory_allocated() / 2**30
    return name, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--instances", type=int, default=16)
    parser.add_argument("--beam", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", choices=["fp32", "bf16", "int8"], default="bf16")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument("--tiny", action="store_true", help="tiny model (smoke test)")
    parser.add_argument("--throughput", type=int, default=0, help="instances (0: skip)")
    parser.add_argument("--chunk", type=int, default=250, help="instances per throughput chunk")
    parser.add_argument("--skip-decoders", action="store_true", help="only the throughput case")
    parser.add_argument("--out", default="bench_search.json")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    dims = (32, 2, 4, 64) if args.tiny else (128, 9, 8, 512)
    precision = "fp32" if args.precision == "int8" else args.precision
    policy = BQPolicy(*dims, precision=precision).to(args.device).eval()
    if args.precision == "int8":
        policy.encoder = torch.ao.quantization.quantize_dynamic(
            policy.encoder, {torch.nn.Linear}, dtype=torch.qint8
        )
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
    if args.skip_decoders:
        cases = {}
    print(f"{'decoder':<20}{'wall s':>10}{'policy %':>10}{'overhead s':>12}{'states/s':>12}")
    for name, fn in cases.items():
        r = _run(fn, args.repeats)
        results[name] = r
        print(
            f"{name:<20}{r['wall_s']:>10.2f}{100 * r['policy_share']:>10.1f}"
            f"{r['search_overhead_s']:>12.2f}{r['states_per_s']:>12.0f}"
        )
    ratio = None
    if cases:
        gd, bs = results[f"gumbeldore_{k}x{n}"], results[f"beam_search_{k}"]
        ratio = gd["wall_s"] / (n * bs["wall_s"])
        print(f"gumbeldore / ({n} x beam_search_{k}) = {ratio:.3f}")
    report = {
        "config": vars(args),
        "device_name": torch.cuda.get_device_name(args.device) if "cuda" in args.device else "cpu",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "machine": platform.processor() or platform.machine(),
        "results": results,
        "ratio_gumbeldore_over_beam": ratio,
    }
    if args.throughput:
        name, r = throughput(policy, env, args)
        report[name] = r
        print(
            f"{name}: {r['wall_s']:.2f} s, policy {100 * r['policy_share']:.1f} %, "
            f"GPU utilisation {r.get('gpu_util_mean_pct', float('nan')):.0f} %"
        )
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
