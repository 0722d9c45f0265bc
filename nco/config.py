"""Plain configs: Hydra / OmegaConf nodes as the dicts that library functions take."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf


def to_dict(cfg: DictConfig | dict[str, Any], field: str) -> dict[str, Any]:
    """`cfg` resolved into a plain dict with string keys; ValueError naming `field` when it is
    not a mapping (e.g. `search=greedy` mistyped as a list)."""
    plain = OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else cfg
    if not isinstance(plain, dict) or not all(isinstance(k, str) for k in plain):
        raise ValueError(f"{field}: expected a mapping of named settings, got {plain!r}.")
    return {str(k): v for k, v in plain.items()}
