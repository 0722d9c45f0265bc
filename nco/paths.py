"""Where nco finds its Hydra config tree and shipped data: absolute paths, so console scripts
work from any directory, in a source checkout (editable install) and in a wheel install.

A wheel carries copies of `configs/` and `data/{checkpoints,references,jssp}` inside the package
as `nco/configs` and `nco/data` (scripts/build_hooks.py); a source checkout has them beside the
packages. The packaged copy wins where it exists.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
SOURCE_ROOT = PACKAGE_DIR.parent  # the checkout when nco is imported from a source tree


def shipped(name: str) -> Path:
    """`nco/<name>` in a wheel install, else `<checkout>/<name>`."""
    packaged = PACKAGE_DIR / name
    return packaged if packaged.is_dir() else SOURCE_ROOT / name


CONFIG_DIR = shipped("configs")
DATA_DIR = shipped("data")  # checkpoints/, references/, jssp/ (read only: never write here)


def user_cache() -> Path:
    """Where nco keeps what it computes once and reuses (solver references, generated sets):
    `$NCO_CACHE_DIR`, default `~/.cache/nco`."""
    return Path(os.environ.get("NCO_CACHE_DIR") or Path.home() / ".cache" / "nco")


def generated_dir() -> Path:
    """Cache of generated named sets (`kool:tsp100_test`): `data/generated` in a source
    checkout, `user_cache()/generated` in a wheel install (never inside site-packages)."""
    if DATA_DIR == SOURCE_ROOT / "data":
        return DATA_DIR / "generated"
    return user_cache() / "generated"
