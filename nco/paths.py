"""Where nco finds its Hydra config tree: an absolute path, so console scripts work anywhere."""

from __future__ import annotations

from pathlib import Path

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"
