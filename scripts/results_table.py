"""One markdown table from several results JSONs (`nco-baseline`, `nco-eval`): a row per file.

    python scripts/results_table.py data/results/baselines/*.json --out data/results/baselines.md

Columns: dataset, method (with the per-instance time limit where the file has one),
instances, mean cost, mean gap (percent, over instances with a reference), mean time per
instance (where the file has per-instance times), wall time and instances per second. Every
file is validated on reading (`nco.results.read_results`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from nco.results import Results, read_results

HEADER = (
    "| dataset | method | instances | mean cost | mean gap % | time / instance s | wall s "
    "| instances / s |\n|---|---|---|---|---|---|---|---|"
)


def row(res: Results) -> str:
    """The table row of one results file."""
    gap = "-" if res.mean_gap is None else f"{res.mean_gap:.3f}"
    per = "-" if res.times_s is None else f"{float(np.mean(res.times_s)):.2f}"
    method = res.method
    if res.info.get("time_limit") is not None:
        method += f" ({res.info['time_limit']:g} s limit)"
    rate = res.num_instances / res.wall_time_s if res.wall_time_s > 0 else float("inf")
    return (
        f"| {res.dataset} | {method} | {res.num_instances} | {res.mean_cost:.4f} | {gap} "
        f"| {per} | {res.wall_time_s:.1f} | {rate:.2f} |"
    )


def table(paths: list[Path]) -> str:
    """The markdown table over `paths`, sorted by dataset then mean cost."""
    results = sorted((read_results(p) for p in paths), key=lambda r: (r.dataset, r.mean_cost))
    return "\n".join([HEADER, *(row(r) for r in results)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, nargs="+", help="results JSON files")
    parser.add_argument("--out", type=Path, help="also write the table to this markdown file")
    args = parser.parse_args()
    text = table(args.results)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
