"""JSSP checkpoints side by side on fresh random instances of several sizes, against a
dispatching rule: which checkpoint is better where, without touching Taillard (the test set).

    python scripts/jssp_compare.py --checkpoints e23=data/checkpoints/jssp/best.pt \\
        e37=data/jssp_cpu/gd/best.pt --sizes 15x15 20x20 30x20 --num 100 \\
        --out data/results/jssp_cpu/compare_e23_e37.json

Per size, `--num` Taillard-style instances (durations 1..99, `--seed`, the same for every
checkpoint) are decoded greedily by each checkpoint and scheduled by `--rule` (default
FDD/MWKR, the best rule on Taillard). Printed and saved: each checkpoint's mean makespan in %
above the rule's, and for every pair of checkpoints the mean paired difference in points with
its standard error, which says whether a difference is more than the draw of instances.

`--search` decodes with another decoder than greedy (nco-eval's `search.*` keys without the
prefix, seeded by `--seed`), so the same checkpoint under two names, in two runs joined by
`--with`, compares two decoder settings on the same instances:

    python scripts/jssp_compare.py --checkpoints gd_s005=best.pt --sizes 15x15 --num 20 \\
        --search method=gumbeldore beam_width=32 rounds=4 p_min=0.8 sigma=0.05 --out a.json
    python scripts/jssp_compare.py --checkpoints gd_s02=best.pt --sizes 15x15 --num 20 \\
        --search method=gumbeldore beam_width=32 rounds=4 p_min=0.8 sigma=0.2 --with a.json \\
        --out b.json

`--with` adds the checkpoints of earlier outputs of this script (same rule, seed, number and
sizes) from the per-instance makespans they saved, so a new checkpoint is compared with the old
ones by decoding only itself:

    python scripts/jssp_compare.py --checkpoints e43=data/jssp_cpu/gd/best.pt \\
        --with data/results/jssp_cpu/compare_e40_e44.json --sizes 15x15 20x20 --out c.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

import numpy as np
import torch
import yaml
from jssp_val_rules import rule_makespans  # scripts/ is on sys.path when run as a script

from nco import checkpoint
from nco.decode import decode
from nco.distributed.chunks import derive_seed
from nco.inference import describe_search, search_config
from nco.problems.jssp.dispatching import RULES
from nco.problems.jssp.env import JSSPEnv
from nco.problems.jssp.generator import generate


def size(text: str) -> tuple[int, int]:
    """`JxM` as (jobs, machines)."""
    jobs, _, machines = text.partition("x")
    if not (jobs.isdigit() and machines.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a size JxM such as 15x15")
    return int(jobs), int(machines)


def named(text: str) -> tuple[str, Path]:
    """`name=path` (or a path, named by its file)."""
    name, sep, path = text.partition("=")
    file = Path(path if sep else name)
    if not file.is_file():
        raise argparse.ArgumentTypeError(f"{file}: no such checkpoint file")
    return (name if sep else file.stem), file


def setting(text: str) -> tuple[str, object]:
    """`key=value` of a search config, the value read as YAML (0.05, 32, null, true)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r}: expected key=value such as sigma=0.05")
    return key, yaml.safe_load(value)


Earlier = dict[str, tuple[np.ndarray, dict[str, tuple[np.ndarray, dict[str, object]]]]]


def earlier(
    files: list[Path], args: argparse.Namespace
) -> tuple[Earlier, dict[str, str], dict[str, str]]:
    """Per size, the rule's makespans and each earlier checkpoint's from earlier outputs; the
    earlier checkpoints' files and decoders (greedy in outputs from before `--search`)."""
    found: Earlier = {}
    paths: dict[str, str] = {}
    searches: dict[str, str] = {}
    for file in files:
        try:
            old = json.loads(file.read_text())
        except (OSError, ValueError) as err:
            raise SystemExit(f"--with {file}: not a results JSON of this script ({err})") from err
        for key in ("rule", "num", "seed"):
            if old.get(key) != getattr(args, key):
                raise SystemExit(
                    f"--with {file}: {key} is {old.get(key)!r}, this run's is "
                    f"{getattr(args, key)!r}; earlier results pair only on the same instances"
                )
        for jobs, machines in args.sizes:
            label = f"{jobs}x{machines}"
            row = old.get("sizes", {}).get(label, {})
            if "rule_makespans" not in row:
                raise SystemExit(
                    f"--with {file}: no per-instance makespans for {label} (sizes with them: "
                    f"{[s for s, r in old.get('sizes', {}).items() if 'rule_makespans' in r]})"
                )
            _, costs = found.setdefault(label, (np.asarray(row["rule_makespans"], float), {}))
            for name, entry in row["checkpoints"].items():
                if name in costs:
                    raise SystemExit(f"--with {file}: checkpoint name {name!r} given twice")
                timed = {"wall_s": entry["wall_s"]} if "wall_s" in entry else {}
                costs[name] = (np.asarray(entry["makespans"], float), {"from": "--with", **timed})
        paths.update(old.get("checkpoints", {}))
        searches.update({name: "greedy" for name in old.get("checkpoints", {})})
        searches.update(old.get("search", {}))
    return found, paths, searches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoints", type=named, nargs="+", required=True, help="name=best.pt")
    parser.add_argument("--sizes", type=size, nargs="+", default=[(15, 15), (20, 20), (30, 20)])
    parser.add_argument("--num", type=int, default=100, help="instances per size")
    parser.add_argument("--rule", default="fdd/mwkr", choices=sorted(RULES))
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument(
        "--search", type=setting, nargs="+", default=[("method", "greedy")], help="key=value..."
    )
    parser.add_argument("--out", type=Path, required=True, help="results JSON")
    parser.add_argument(
        "--with", dest="previous", type=Path, nargs="*", default=[], help="earlier outputs"
    )
    args = parser.parse_args()
    try:
        search = search_config(dict(args.search))
    except ValueError as err:
        parser.error(f"--search: {err}")
    before, before_paths, before_search = earlier(args.previous, args)
    old_names = list(next(iter(before.values()), (None, {}))[1])
    names = [name for name, _ in args.checkpoints] + old_names
    if len(set(names)) != len(names):
        parser.error(f"--checkpoints and --with: names must differ, got {names}")

    env = JSSPEnv()
    policies = {name: checkpoint.load(path).policy for name, path in args.checkpoints}
    result: dict = {"rule": args.rule, "num": args.num, "seed": args.seed, "sizes": {}}
    result["checkpoints"] = {name: str(path) for name, path in args.checkpoints}
    result["checkpoints"].update({n: before_paths.get(n, "?") for n in old_names})
    result["search"] = {name: describe_search(search) for name, _ in args.checkpoints}
    result["search"].update({n: before_search.get(n, "?") for n in old_names})
    for jobs, machines in args.sizes:
        generator = torch.Generator().manual_seed(args.seed + 1000 * jobs + machines)
        instances = generate(args.num, [(jobs, machines)], generator)
        rule = rule_makespans(instances, args.rule)
        old_rule, old_costs = before.get(f"{jobs}x{machines}", (rule, {}))
        if not np.array_equal(old_rule, rule):
            raise SystemExit(f"--with: the rule's makespans on {jobs}x{machines} differ from now")
        costs = dict(old_costs)
        for name, policy in policies.items():
            t0 = time.perf_counter()
            decoding = torch.Generator().manual_seed(derive_seed(args.seed, jobs, machines))
            with torch.no_grad():
                sols = decode(
                    policy, env, instances, {**search, "batch_size": args.batch_size}, decoding
                )
            cost = (-sols.objective.max(1).values).to(torch.float64).numpy()
            costs[name] = (cost, {"wall_s": round(time.perf_counter() - t0, 1)})
        above: dict[str, np.ndarray] = {}
        row: dict = {"rule_mean_makespan": float(rule.mean()), "checkpoints": {}}
        row["rule_makespans"] = rule.tolist()
        for name, (cost, extra) in costs.items():
            above[name] = (cost / rule - 1) * 100
            row["checkpoints"][name] = {
                "mean_makespan": float(cost.mean()),
                "above_rule_pct": float(above[name].mean()),
                **extra,
                "makespans": cost.tolist(),
            }
        row["pairs"] = {}
        for a, b in itertools.combinations(names, 2):
            diff = above[a] - above[b]
            row["pairs"][f"{a}-{b}"] = {
                "mean_points": float(diff.mean()),
                "stderr": float(diff.std(ddof=1) / np.sqrt(len(diff))),
            }
        result["sizes"][f"{jobs}x{machines}"] = row
        shown = ", ".join(
            f"{n} {c['above_rule_pct']:+.2f} %" for n, c in row["checkpoints"].items()
        )
        pairs = ", ".join(
            f"{p} {d['mean_points']:+.2f} +- {d['stderr']:.2f}" for p, d in row["pairs"].items()
        )
        print(f"{jobs}x{machines}: vs {args.rule}: {shown}; paired: {pairs}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
