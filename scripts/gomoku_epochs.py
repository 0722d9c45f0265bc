"""Gomoku (paper C.4): epochs until the greedy white policy beats the bot from every opening;
now `nco-study epochs --study gomoku` (nco/study/epochs.py, variants in
configs/study/gomoku.yaml). This file keeps the command lines of docs/gomoku.md working, with
this checkout as the root.

    python scripts/gomoku_epochs.py --variants gd_mean wr gd --seeds 0 1 2 --parallel 2
    python scripts/gomoku_epochs.py --report --max-epochs 100

is `nco-study --root <this checkout> epochs --study gomoku <the same arguments>`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from nco.cli.study import main

REPO = Path(__file__).resolve().parents[1]

if __name__ == "__main__":
    main(["--root", str(REPO), "epochs", "--study", "gomoku", *sys.argv[1:]])
