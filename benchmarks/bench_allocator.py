"""Benchmark glibc's default malloc against `nco.allocator.keep_freed_memory` on CPU work.

Each case runs in a fresh subprocess, once with glibc's defaults and once with the settings
nco's commands apply, alternating for `--repeats` rounds so that load on a shared machine
hits both alike. A case decodes `--instances` generated instances of a checkpoint's problem
by beam search 16 (what `nco-eval search=beam` does per batch), or takes `--steps` Adam
steps on random sub-trajectories of such instances (bench_train.py's steps: what a training
epoch does between its sampling). Reported per case and mode: median wall, user and system
seconds, peak resident memory; and the ratios default / tuned.

    python benchmarks/bench_allocator.py --out data/results/bench/allocator_cpu.json
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch
from bench_train import _buffer, time_steps  # benchmarks/ is on the path when this file runs

REPO = Path(__file__).resolve().parents[1]
CHECKPOINTS = {
    "tsp20": REPO / "data/checkpoints/tsp20/best.pt",
    "cvrp20": REPO / "data/checkpoints/cvrp20/best.pt",
    "tsp50": REPO / "data/checkpoints/tsp50/best.pt",
}
MODES = ("default", "tuned")


def _usage() -> tuple[float, float]:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime, u.ru_stime


def child(case: str, mode: str, args: argparse.Namespace) -> dict[str, Any]:
    """One case in this process, after applying `mode`; its times and peak memory."""
    from nco import search
    from nco.allocator import keep_freed_memory
    from nco.checkpoint import load
    from nco.training import SelfImprovementModule

    took = keep_freed_memory() if mode == "tuned" else False
    torch.set_num_threads(args.threads)
    kind, problem = case.split(":")
    loaded = load(CHECKPOINTS[problem])
    policy, env = loaded.policy, loaded.env
    buffer = _buffer(env, args.instances, seed=0)  # instances and a random solution of each
    if kind == "train":
        module = SelfImprovementModule(policy.train(), env)
    u0, s0 = _usage()
    t0 = time.perf_counter()
    if kind == "beam16":
        result = float(search.beam_search(policy, env, buffer[0], 16).best().objective.mean())
    else:
        cpu = torch.device("cpu")
        steps = time_steps(module, env, buffer, args.batch_size, args.steps, 0, "fp32", cpu)
        result = steps["losses"][-1]
    wall = time.perf_counter() - t0
    u1, s1 = _usage()
    return {
        "took": took,
        "wall_s": wall,
        "user_s": u1 - u0,
        "sys_s": s1 - s0,
        "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "result": result,
    }


def run_child(case: str, mode: str, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", case, "--mode", mode]
    for flag in ("instances", "steps", "batch_size", "threads"):
        cmd += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cases",
        nargs="+",
        default=["beam16:tsp20", "beam16:cvrp20", "beam16:tsp50", "train:tsp50"],
        help="kind:problem with kind beam16 or train and problem one of " + ", ".join(CHECKPOINTS),
    )
    parser.add_argument("--instances", type=int, default=256, help="beam 16: one nco-eval batch")
    parser.add_argument("--steps", type=int, default=20, help="train: Adam steps")
    parser.add_argument("--batch-size", type=int, default=256, help="train: sub-problems per step")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default="bench_allocator.json")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=MODES, default="default", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if min(args.instances, args.steps, args.batch_size, args.threads, args.repeats) < 1:
        parser.error("--instances, --steps, --batch-size, --threads and --repeats must be positive")
    if args.child:
        print(json.dumps(child(args.child, args.mode, args)))
        return
    cases: dict[str, Any] = {}
    print(f"{'case':<16}{'mode':<9}{'wall s':>8}{'user s':>8}{'sys s':>8}{'RSS MiB':>9}")
    for case in args.cases:
        runs: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
        for _ in range(args.repeats):
            for mode in MODES:
                runs[mode].append(run_child(case, mode, args))
        summary: dict[str, Any] = {"runs": runs}
        for mode in MODES:
            med = {
                k: statistics.median(r[k] for r in runs[mode])
                for k in ("wall_s", "user_s", "sys_s", "max_rss_mib")
            }
            summary[mode] = med
            print(
                f"{case:<16}{mode:<9}{med['wall_s']:>8.2f}{med['user_s']:>8.2f}"
                f"{med['sys_s']:>8.2f}{med['max_rss_mib']:>9.0f}"
            )
        summary["same_result"] = len({r["result"] for rs in runs.values() for r in rs}) == 1
        summary["wall_ratio"] = summary["default"]["wall_s"] / summary["tuned"]["wall_s"]
        summary["cpu_ratio"] = (summary["default"]["user_s"] + summary["default"]["sys_s"]) / (
            summary["tuned"]["user_s"] + summary["tuned"]["sys_s"]
        )
        print(
            f"{case:<16}default / tuned: wall {summary['wall_ratio']:.3f}x, "
            f"cpu {summary['cpu_ratio']:.3f}x, same result {summary['same_result']}"
        )
        cases[case] = summary
    record = {
        "args": {k: v for k, v in vars(args).items() if k not in ("child", "mode")},
        "torch": torch.__version__,
        "machine": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "cases": cases,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=2))
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
