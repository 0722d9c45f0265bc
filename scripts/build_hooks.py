"""setuptools build hook (pyproject.toml `[tool.setuptools] cmdclass`): ship configs and data.

A wheel holds Python packages only; nco's Hydra config tree (`configs/`) and the small
artifacts its commands read (`data/checkpoints`, `data/references`, `data/jssp`) sit beside the
packages in the source tree. `BuildPy` copies them into the built `nco` package as `nco/configs`
and `nco/data`, where `nco.paths` finds them when no source tree is there. Editable installs
read the source tree directly and get no copies.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = {  # source folder (relative to the root) -> folder inside the built nco package
    "configs": "configs",
    "data/checkpoints": "data/checkpoints",
    "data/references": "data/references",
    "data/jssp": "data/jssp",
}


class BuildPy(build_py):
    """build_py that also copies the config tree and the shipped data into `nco/`."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        if not (ROOT / "configs" / "train.yaml").is_file():
            raise FileNotFoundError(
                f"{ROOT / 'configs'}: the Hydra config tree is missing; build from a git checkout "
                "or an sdist made with MANIFEST.in."
            )
        for source, target in SHIPPED.items():
            src = ROOT / source
            if not src.is_dir():
                continue
            dst = Path(self.build_lib) / "nco" / target
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
