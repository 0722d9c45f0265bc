"""The CPU-scale reproduction of the paper's Table 1 claim (SL vs SI WR / WOR / GD): now
`nco-study` (nco/cli/study.py, studies in configs/study/*.yaml); this file keeps the command
lines of docs/reproduction.md and of running studies working, with this checkout as the root.

    python scripts/reproduction.py run --study tsp20 --seeds 0 1 --turn-epochs 5
    python scripts/reproduction.py evaluate --study tsp50 --decoders beam16 --chunk 1000
    python scripts/reproduction.py report --study tsp20

is `nco-study --root <this checkout> <the same arguments>`; `nco-study --help` lists them.
"""

from __future__ import annotations

import sys
from pathlib import Path

from nco.cli.study import main

REPO = Path(__file__).resolve().parents[1]

if __name__ == "__main__":
    main(["--root", str(REPO), *sys.argv[1:]])
