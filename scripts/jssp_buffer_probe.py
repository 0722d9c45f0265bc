"""Would the JSSP CPU run improve on its best policy at another learning rate? Train copies of
the run's best policy on the run's own imitation set and validate each as the run does.

Why: after epoch 3 the run (configs/experiment/jssp_cpu.yaml) stopped improving; its trained
policy's validation gap wandered between 14.6 and 19.1 % while the imitation set grew by 6
instances an epoch. This probe asks whether the imitation set holds a better policy that the
run's rate (2e-4, 96 steps an epoch) does not reach: for each rate in `--lrs` it trains a copy
of `<run>/best.pt` for `--steps` optimizer steps on the buffer stored in
`<run>/checkpoints/last.ckpt` (batches as nco-train draws them: `--batch-size` random
sub-schedules, Adam, gradients clipped to norm 1), decodes the run's validation set greedily
and compares with the run's cached references.

    python scripts/jssp_buffer_probe.py --run data/jssp_cpu/gd --lrs 2e-4 5e-5 --steps 96 \\
        --out data/results/jssp_cpu/buffer_probe.json          # one thread, ~10 min per rate

`--eval-at 24 48` also validates each arm after that many steps (train_s then includes those
validations); `--ema-decays 0.98` also validates the exponential moving average of each arm's
weights, updated after every step from the best weights on, as `training.ema_decay` does
(`--seeds 0 1 2` measures how much one 96-step draw varies: docs/jssp.md). `--init untrained`
trains copies of the run's untrained policy instead (seeded and built as nco-train builds it;
its validation gap is recorded beside, to be checked against the run's `val/initial_gap`).
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import time
from pathlib import Path

import numpy as np
import torch
from jssp_val_rules import run_validation  # scripts/ is on sys.path when run as a script
from omegaconf import DictConfig
from probe_training import clipped_step
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from nco import checkpoint
from nco.decode import decode
from nco.problems.jssp.env import JSSPEnv
from nco.problems.jssp.types import JSSPInstances
from nco.training.buffer import TrajectoryBuffer
from nco.training.data import SubTrajectoryBatches
from nco.training.module import imitation_loss
from nco.training.runner import initial_policy


def run_parts(run: Path) -> tuple[DictConfig, TrajectoryBuffer, JSSPInstances, np.ndarray]:
    """The run's config, its imitation set, validation instances and cached references."""
    config, instances, refs = run_validation(run)
    payload = torch.load(run / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    buffer = TrajectoryBuffer()
    buffer.load_state_dict(payload["TrajectoryDataModule"]["buffer"])
    return config, buffer, instances, refs


def val_gap(policy: torch.nn.Module, val: JSSPInstances, refs: np.ndarray, batch: int) -> float:
    """Mean greedy gap in % on the validation set, as the run's `val/gap`."""
    sols = decode(policy, JSSPEnv(), val, {"method": "greedy", "batch_size": batch})
    makespan = (-sols.objective.max(1).values).to(torch.float64).numpy()
    return float(((makespan - refs) / refs).mean() * 100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, required=True, help="a JSSP nco-train run folder")
    parser.add_argument("--lrs", type=float, nargs="+", default=[2e-4, 5e-5])
    parser.add_argument("--steps", type=int, default=96)
    parser.add_argument(
        "--eval-at", type=int, nargs="*", default=[], help="also validate after these many steps"
    )
    parser.add_argument(
        "--ema-decays",
        type=float,
        nargs="*",
        default=[],
        help="also validate moving averages of the weights (as training.ema_decay does)",
    )
    parser.add_argument(
        "--init",
        choices=["best", "untrained"],
        default="best",
        help="train copies of <run>/best.pt (default) or of the run's untrained policy",
    )
    parser.add_argument(
        "--skip-best", action="store_true", help="do not re-validate the starting policy"
    )
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=[0], help="one arm per seed and rate"
    )
    parser.add_argument("--val-limit", type=int, default=None, help="first N validation instances")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    config, buffer, val, refs = run_parts(args.run)
    if args.val_limit is not None:
        val, refs = val.index(torch.arange(min(args.val_limit, len(refs)))), refs[: args.val_limit]
    env = JSSPEnv()
    val_batch = int(config.training.val_batch_size)
    record: dict[str, object] = {
        "run": str(args.run),
        "init": args.init,
        "buffer_instances": len(buffer),
        "steps": args.steps,
        "batch_size": args.batch_size,
        "val_instances": len(refs),
    }
    if args.init == "best":
        best = checkpoint.load(args.run / "best.pt")
        start_policy, key = best.policy, "best_val_gap_percent"
        record["best_epoch"] = best.meta.get("epoch")
    else:
        start_policy, key = initial_policy(config)[1], "untrained_val_gap_percent"
    if not args.skip_best:
        record[key] = val_gap(start_policy.eval(), val, refs, val_batch)
        print(json.dumps({key: record[key]}), flush=True)
    arms: list[dict[str, object]] = []
    for seed, lr in itertools.product(args.seeds, args.lrs):
        policy = copy.deepcopy(start_policy)
        optimizer = torch.optim.Adam(policy.parameters(), lr=lr)
        batches = SubTrajectoryBatches(env, buffer.groups, args.steps, args.batch_size, seed)
        averages = {
            d: AveragedModel(policy, multi_avg_fn=get_ema_multi_avg_fn(d), use_buffers=True)
            for d in args.ema_decays
        }
        start, losses, along = time.perf_counter(), [], {}
        policy.train()
        for step, (states, expert) in enumerate(batches, start=1):
            loss = imitation_loss(policy, env, states, expert)
            losses.append(clipped_step(policy, optimizer, loss))
            for average in averages.values():
                average.update_parameters(policy)
            if step in args.eval_at and step < args.steps:
                along[step] = val_gap(policy.eval(), val, refs, val_batch)
                line = {"lr": lr, "seed": seed, "step": step, "val_gap_percent": along[step]}
                print(json.dumps(line), flush=True)
                policy.train()
        train_s = time.perf_counter() - start
        policy.eval()
        arm = {
            "lr": lr,
            "seed": seed,
            "val_gap_percent": val_gap(policy, val, refs, val_batch),
            "val_gap_percent_at_step": along,
            "mean_loss": float(np.mean(losses)),
            "train_s": round(train_s, 1),
        }
        arm["ema_val_gap_percent"] = {
            d: val_gap(average.module.eval(), val, refs, val_batch)
            for d, average in averages.items()
        }
        print(json.dumps(arm), flush=True)
        arms.append(arm)
    record["arms"] = arms
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
