"""Choose a fine-tuning learning rate for SI with a light-decoder policy (issue 38).

One epoch of Algorithm 1 in miniature, with the sampling shared by every arm: the initial
policy (`--init`, e.g. the imported POMO) samples `--instances` new instances with the
experiment's Gumbeldore settings, then each learning rate trains a copy of it on those
trajectories (whole, teacher-forced, the experiment's `training.batch_size`, `--steps` Adam
steps, gradients clipped to norm 1), and every copy is scored by greedy rollouts on the
experiment's validation set (gap to its cached reference costs). Writes one JSON.

    python scripts/light_lr_probe.py --experiment tsp100_light_gumbeldore \\
        --init data/checkpoints/pomo_tsp100/best.pt --lrs 1e-5 5e-5 2e-4 \\
        --out data/results/light/lr_probe_tsp100.json
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from pathlib import Path

import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf
from probe_training import clipped_step  # scripts/ is on sys.path when run as a script

from nco import checkpoint
from nco.decode import decode
from nco.distributed.chunks import chunk_bounds, derive_seed
from nco.env import Batch, Env
from nco.training.runner import validation_set
from nco.training.trajectories import TrajectoryBatches, augment_setting, trajectory_loss

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def greedy_gap(policy: torch.nn.Module, env: Env, instances: Batch, refs: torch.Tensor) -> float:
    """Mean percent gap of greedy rollouts to `refs`."""
    policy.eval()
    with torch.no_grad():
        cost = env.cost(decode(policy, env, instances, {"method": "greedy"}).best().objective)
    return float(((cost.cpu() - refs) / refs).mean() * 100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", required=True)
    parser.add_argument("--init", required=True, help="best.pt of the policy to fine-tune")
    parser.add_argument("--lrs", type=float, nargs="+", default=[1e-5, 5e-5, 2e-4])
    parser.add_argument("--instances", type=int, default=64)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    parser.add_argument("overrides", nargs="*", help="config overrides, e.g. training.augment=true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose("train", [f"experiment={args.experiment}", "out_dir=unused", *args.overrides])
    env = instantiate(cfg.problem.env)
    policy = checkpoint.load(args.init).policy
    search = OmegaConf.to_container(cfg.search, resolve=True)
    search["p_min"] = float(cfg.training.p_min_schedule.get(0, search["p_min"]))
    val, refs = validation_set(cfg, env)
    start = time.perf_counter()
    instances = env.generate(args.instances, torch.Generator().manual_seed(args.seed))
    policy.eval()
    parts = []
    with torch.no_grad():
        for c, (lo, hi) in enumerate(chunk_bounds(args.instances, int(search["batch_size"]))):
            gen = torch.Generator().manual_seed(derive_seed(args.seed, c))
            chunk = instances.index(torch.arange(lo, hi))
            parts.append(decode(policy, env, chunk, search, generator=gen).best())
    actions = torch.nn.utils.rnn.pad_sequence(
        [row for b in parts for row in b.actions], batch_first=True, padding_value=-1
    )
    sample_cost = float(torch.cat([env.cost(b.objective) for b in parts]).mean())
    sampling_s = time.perf_counter() - start
    result = {
        "experiment": args.experiment,
        "init": args.init,
        "instances": args.instances,
        "steps": args.steps,
        "batch_size": int(cfg.training.batch_size),
        "search": search,
        "overrides": args.overrides,
        "sampling_s": sampling_s,
        "sample_cost": sample_cost,
        "val_instances": val.batch_size,
        "initial_gap": greedy_gap(policy, env, val, refs),
        "arms": [],
    }
    print(json.dumps({k: v for k, v in result.items() if k != "search"}), flush=True)
    for lr in args.lrs:
        trained = copy.deepcopy(policy).train()
        opt = torch.optim.Adam(trained.parameters(), lr=lr)
        batches = TrajectoryBatches(
            env,
            [(instances, actions)],
            args.steps,
            int(cfg.training.batch_size),
            args.seed,
            augment_setting(cfg.training.augment),
        )
        start = time.perf_counter()
        losses = []
        for drawn, acts in batches:
            losses.append(clipped_step(trained, opt, trajectory_loss(trained, env, drawn, acts)))
        arm = {
            "lr": lr,
            "training_s": time.perf_counter() - start,
            "first_loss": losses[0],
            "last_loss": losses[-1],
            "gap": greedy_gap(trained, env, val, refs),
        }
        result["arms"].append(arm)
        print(json.dumps(arm), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
