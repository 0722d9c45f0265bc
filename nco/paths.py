"""Where nco finds its Hydra config tree and shipped data: absolute paths, so console scripts
work from any directory, in a source checkout (editable install) and in a wheel install.

A wheel carries copies of `configs/` and `data/{checkpoints,references,jssp}` inside the package
as `nco/configs` and `nco/data` (scripts/build_hooks.py); a source checkout has them beside the
packages. The packaged copy wins where it exists.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
SOURCE_ROOT = PACKAGE_DIR.parent  # the checkout when nco is imported from a source tree


def shipped(name: str) -> Path:
    """`nco/<name>` in a wheel install, else `<checkout>/<name>`."""
    packaged = PACKAGE_DIR / name
    return packaged if packaged.is_dir() else SOURCE_ROOT / name


CONFIG_DIR = shipped("configs")
DATA_DIR = shipped("data")  # checkpoints/, references/, jssp/ (read only: never write here)
