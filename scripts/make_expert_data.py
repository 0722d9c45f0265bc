"""Expert data for the supervised (SL) baseline, resumable: now `nco-data expert`
(nco/cli/data.py over nco.expert_data); this file keeps its command lines working.

    python scripts/make_expert_data.py --problem tsp --size 20 --num 100000 --solver exact \\
        --out data/generated/expert/tsp20_exact.npz

is `nco-data expert <the same arguments>`.
"""

from __future__ import annotations

import sys

from nco.cli.data import main as data_main


def main(argv: list[str] | None = None) -> int:
    """`nco-data expert argv`; returns the exit status."""
    return data_main(["expert", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
