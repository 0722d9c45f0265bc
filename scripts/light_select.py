"""Compare checkpoints of one problem on the head of Kool's validation set, paired against the
first: which fine-tuned epoch to ship, decided without looking at the test set.

    python scripts/light_select.py --problem cvrp --limit 2000 \\
        --out data/results/light/select_cvrp100.json \\
        imported=data/checkpoints/pomo_cvrp100/best.pt \\
        ft_e4=data/light/cvrp100_ft/best.pt ft_e10=data/light/cvrp100_ft/checkpoints/last.ckpt

Each checkpoint is decoded greedily (one trajectory) on the first LIMIT instances of
`kool:<problem>100_val` (seed 4321, disjoint from the test set's 1234). The table gives each
one's mean cost and its mean per-instance cost change against the first checkpoint, in %, with
the standard error of that mean: the pairing removes the instances' own spread, so 2,000
instances resolve changes of ~0.06 % that a 200-instance validation set cannot (docs/light_si.md).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from hydra import compose, initialize_config_dir

from nco.evaluation import run
from nco.inference import check_checkpoint
from nco.paths import CONFIG_DIR


def parse_named(items: list[str]) -> dict[str, str]:
    """`name=path` arguments, in order; names must be unique."""
    named: dict[str, str] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"light_select: expected NAME=CHECKPOINT, got {item!r}.")
        if name in named:
            raise SystemExit(f"light_select: checkpoint name {name!r} given twice.")
        named[name] = path
    return named


def greedy_costs(checkpoint: str, data: str, limit: int, batch_size: int) -> np.ndarray:
    """Greedy costs of `checkpoint` on the first `limit` instances of `data` (one nco-eval run)."""
    overrides = [
        f"checkpoint={check_checkpoint(checkpoint, 'light_select').resolve()}",
        f"data={data}",
        f"limit={limit}",
        f"batch_size={batch_size}",
        "search=greedy",
        "progress=false",
    ]
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose(config_name="evaluate", overrides=overrides)
    return np.asarray(run(cfg).objectives, dtype=np.float64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problem", choices=("tsp", "cvrp"), required=True)
    parser.add_argument("--data", default=None, help="another set (default kool:<p>100_val)")
    parser.add_argument("--limit", type=int, default=2000, help="first N validation instances")
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--out", type=Path, required=True, help="the results JSON")
    parser.add_argument("checkpoints", nargs="+", help="NAME=CHECKPOINT; the first is the base")
    args = parser.parse_args()
    if args.limit < 2:
        raise SystemExit("light_select: expected --limit >= 2 (a standard error needs two).")
    named = parse_named(args.checkpoints)
    data = args.data or f"kool:{args.problem}100_val"
    costs = {
        name: greedy_costs(path, data, args.limit, args.batch_size) for name, path in named.items()
    }
    base_name = next(iter(named))
    base = costs[base_name]
    rows = {}
    print(f"{'checkpoint':14s} {'mean cost':>10s} {'vs ' + base_name + ' %':>16s} {'stderr':>8s}")
    for name, cost in costs.items():
        change = (cost - base) / base * 100
        rows[name] = {
            "checkpoint": named[name],
            "mean_cost": float(cost.mean()),
            "change_percent": float(change.mean()),
            "stderr_percent": float(change.std(ddof=1) / np.sqrt(len(change))),
        }
        row = rows[name]
        print(
            f"{name:14s} {row['mean_cost']:10.4f} {row['change_percent']:+16.3f} "
            f"{row['stderr_percent']:8.3f}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    summary = {"data": data, "limit": args.limit, "search": "greedy", "base": base_name}
    args.out.write_text(json.dumps({**summary, "checkpoints": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
