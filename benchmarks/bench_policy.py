"""Benchmark one policy call: the paper-size BQ on TSP100 states and the paper-size JSSP
transformer on 15x15 states, a quarter, half and three quarters into the episode.

Prints a table and writes JSON: the median seconds per call over `--repeats` calls of `--rows`
states each (random weights, states reached by random feasible moves), linear-layer
multiply-accumulates per call (forward hooks) and the attention kernels' share of the
operators' time (torch.profiler). Both come from one untimed probe call per case, before the
`--warmup` calls. With `--packing`, the JSSP transformer is timed with its layer pairs on every
operation (`PACK_BELOW = 0`) and on the unscheduled ones only (packing forced), interleaved,
and the ratio is reported; `s_per_call` is then the form that `PACK_BELOW` picks.

    python benchmarks/bench_policy.py --threads 1 --packing --out data/results/bench/policy_cpu.json
    python benchmarks/bench_policy.py --device cuda --precisions fp32 bf16 --packing --out gpu.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf
from torch import nn

import nco.models.jssp_transformer as jssp_transformer
from nco import registry
from nco.env import Batch, Env
from nco.paths import CONFIG_DIR
from nco.problems.jssp import JSSPEnv
from nco.problems.tsp import TSPEnv
from nco.testing import random_steps

# Operator name fragments of the attention kernels (CPU and CUDA forms).
ATTENTION = ("scaled_dot_product", "flash_attention", "efficient_attention", "cudnn_attention")
FORCE_PACKING = 2.0  # a PACK_BELOW above every live fraction


@contextlib.contextmanager
def pack_below(threshold: float | None) -> Iterator[None]:
    """`jssp_transformer.PACK_BELOW` set to `threshold` (None: unchanged) inside the block."""
    saved = jssp_transformer.PACK_BELOW
    if threshold is not None:
        jssp_transformer.PACK_BELOW = threshold
    try:
        yield
    finally:
        jssp_transformer.PACK_BELOW = saved


def rolled_states(env: Env, rows: int, fraction: float, seed: int) -> tuple[Batch, int]:
    """`rows` random instances after round(fraction * episode length) random feasible moves."""
    gen = torch.Generator().manual_seed(seed)
    instances = env.generate(rows, gen)
    steps = round(fraction * env.max_steps(instances))
    return random_steps(env, env.reset(instances), steps, gen), steps


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def probe(policy: nn.Module, state: Batch, device: torch.device) -> dict[str, float]:
    """Linear-layer multiply-accumulates of one call, and the attention operators' share of
    its operator time (self time of CPU-side operators; on CUDA their kernels' time)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    macs = 0

    def count(module: nn.Module, _: object, out: torch.Tensor) -> None:
        nonlocal macs
        macs += out.numel() * module.in_features

    hooks = [m.register_forward_hook(count) for m in policy.modules() if isinstance(m, nn.Linear)]
    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    try:
        with profile(activities=activities) as prof:
            policy(state)
            _sync(device)
    finally:
        for hook in hooks:
            hook.remove()
    attr = "self_device_time_total" if device.type == "cuda" else "self_cpu_time_total"
    total = attention = 0.0
    for event in prof.key_averages():
        if getattr(event, "device_type", DeviceType.CPU) != DeviceType.CPU:
            continue  # kernels: counted in the operator that launched them
        t = float(getattr(event, attr))
        total += t
        attention += t if any(f in event.key.lower() for f in ATTENTION) else 0.0
    return {"linear_macs": macs, "attention_share": attention / total if total else 0.0}


def time_variants(
    policy: nn.Module,
    state: Batch,
    variants: dict[str, float | None],
    args: argparse.Namespace,
) -> dict[str, dict[str, Any]]:
    """Per variant (a PACK_BELOW, None: unchanged): a probe, then `warmup` calls, then
    `repeats` timed calls, the variants' calls interleaved so that load changes hit all."""
    device = torch.device(args.device)
    out: dict[str, dict[str, Any]] = {}
    logits = {}
    with torch.inference_mode():
        for name, threshold in variants.items():
            with pack_below(threshold):
                out[name] = {**probe(policy, state, device), "s_all": []}
                for _ in range(args.warmup):
                    policy(state)
        for _ in range(args.repeats):
            for name, threshold in variants.items():
                with pack_below(threshold):
                    _sync(device)
                    start = time.perf_counter()
                    logits[name] = policy(state)
                    _sync(device)
                    out[name]["s_all"].append(time.perf_counter() - start)
    for r in out.values():
        r["s_per_call"] = statistics.median(r["s_all"])
    if len(logits) == 2:
        a, b = logits.values()
        finite = torch.isfinite(a)
        out["max_logit_diff"] = float((a[finite] - b[finite]).abs().max()) if finite.any() else 0.0
    return out


def bench_case(
    name: str, policy: nn.Module, env: Env, fraction: float, args: argparse.Namespace
) -> dict[str, Any]:
    """One model at one depth: timings, linear MACs, attention share (and packing)."""
    state, steps = rolled_states(env, args.rows, fraction, seed=round(1000 * fraction))
    state = state.to(args.device)
    result: dict[str, Any] = {"model": name, "depth": fraction, "step": steps, "rows": args.rows}
    jssp = isinstance(env, JSSPEnv)
    if jssp:
        live = 1 - float(state.next_op.sum()) / state.durations[0].numel() / args.rows
        result["live_fraction"] = live
        result["packed"] = 0 < live < jssp_transformer.PACK_BELOW
    if jssp and args.packing:
        runs = time_variants(policy, state, {"unpacked": 0.0, "packed": FORCE_PACKING}, args)
        result["max_logit_diff"] = runs.pop("max_logit_diff")
        chosen = runs["packed" if result["packed"] else "unpacked"]
        result.update({k: v for k, v in chosen.items() if k != "s_all"})
        for variant, r in runs.items():
            result[f"{variant}_s"] = r["s_per_call"]
            result[f"{variant}_s_all"] = r["s_all"]
            result[f"{variant}_linear_macs"] = r["linear_macs"]
            result[f"{variant}_attention_share"] = r["attention_share"]
        result["packing_speedup"] = runs["unpacked"]["s_per_call"] / runs["packed"]["s_per_call"]
    else:
        result.update(time_variants(policy, state, {"default": None}, args)["default"])
    result["rows_per_s"] = args.rows / result["s_per_call"]
    result["linear_gmac_per_s"] = result["linear_macs"] / result["s_per_call"] / 1e9
    return result


def build_policy(config: str, precision: str, device: str) -> nn.Module:
    """The policy of configs/model/<config>.yaml at `precision`, seeded random weights and
    ReZero gates 0.5 (at their initial 0 every layer is the identity, and packed and unpacked
    logits would agree trivially)."""
    cfg = OmegaConf.to_container(OmegaConf.load(CONFIG_DIR / "model" / f"{config}.yaml"))
    torch.manual_seed(0)
    policy = registry.build("policy", {**cfg, "precision": precision}, "model")
    for name, param in policy.named_parameters():
        if "alpha" in name:
            nn.init.constant_(param, 0.5)
    return policy.to(device).eval()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, print the table, write `--out`; returns the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precisions", nargs="+", choices=["fp32", "bf16"], default=["fp32"])
    parser.add_argument("--rows", type=int, default=1024, help="states per policy call")
    parser.add_argument("--depths", nargs="+", type=float, default=[0.25, 0.5, 0.75])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1, help="untimed calls after the probe")
    parser.add_argument("--models", nargs="+", choices=["bq", "jssp"], default=["bq", "jssp"])
    parser.add_argument("--tsp-nodes", type=int, default=100)
    parser.add_argument("--jssp-size", nargs=2, type=int, default=[15, 15], metavar=("J", "M"))
    parser.add_argument("--packing", action="store_true", help="JSSP: packed vs unpacked")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument("--tiny", action="store_true", help="tiny models (smoke test)")
    parser.add_argument("--out", default="bench_policy.json")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    tiny = "_tiny" if args.tiny else ""
    jobs, machines = args.jssp_size
    cases = {
        "bq": (f"bq_tsp{tiny}", f"tsp{args.tsp_nodes}", TSPEnv(args.tsp_nodes)),
        "jssp": (f"jssp_transformer{tiny}", f"{jobs}x{machines}", JSSPEnv(jobs, machines)),
    }
    print(
        f"{'model':<22}{'prec':<6}{'depth':>6}{'rows':>6}{'s/call':>9}{'rows/s':>9}"
        f"{'GMAC':>8}{'attn %':>8}{'pack x':>8}"
    )
    results = []
    for precision in args.precisions:
        for model in args.models:
            config, problem, env = cases[model]
            policy = build_policy(config, precision, args.device)
            for fraction in args.depths:
                r = bench_case(f"{model}_{problem}", policy, env, fraction, args)
                r["precision"] = precision
                results.append(r)
                speedup = f"{r['packing_speedup']:>8.2f}" if "packing_speedup" in r else " " * 8
                print(
                    f"{r['model']:<22}{precision:<6}{fraction:>6.2f}{r['rows']:>6}"
                    f"{r['s_per_call']:>9.3f}{r['rows_per_s']:>9.0f}{r['linear_macs'] / 1e9:>8.1f}"
                    f"{100 * r['attention_share']:>8.1f}{speedup}"
                )
    device = torch.device(args.device)
    report = {
        "config": vars(args),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "machine": platform.processor() or platform.machine(),
        "pack_below": jssp_transformer.PACK_BELOW,
        "results": results,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(f"wrote {args.out}")
    return report


if __name__ == "__main__":
    main()
