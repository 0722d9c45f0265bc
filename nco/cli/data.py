"""`nco-data`: write datasets: the standard test sets bit for bit, sets of one's own, and
expert data for supervised training (resumable).

    nco-data generate [--out data/generated] [--force] [--only kool:tsp100_test]
    nco-data generate --custom tsp 200 1000 7 --custom cvrp 50 500 11
    nco-data expert --problem tsp --size 20 --num 100000 --solver exact \\
        --out data/generated/expert/tsp20_exact.npz
    nco-data expert --problem cvrp --size 20 --num 20000 --solver hgs --time-limit 0.5 \\
        --workers 2 --out data/generated/expert/cvrp20_hgs.npz

`generate` writes every named set the problems declare (`kool:{tsp,cvrp}{20,50,100}_{test,val}`,
`bq:tsp{200,500,1000}`, `lehd:cvrp{200,500,1000}`) as `<source>_<name>.npz`, the files that
`load_dataset` caches, and prints the sha256 of each set's arrays; a set whose arrays do not
match the published checksum is reported and not written (exit status 1). Existing files are
kept unless --force. `--custom PROBLEM SIZE COUNT SEED` writes a set of any size, count and
seed by the same recipe as `custom_<problem><size>_n<count>_seed<seed>.npz`, for `data=` of
any command. The work is `nco.datagen` (generate) and `nco.expert_data` (expert).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from nco.datagen import make_custom, make_named
from nco.datasets import GENERATED_DIR, cache_path, named_sets
from nco.expert_data import PROBLEMS, make_expert_data


def parser() -> argparse.ArgumentParser:
    """The `nco-data` argument parser."""
    top = argparse.ArgumentParser(prog="nco-data", description=__doc__.split("\n\n")[0])
    sub = top.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="the standard test sets, or sets of your own")
    gen.add_argument("--out", type=Path, default=GENERATED_DIR, help="output folder")
    gen.add_argument("--force", action="store_true", help="overwrite existing files")
    gen.add_argument("--only", nargs="+", choices=named_sets(), help="only these sets")
    gen.add_argument(
        "--custom",
        nargs=4,
        action="append",
        metavar=("PROBLEM", "SIZE", "COUNT", "SEED"),
        help="a set of your own (tsp, cvrp: any problem with make_arrays), repeatable; the "
        "named sets are then skipped",
    )
    exp = sub.add_parser("expert", help="solved random instances for mode=sl (resumable)")
    exp.add_argument("--problem", choices=PROBLEMS, required=True)
    exp.add_argument("--size", type=int, required=True, help="nodes (TSP) or customers (CVRP)")
    exp.add_argument("--num", type=int, required=True, help="number of instances")
    exp.add_argument("--solver", required=True, help="tsp: exact, lkh; cvrp: hgs")
    exp.add_argument("--time-limit", type=float, default=10.0, help="seconds per instance")
    exp.add_argument("--seed", type=int, default=2024)
    exp.add_argument("--workers", type=int, default=1)
    exp.add_argument("--chunk", type=int, default=2000, help="instances per saved part")
    exp.add_argument("--out", type=Path, required=True, help="the .npz to write")
    return top


def generate(args: argparse.Namespace, usage: argparse.ArgumentParser) -> int:
    """`nco-data generate`; returns 1 if any named set failed its checksum."""
    if args.custom:
        for problem, size, count, seed in args.custom:
            try:
                numbers = int(size), int(count), int(seed)
            except ValueError:
                got = f"{size} {count} {seed}"
                usage.error(f"--custom: SIZE, COUNT and SEED must be integers, got {got}")
            try:
                print(make_custom(problem, *numbers, out=args.out, force=args.force))
            except ValueError as err:
                usage.error(f"--custom: {err}")
        return 0
    names = args.only or named_sets()
    status = make_named(names, args.out, args.force)
    for name in names:
        print(f"{name:20s} {cache_path(name, args.out).name:26s} {status[name]}")
    return int(any("MISMATCH" in s for s in status.values()))


def main(argv: list[str] | None = None) -> int:
    """Parse `argv` and run it; returns the exit status (the console script exits with it)."""
    top = parser()
    args = top.parse_args(argv)
    if args.command == "generate":
        return generate(args, top)
    try:
        result = make_expert_data(
            args.problem,
            args.size,
            args.num,
            args.solver,
            args.out,
            time_limit=args.time_limit,
            seed=args.seed,
            workers=args.workers,
            chunk=args.chunk,
        )
    except ValueError as err:
        raise SystemExit(f"nco-data expert: {err}") from None
    costs = result["reference_costs"]
    print(f"wrote {args.out}: {args.num} instances, mean cost {costs.mean():.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
