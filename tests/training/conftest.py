"""Shared fixtures: a tiny composed train config (TSP10, tiny BQ model, CPU) in a temp dir."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

CONFIGS = Path(__file__).resolve().parents[2] / "configs"

TINY = [
    "model=bq_tsp_tiny",
    "problem.num_nodes=10",
    "search.beam_width=4",
    "search.rounds=2",
    "training.instances_per_epoch=8",
    "training.batches_per_epoch=3",
    "training.batch_size=16",
    "training.val_instances=8",
    "training.val_batch_size=8",
    "training.val_gap=false",
    "training.progress=false",
    "distributed.chunk_size=4",
    "trainer.max_epochs=2",
    "trainer.accelerator=cpu",
    "trainer.enable_progress_bar=false",
    "trainer.enable_model_summary=false",
    "trainer.log_every_n_steps=1",
]


def compose_train(
    overrides: list[str], out_dir: Path | None = None, tiny: bool = True
) -> DictConfig:
    """The train config with the tiny overrides (if `tiny`), then `overrides`, writing under
    `out_dir`."""
    extra = [f"out_dir={out_dir}"] if out_dir is not None else ["out_dir=unused"]
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        return compose(config_name="train", overrides=(TINY if tiny else []) + extra + overrides)


@pytest.fixture
def tiny_cfg(tmp_path: Path) -> Callable[..., DictConfig]:
    """Factory: tiny config for a run in a fresh sub-folder of tmp_path."""
    counter = iter(range(1000))

    def make(*overrides: str) -> DictConfig:
        return compose_train(list(overrides), tmp_path / f"run{next(counter)}")

    return make
