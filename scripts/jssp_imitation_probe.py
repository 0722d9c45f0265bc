"""How many optimizer steps does the paper-size JSSP transformer need to absorb one epoch's targets?

Why: the CPU run (configs/experiment/jssp_cpu.yaml) samples only 6 instances per epoch, and its
first arm, at the paper's 2 steps per sampled instance (12 per epoch), barely moved its greedy
policy in 5 epochs. This probe trains one copy of the policy on fixed targets, the FDD/MWKR
rule's schedules of 6 random 15x15 instances (stand-ins for an epoch's best samples; the rule is
the strongest of nco's dispatching rules), with the run's optimizer (Adam, lr 2e-4, clip 1,
batches of 512 sub-schedules drawn by `JSSPEnv.training_batch`), and after each step count in
`--steps` decodes 20 other 15x15 instances greedily. It prints and saves, per step count, the
mean greedy makespan, the last loss and the ReZero weights, beside the rule's own makespan.

    python scripts/jssp_imitation_probe.py --init <run>/checkpoints/last.ckpt \
        --out data/results/jssp_cpu/imitation_probe.json          # one thread, ~15 min
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from probe_training import clipped_step  # scripts/ is on sys.path when run as a script

from nco import checkpoint
from nco.decode import decode
from nco.models.jssp_transformer import JSSPTransformer
from nco.problems.jssp.dispatching import dispatch
from nco.problems.jssp.env import JSSPEnv
from nco.problems.jssp.generator import generate
from nco.problems.jssp.types import JSSPInstances
from nco.training.module import imitation_loss

RULE = "fdd/mwkr"


def _policy(init: str) -> JSSPTransformer:
    """The paper-size transformer in bf16: fresh (seeded), a best.pt, or a run's last.ckpt."""
    if init == "none":
        torch.manual_seed(0)
        return JSSPTransformer(dim=64, pairs=3, heads=8, ff_dim=256, precision="bf16")
    load = checkpoint.load_training if init.endswith(".ckpt") else checkpoint.load
    policy = load(init).policy
    if not isinstance(policy, JSSPTransformer):
        raise ValueError(f"{init}: expected a JSSP transformer, got {type(policy).__name__}.")
    return policy


def _makespan(env: JSSPEnv, instances: JSSPInstances, actions: torch.Tensor) -> float:
    return float(env.cost(env.objective(env.replay(instances, actions))).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--init", default="none", help="'none', a best.pt or a run's last.ckpt")
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--steps", type=int, nargs="+", default=[0, 12, 24, 48, 96, 192])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    env = JSSPEnv()
    gen = torch.Generator().manual_seed(0)
    train = generate(6, [(15, 15)], gen)
    val = generate(20, [(15, 15)], gen)
    targets = dispatch(train, RULE)
    record = {
        "init": args.init,
        "lr": args.lr,
        "rule": RULE,
        "rule_train_makespan": _makespan(env, train, targets),
        "rule_val_makespan": _makespan(env, val, dispatch(val, RULE)),
        "points": [],
    }
    print(json.dumps({k: v for k, v in record.items() if k != "points"}), flush=True)
    policy = _policy(args.init)
    optimizer = torch.optim.Adam(policy.parameters(), lr=args.lr)
    batches = torch.Generator().manual_seed(1)
    step = 0
    loss: float | None = None
    for stop in sorted(args.steps):
        start = time.perf_counter()
        policy.train()
        while step < stop:
            rows = torch.randint(0, len(train), (512,), generator=batches)
            states, expert = env.training_batch(train.index(rows), targets[rows], batches)
            loss = clipped_step(policy, optimizer, imitation_loss(policy, env, states, expert))
            step += 1
        train_s = time.perf_counter() - start
        sols = decode(policy, env, val, {"method": "greedy", "batch_size": len(val)})
        point = {
            "step": step,
            "val_greedy_makespan": float((-sols.objective.max(1).values).mean()),
            "loss": loss,
            "train_s": round(train_s, 1),
            "rezero": [
                round(float(p.detach()), 4)
                for name, p in policy.named_parameters()
                if name.endswith("alpha")
            ],
        }
        print(json.dumps(point), flush=True)
        record["points"].append(point)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
