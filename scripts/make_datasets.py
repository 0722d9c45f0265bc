"""Regenerate the standard test sets as .npz files, bit for bit: now `nco-data generate`
(nco/cli/data.py over nco.datagen); this file keeps its command lines working.

    python scripts/make_datasets.py [--out data/generated] [--force] [--only kool:tsp100_test]
    python scripts/make_datasets.py --custom tsp 200 1000 7 --custom cvrp 50 500 11

is `nco-data generate <the same arguments>`.
"""

from __future__ import annotations

import sys

from nco.cli.data import main as data_main
from nco.datagen import CHECKSUMS, make_named

__all__ = ["CHECKSUMS", "main", "make"]

make = make_named  # the sets by name: make(names, out, force) -> status per set


def main(argv: list[str] | None = None) -> int:
    """`nco-data generate argv`; returns 1 if any set failed its checksum."""
    return data_main(["generate", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
