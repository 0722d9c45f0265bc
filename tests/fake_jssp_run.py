"""A JSSP run folder as nco-train leaves it (config and cached validation references), tiny, for
the tests of the scripts that read one (scripts/jssp_buffer_probe.py, scripts/jssp_val_rules.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from nco.paths import CONFIG_DIR
from nco.problems.jssp.types import JSSPInstances
from nco.training.runner import validation_set


def write_config(
    run: Path, val_instances: int, *overrides: str
) -> tuple[DictConfig, JSSPInstances]:
    """Save `experiment=jssp_cpu` with `val_instances` 4x3 validation instances (and
    `overrides`) as the run's `.hydra/config.yaml`; returns the config and those instances."""
    extra = [f"training.val_instances={val_instances}", "training.val_env.sizes=[[4,3]]"]
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose(config_name="train", overrides=["experiment=jssp_cpu", *extra, *overrides])
    (run / ".hydra").mkdir(parents=True, exist_ok=True)
    OmegaConf.save(cfg, run / ".hydra" / "config.yaml")
    cfg.training.val_gap = False  # the instances alone, without solving references
    instances, _ = validation_set(cfg, instantiate(cfg.problem.env))
    return cfg, instances


def write_references(run: Path, costs: np.ndarray) -> None:
    """The run's cached validation references (one file, as nco-train caches them)."""
    (run / "cache" / "references").mkdir(parents=True, exist_ok=True)
    np.savez(run / "cache" / "references" / "r.npz", costs=costs)
