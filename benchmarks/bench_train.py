"""Benchmark training throughput: optimizer steps of experiments' policies, fp32 and bf16.

Times what one step of `nco-train` does, part by part: building the batch of random
sub-trajectories on the CPU (the DataLoader's work), moving it to the device, and the
forward, backward and Adam step, in fp32 and under bf16 autocast (Lightning's bf16-mixed),
for each experiment's model and batch size (default: the tiny tsp20_quick, the N=20 / 50
study sizes and the paper's TSP100 BQ). bf16 is measured by default only where the hardware
has bf16 matrix units (a GPU, or a CPU whose oneDNN reports bf16 support); elsewhere it is
far slower than fp32 (`--precisions fp32 bf16` measures it anyway). `--profile` adds where
the device step's time goes, by kind of operator. With `--epoch`, also runs one real epoch of
the first experiment through `nco-train` in a subprocess and reports its sampling, training
and validation seconds from the metrics CSV.

    python benchmarks/bench_train.py --profile --out data/results/bench_train_cpu.json
    python benchmarks/bench_train.py --experiments tsp100_gumbeldore --device cuda --epoch
    python benchmarks/bench_train.py --experiments tsp100_gumbeldore --batch-size 256 --steps 100 \
        --precisions fp32 bf16 --curve loss.png     # same batches: loss curves fp32 vs bf16
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from nco import registry
from nco.env import Batch, Env
from nco.hardware import bf16_fast
from nco.paths import CONFIG_DIR
from nco.runs import Run
from nco.training import SelfImprovementModule

PRECISIONS = {"fp32": None, "bf16": torch.bfloat16}
EXPERIMENTS = ["tsp20_quick", "repro_tsp20", "repro_tsp50", "tsp100_gumbeldore"]
# Operator name fragments -> kind, first match wins (self time of the profiled device step).
KINDS = [
    ("attention kernel", ("scaled_dot_product", "flash_attention", "softmax")),
    ("matrix products (projections, feed-forward)", ("addmm", "aten::mm", "bmm", "matmul")),
    ("activations", ("gelu", "relu", "threshold")),
    ("loss", ("cross_entropy", "nll_loss", "log_softmax")),
    ("optimizer", ("adam", "lerp", "sqrt", "_foreach")),
    ("copies and casts", ("copy_", "_to_copy", "clone", "cat", "contiguous")),
    # everything else ("other"): elementwise arithmetic, layer norms, reductions, indexing
]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _buffer(env: Env, count: int, seed: int) -> tuple[Batch, torch.Tensor]:
    """Instances with random feasible trajectories: the same shapes a real buffer holds."""
    gen = torch.Generator().manual_seed(seed)
    instances = env.generate(count, gen)
    state = env.reset(instances)
    actions = []
    for _ in range(env.max_steps(instances)):
        mask = env.action_mask(state)
        a = torch.multinomial(mask.float(), 1, generator=gen).squeeze(1)
        actions.append(a)
        state = env.step(state, a)
    return instances, torch.stack(actions, 1)


def time_steps(
    module: SelfImprovementModule,
    env: Env,
    buffer: tuple[Batch, torch.Tensor],
    batch_size: int,
    steps: int,
    warmup: int,
    precision: str,
    device: torch.device,
) -> dict[str, Any]:
    """Median seconds per step for batch building, transfer and forward/backward/step, and the
    loss of every step (warm-up included): batches and initial weights depend only on the seeds,
    so two precisions' loss curves are comparable step by step."""
    instances, actions = buffer
    gen = torch.Generator().manual_seed(0)
    optim = module.configure_optimizers()
    dtype = PRECISIONS[precision]
    parts: dict[str, list[float]] = {"batch_s": [], "transfer_s": [], "step_s": []}
    losses = []
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        idx = torch.randint(actions.shape[0], (batch_size,), generator=gen)
        states, targets = env.training_batch(instances.index(idx), actions[idx], gen)
        t1 = time.perf_counter()
        states, targets = states.to(device), targets.to(device)
        _sync(device)
        t2 = time.perf_counter()
        with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            loss = module.loss(states, targets)
        optim.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(module.policy.parameters(), 1.0)
        optim.step()
        _sync(device)
        t3 = time.perf_counter()
        losses.append(loss.item())
        if i >= warmup:
            parts["batch_s"].append(t1 - t0)
            parts["transfer_s"].append(t2 - t1)
            parts["step_s"].append(t3 - t2)
    out: dict[str, Any] = {k: statistics.median(v) for k, v in parts.items()}
    total = sum(out.values())
    out["total_s"] = total
    out["device_share"] = out["step_s"] / total
    out["samples_per_s"] = batch_size / total
    out["steps_per_s_device_only"] = 1.0 / out["step_s"]
    if device.type == "cuda":
        out["max_memory_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
    out["losses"] = losses
    return out


def profile_step(
    module: SelfImprovementModule,
    env: Env,
    buffer: tuple[Batch, torch.Tensor],
    batch_size: int,
    precision: str,
    device: torch.device,
    steps: int = 3,
) -> dict[str, float]:
    """Share of the profiled steps' operator self time per kind of operator (KINDS)."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities) as prof:
        time_steps(module, env, buffer, batch_size, steps, 0, precision, device)
    attr = "self_device_time_total" if device.type == "cuda" else "self_cpu_time_total"
    totals: dict[str, float] = {}
    for event in prof.key_averages():
        name = event.key.lower()
        kind = next((k for k, frags in KINDS if any(f in name for f in frags)), "other")
        totals[kind] = totals.get(kind, 0.0) + float(getattr(event, attr, 0.0))
    grand = sum(totals.values()) or 1.0
    return {k: v / grand for k, v in sorted(totals.items(), key=lambda kv: -kv[1])}


def one_epoch(experiment: str, overrides: list[str], device: str) -> dict[str, Any]:
    """One epoch of `nco-train experiment=...` in a subprocess; its timings from metrics.csv."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            sys.executable,
            "-m",
            "nco.cli.train",
            f"experiment={experiment}",
            "trainer.max_epochs=1",
            "distributed=local",
            f"out_dir={tmp}",
            f"hydra.run.dir={tmp}",
            "training.progress=false",
        ]
        if device == "cpu":
            cmd.append("trainer=default")
        start = time.perf_counter()
        subprocess.run(cmd + overrides, check=True)
        wall = time.perf_counter() - start
        keys = ("time/sampling_s", "time/training_s", "time/validation_s", "val/gap")
        logged = Run(Path(tmp)).metrics(keys)  # the one epoch's value of each
    out: dict[str, Any] = {"wall_s": wall, "overrides": overrides}
    for key, values in logged.items():
        if values:
            out[key.split("/")[1]] = list(values.values())[-1]
    return out


def bench_experiment(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """Steps of one experiment's policy in every precision asked for (and a profile)."""
    with initialize_config_dir(str(CONFIG_DIR), version_base=None):
        cfg = compose("train", overrides=[f"experiment={name}", *args.override])
    device = torch.device(args.device)
    batch_size = args.batch_size or int(cfg.training.batch_size)
    env_cfg = OmegaConf.to_container(cfg.problem.env, resolve=True)
    model_cfg = OmegaConf.to_container(cfg.model, resolve=True)
    env = registry.build("env", env_cfg, "problem.env")
    buffer = _buffer(env, args.buffer, seed=0)
    default = ["fp32", "bf16"] if bf16_fast(device.type) else ["fp32"]
    precisions = args.precisions or default
    out: dict[str, Any] = {"batch_size": batch_size, "model": model_cfg, "steps": {}}
    for precision in precisions:
        torch.manual_seed(0)
        policy = registry.build("policy", model_cfg, "model").to(device)
        module = SelfImprovementModule(policy, env, lr=float(cfg.training.lr)).to(device)
        r = time_steps(module, env, buffer, batch_size, args.steps, args.warmup, precision, device)
        if args.profile:
            r["profile_shares"] = profile_step(module, env, buffer, batch_size, precision, device)
        out["steps"][precision] = r
        print(
            f"{name:<20}{precision:<6}{batch_size:>6}{r['batch_s']:>10.3f}{r['transfer_s']:>9.3f}"
            f"{r['step_s']:>9.3f}{r['samples_per_s']:>11.0f}"
        )
    if {"fp32", "bf16"} <= out["steps"].keys():
        out["bf16_speedup_step"] = out["steps"]["fp32"]["step_s"] / out["steps"]["bf16"]["step_s"]
    # mean loss of the last fifth of the steps, per precision: the curves' end points
    out["final_loss"] = {
        p: statistics.mean(r["losses"][-max(1, len(r["losses"]) // 5) :])
        for p, r in out["steps"].items()
    }
    return out


def plot_losses(experiments: dict[str, Any], path: Path) -> None:
    """Loss per optimizer step of every experiment (one panel each), a line per precision."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    width = 5 * len(experiments)
    fig, axes = plt.subplots(1, len(experiments), figsize=(width, 3.6), squeeze=False)
    for ax, (name, result) in zip(axes[0], experiments.items(), strict=True):
        for precision, r in result["steps"].items():
            ax.plot(range(1, len(r["losses"]) + 1), r["losses"], label=precision, lw=1)
        title = f"{name}, batch {result['batch_size']}"
        ax.set(title=title, xlabel="optimizer step", ylabel="loss")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", nargs="+", default=EXPERIMENTS)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch-size", type=int, default=0, help="0: each experiment's")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--precisions", nargs="+", choices=list(PRECISIONS), default=None)
    parser.add_argument("--buffer", type=int, default=500, help="instances in the fake buffer")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument("--profile", action="store_true", help="operator time by kind")
    parser.add_argument("--epoch", action="store_true", help="also time one real epoch")
    parser.add_argument("--override", nargs="*", default=[], help="Hydra overrides")
    parser.add_argument("--out", default="bench_train.json")
    parser.add_argument("--curve", default=None, help="PNG of the loss per step by precision")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    print(
        f"{'experiment':<20}{'prec':<6}{'batch':>6}{'data s':>10}{'move s':>9}{'step s':>9}"
        f"{'samples/s':>11}"
    )
    report: dict[str, Any] = {
        "config": vars(args),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "bf16_hardware": bf16_fast(device.type),
        "machine": platform.processor() or platform.machine(),
        "experiments": {name: bench_experiment(name, args) for name in args.experiments},
    }
    if args.epoch:
        report["epoch"] = one_epoch(args.experiments[0], args.override, args.device)
        print("one epoch:", json.dumps(report["epoch"]))
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(f"wrote {args.out}")
    if args.curve:
        plot_losses(report["experiments"], Path(args.curve))
        print(f"wrote {args.curve}")


if __name__ == "__main__":
    main()
