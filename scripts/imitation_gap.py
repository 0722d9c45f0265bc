"""How well checkpoints imitate solver solutions (teacher-forced) versus how well they decode.

    python scripts/imitation_gap.py --problem tsp --size 20 --num 500 --seed 77 \\
        --checkpoints data/reproduction/tsp20/{sl,wr,wor,gd}_s0/best.pt \\
        --out data/results/reproduction/tsp20_imitation.json

Held-out instances from the env's training generator (seeded by --seed) are solved by the
problem's classical solver (TSP: exact branch-and-cut by default, or lkh; CVRP: hgs). Each
solution becomes the env's action sequence (TSP: `nco.problems.tsp.expert.tours_to_actions`, which
starts every tour at node 0 and keeps the solver's direction; CVRP:
`nco.problems.cvrp.routes.routes_to_actions`, the solver's route order), and is replayed with
`env.reset` / `env.step`, the states the policy decodes from. At every step the policy's logits,
masked as the decoders mask them, give the next-action accuracy (argmax = the solver's action)
and the NLL of the solver's action. The same policy's greedy decoding gives the gap to the
solver's costs. SL trains on the solver's states only; SI trains on states its own decoding
reaches: the comparison shows whether imitating better means decoding better.

Ambiguous steps count as errors when the policy picks another optimal action: the TSP root has
two optimal first moves (the tour's two directions), CVRP routes may come in any order. Forced
steps (one feasible action) count as correct with NLL 0. `--out` also gets both metrics per step.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from nco import checkpoint
from nco.env import Batch, Env
from nco.registry import get_problem
from nco.search import greedy
from nco.search.policy_eval import masked_logits

DEFAULT_SOLVER = {"tsp": "exact", "cvrp": "hgs"}
REPLAY_RTOL = 1e-6  # replayed cost vs solver cost (HGS searches on rounded distances)


def tsp_actions(solutions: list, instances: Batch) -> torch.Tensor:
    """TSPEnv actions Long[N, n-1] of solver tours."""
    from nco.problems.tsp.expert import tours_to_actions

    return tours_to_actions(np.asarray(solutions, dtype=np.int64))


def cvrp_actions(solutions: list, instances: Batch) -> torch.Tensor:
    """CVRPEnv actions Long[N, n] of solver routes."""
    from nco.problems.cvrp.routes import routes_to_actions

    n = instances.locs.shape[1]
    return torch.stack([routes_to_actions(routes, n) for routes in solutions])


TO_ACTIONS: dict[str, Callable[[list, Batch], torch.Tensor]] = {
    "tsp": tsp_actions,
    "cvrp": cvrp_actions,
}


class Reference(NamedTuple):
    """Solver solutions of the instances as env actions, with their costs."""

    actions: torch.Tensor  # (N, T) long
    costs: torch.Tensor  # (N,) float64
    optimal: int  # solutions the solver proved optimal
    seconds: float


def solve(problem: str, instances: Batch, solver: str, time_limit: float) -> Reference:
    """Solve every instance with the problem's solver `solver` (seed = instance index)."""
    run = get_problem(problem).solver(solver)
    names = [f.name for f in dataclasses.fields(instances)]
    start = time.perf_counter()
    results = [
        run({k: getattr(instances, k)[i].cpu().numpy() for k in names}, time_limit, i)
        for i in range(instances.batch_size)
    ]
    return Reference(
        actions=TO_ACTIONS[problem]([r.solution for r in results], instances),
        costs=torch.tensor([r.cost for r in results], dtype=torch.float64),
        optimal=sum(bool(r.optimal) for r in results),
        seconds=time.perf_counter() - start,
    )


@torch.no_grad()
def teacher_forced(
    policy: torch.nn.Module, env: Env, instances: Batch, actions: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Correct (Bool[N, T]) and NLL (Float[N, T]) of the policy at each state along `actions`
    (Long[N, T], no padding), and the replayed cost (Float[N])."""
    state = env.reset(instances)
    correct, nll = [], []
    for t in range(actions.shape[1]):
        target = actions[:, t : t + 1]
        mask = env.action_mask(state)
        if not bool(mask.gather(1, target).all()):
            raise ValueError(f"step {t}: a solver action is infeasible in the env's state.")
        logp = torch.log_softmax(masked_logits(policy, env, state, mask), dim=1)
        nll.append(-logp.gather(1, target).squeeze(1))
        correct.append(logp.argmax(1) == target.squeeze(1))
        state = env.step(state, target.squeeze(1))
    if not bool(env.is_done(state).all()):
        raise ValueError("the solver's actions do not complete the episode.")
    return torch.stack(correct, 1), torch.stack(nll, 1), env.cost(env.objective(state))


def measure(
    policy: torch.nn.Module, env: Env, instances: Batch, ref: Reference, batch_size: int = 250
) -> dict:
    """Teacher-forced accuracy and NLL along the reference, and the greedy gap (percent)."""
    correct, nll, greedy_costs = [], [], []
    for rows in torch.arange(instances.batch_size).split(batch_size):
        chunk = instances.index(rows)
        c, n, replayed = teacher_forced(policy, env, chunk, ref.actions[rows])
        if not torch.allclose(replayed, ref.costs[rows], rtol=REPLAY_RTOL, atol=0.0):
            raise ValueError("replaying the solver's actions does not give the solver's costs.")
        correct.append(c)
        nll.append(n)
        greedy_costs.append(env.cost(greedy(policy, env, chunk).best().objective))
    correct_all, nll_all = torch.cat(correct).double(), torch.cat(nll)
    costs = torch.cat(greedy_costs)
    return {
        "accuracy": float(correct_all.mean()),
        "nll": float(nll_all.mean()),
        "greedy_gap": float(((costs - ref.costs) / ref.costs).mean() * 100),
        "greedy_mean_cost": float(costs.mean()),
        "accuracy_by_step": correct_all.mean(0).tolist(),
        "nll_by_step": nll_all.mean(0).tolist(),
    }


def load_checkpoints(paths: Sequence[Path], problem: str) -> list[checkpoint.Loaded]:
    """Every checkpoint, checked to exist and to hold a `problem` policy."""
    for path in paths:
        if not path.is_file():
            raise ValueError(f"{path}: checkpoint file not found.")
    loaded = [checkpoint.load(path) for path in paths]
    for path, ckpt in zip(paths, loaded, strict=True):
        if ckpt.env.name != problem:
            raise ValueError(f"{path}: holds a {ckpt.env.name} policy, expected {problem}.")
    return loaded


def table(rows: list[dict]) -> str:
    """The per-checkpoint summary as aligned text."""
    width = max(len("checkpoint"), *(len(r["path"]) for r in rows))
    lines = [f"{'checkpoint':<{width}}  mode  epoch  accuracy %    NLL  greedy gap %"]
    for r in rows:
        epoch = "-" if r["epoch"] is None else str(r["epoch"])
        lines.append(
            f"{r['path']:<{width}}  {r['mode'] or '-':>4}  {epoch:>5}  {100 * r['accuracy']:10.2f}"
            f"  {r['nll']:5.3f}  {r['greedy_gap']:12.3f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problem", choices=sorted(TO_ACTIONS), default="tsp")
    parser.add_argument("--size", type=int, required=True, help="nodes (TSP) or customers (CVRP)")
    parser.add_argument("--num", type=int, default=500, help="held-out instances")
    parser.add_argument("--seed", type=int, default=77, help="instance generator seed")
    parser.add_argument("--solver", help="tsp: exact (default), lkh; cvrp: hgs (default)")
    parser.add_argument("--time-limit", type=float, default=10.0, help="seconds per instance")
    parser.add_argument("--batch-size", type=int, default=250, help="instances per policy batch")
    parser.add_argument("--checkpoints", type=Path, nargs="+", required=True, help="nco .pt files")
    parser.add_argument("--out", type=Path, help="JSON file to write")
    args = parser.parse_args(argv)
    if args.num < 1 or args.batch_size < 1:
        parser.error("--num and --batch-size must be >= 1")
    solver = args.solver or DEFAULT_SOLVER[args.problem]
    try:
        loaded = load_checkpoints(args.checkpoints, args.problem)
        env = get_problem(args.problem).env(args.size)
        instances = env.generate(args.num, torch.Generator().manual_seed(args.seed))
        ref = solve(args.problem, instances, solver, args.time_limit)
        print(
            f"{solver}: {args.num} {args.problem}{args.size} instances in {ref.seconds:.1f} s, "
            f"mean cost {float(ref.costs.mean()):.5f}, {ref.optimal} proven optimal",
            flush=True,
        )
        rows = []
        for path, ckpt in zip(args.checkpoints, loaded, strict=True):
            metrics = measure(ckpt.policy, env, instances, ref, args.batch_size)
            meta = {"mode": ckpt.meta.get("mode"), "epoch": ckpt.meta.get("epoch")}
            rows.append({"path": str(path), **meta, **metrics})
    except ValueError as err:
        parser.exit(2, f"imitation_gap: {err}\n")
    print(table(rows))
    if args.out is not None:
        result = {
            "problem": args.problem,
            "size": args.size,
            "num_instances": args.num,
            "seed": args.seed,
            "solver": solver,
            "time_limit": args.time_limit,
            "reference_mean_cost": float(ref.costs.mean()),
            "reference_proven_optimal": ref.optimal,
            "checkpoints": rows,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
