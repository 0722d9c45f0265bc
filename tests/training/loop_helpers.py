"""A callback that forces improvement decisions and records the training loop, and a fit helper."""

from __future__ import annotations

import lightning as L
import torch
from omegaconf import DictConfig

from nco.training import SelfImprovementModule, TrajectoryDataModule
from nco.training.runner import build


class Recorder(L.Callback):
    """Forces the improvement decision per epoch (if given) and records what the loop did."""

    def __init__(self, improve: list[bool] | None = None) -> None:
        self.improve = improve
        self.epochs: list[int] = []
        self.buffer_sizes: list[int] = []
        self.best_equals_trained: list[bool] = []

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.epochs.append(trainer.current_epoch)
        self.buffer_sizes.append(len(trainer.datamodule.buffer))

    def on_validation_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self.improve is not None:
            forced = self.improve[trainer.current_epoch]
            pl_module.best_objective = -torch.inf if forced else torch.inf

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        same = same_weights(pl_module.policy, pl_module.best_policy, exact=True)
        self.best_equals_trained.append(same)


def same_weights(a: torch.nn.Module, b: torch.nn.Module, exact: bool = False) -> bool:
    """Whether two modules hold the same parameters (exactly, or up to float tolerance)."""
    sa, sb = a.state_dict(), b.state_dict()
    same = torch.equal if exact else torch.allclose
    return sa.keys() == sb.keys() and all(same(sa[k], sb[k]) for k in sa)


def fit(cfg: DictConfig, recorder: Recorder) -> tuple[SelfImprovementModule, TrajectoryDataModule]:
    """Build from `cfg`, attach `recorder`, fit (resuming from cfg.ckpt_path if set)."""
    trainer, module, datamodule = build(cfg)
    trainer.callbacks.append(recorder)
    trainer.fit(module, datamodule=datamodule, ckpt_path=cfg.get("ckpt_path"))
    return module, datamodule
