"""`nco-references`: reference costs of a dataset by a classical solver; resumable.

    nco-references --data kool:tsp100_test --solver lkh --time-limit 10
    nco-references --data kool:tsp100_test --solver exact --limit 200 --time-limit 60
    nco-references --data kool:cvrp100_test --solver hgs --limit 200 --time-limit 5 \\
        --max-wall 2400

Each finished instance is logged under --work-dir, so rerunning continues; at the end the
costs go to `<out-dir>/<set>__<solver>.npz` with an entry in `<out-dir>/manifest.json`, which
`nco.datasets` attaches to the set as its references. The work is
`nco.reference_costs.compute_references`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nco.datasets import GENERATED_DIR, REFERENCES_DIR
from nco.reference_costs import compute_references


def parser() -> argparse.ArgumentParser:
    """The `nco-references` argument parser."""
    p = argparse.ArgumentParser(prog="nco-references", description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="named set or file, e.g. kool:tsp100_test")
    p.add_argument("--solver", required=True, help="e.g. lkh, exact, hgs")
    p.add_argument("--problem", default=None, help="tsp / cvrp / jssp for dataset files")
    p.add_argument("--limit", type=int, default=None, help="first LIMIT instances only")
    p.add_argument("--time-limit", type=float, default=10.0, help="seconds per instance")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--workers", type=int, default=1, help="parallel solver processes")
    p.add_argument("--max-wall", type=float, default=None, help="start no instance after")
    p.add_argument("--cache-dir", type=Path, default=GENERATED_DIR, help="generated sets")
    p.add_argument("--work-dir", type=Path, default=GENERATED_DIR / "references")
    p.add_argument("--out-dir", type=Path, default=REFERENCES_DIR)
    p.add_argument("--tag", default="", help="name a further run: <set>__<solver>-TAG")
    p.add_argument("--no-progress", action="store_true")
    return p


def run(argv: list[str] | None = None) -> dict:
    """Parse `argv`, compute the references and print the manifest entry; returns it (a
    ValueError of the library, e.g. a log made with other settings, propagates)."""
    args = parser().parse_args(argv)
    entry = compute_references(
        args.data,
        args.solver,
        problem=args.problem,
        limit=args.limit,
        time_limit=args.time_limit,
        seed=args.seed,
        workers=args.workers,
        max_wall=args.max_wall,
        cache_dir=args.cache_dir,
        work_dir=args.work_dir,
        out_dir=args.out_dir,
        tag=args.tag,
        progress=not args.no_progress,
    )
    if entry:
        print(json.dumps(entry, indent=1))
    return entry


def main(argv: list[str] | None = None) -> None:
    """The console script: `run`, a refused setting ending with its message."""
    try:
        run(argv)
    except ValueError as err:
        raise SystemExit(f"nco-references: {err}") from None


if __name__ == "__main__":
    main()
