"""The LightningModule of self-improvement: trained policy, best policy, loss and validation."""

from __future__ import annotations

import copy
import time
from typing import Any

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from nco.decode import check_augment, decode
from nco.env import Batch, Env
from nco.policy import HasCache
from nco.training.data import first_epoch
from nco.training.trajectories import check_imitation, imitation_cross_entropy, trajectory_loss

GREEDY = {"method": "greedy"}


def imitation_loss(
    policy: nn.Module, env: Env, states: Batch, targets: torch.Tensor
) -> torch.Tensor:
    """Mean next-token cross-entropy of `policy` over the feasible actions of `states`: the
    loss of every sub-trajectory training step (also used by probes that train outside
    Lightning, so that they train exactly as nco-train does)."""
    logits = policy(states).float().masked_fill(~env.action_mask(states), float("-inf"))
    return imitation_cross_entropy(logits, targets)


class SelfImprovementModule(L.LightningModule):
    """Trains `policy` by next-token cross-entropy and keeps `best_policy`, a separate copy.

    After each validation (greedy rollouts on the fixed validation set), the trained policy
    replaces the best policy if its mean objective is higher; `best_version` then increments,
    which tells the DataModule to clear its buffer. The first validation also scores the
    initial best policy, so the comparison follows Algorithm 1 from the start.

    The env's `validation_metrics(objective) -> {name: value}` adds `val/<name>` metrics
    (Gomoku: wins, draws, losses). With `stop_objective` set, training stops after the first
    validation whose mean objective reaches it. `lr_decay` multiplies the learning rate after
    every epoch from epoch `lr_decay_from` on (the authors' code's per-epoch `decay_factor`; 1
    keeps it constant as the paper); the rate is set before every step from the epoch and step
    counters, so a run resumed from any checkpoint, one of a constant-rate run included, trains
    at the schedule's rate (a study can switch its arms to one decaying schedule mid-way).
    `warmup_steps` (0 in the paper) raises the learning rate linearly over the first optimizer
    steps, so that a fine-tune's fresh Adam moments do not start with full-size steps. Measured
    on a TSP20 -> TSP50 fine-tune, the gap's rise over the first epochs was the same with and
    without it (docs/reproduction.md), hence off by default.

    `ema_decay` (None in the paper and the authors' code) keeps an exponential moving average of
    the trained weights, updated after every optimizer step; validation then scores the average,
    and promotion copies it into the best policy (which samples and becomes best.pt). Measured
    on a CVRP20 fine-tune (0.999): epoch-to-epoch swings of the validation gap 2.4x smaller, mean
    level unchanged (docs/reproduction.md), hence off by default.

    `imitation="trajectories"` trains on batches of whole expert trajectories, teacher-forced
    with one encoding per instance (nco.training.trajectories; light-decoder policies).

    `restart_from_best` (off in the paper and the authors' code, which carry the trained weights
    and the optimizer on) starts every epoch's training from the best policy's weights with a
    fresh Adam. Measured on the JSSP CPU run (docs/jssp.md): after epoch 3 its carried-on policy
    never beat the epoch-3 best again (validation 14.4-19.1 % against 14.2 %), while 96 steps
    from the best weights with a fresh Adam on the same 42-instance imitation set reached 8.1 %;
    switched on from epoch 11, the run was promoted five epochs in a row (11.5 -> 2.63 %). True,
    or the first epoch that restarts (`restart_from_best=11` is that run's history).

    `val_augment` (None in the paper: plain greedy) validates by greedy rollouts of that many
    symmetric copies per instance, the best kept (nco-eval's `search.augment`), so that a run
    whose checkpoint will be decoded with augmentation is promoted by that decoder. Measured on
    BQ TSP50 (docs/light_models.md): of two checkpoints, the one with the better plain greedy
    validation (4.14 against 4.27 %, both scored on the CPU) was the worse with augment 8 on
    the test set (1.807 against 1.785 %); promoted with `val_augment=8`, a continuation of the
    second reached 1.668 % (`shipped:tsp50`).
    """

    def __init__(
        self,
        policy: nn.Module,
        env: Env,
        lr: float = 2e-4,
        stop_objective: float | None = None,
        lr_decay: float = 1.0,
        ema_decay: float | None = None,
        warmup_steps: int = 0,
        lr_decay_from: int = 0,
        imitation: str = "subtrajectories",
        restart_from_best: bool | int = False,
        val_augment: int | None = None,
    ) -> None:
        super().__init__()
        check_imitation(imitation, policy)
        self.imitation = imitation
        if lr <= 0:
            raise ValueError(f"training config: expected lr > 0, got {lr}.")
        if not 0 < lr_decay <= 1:
            raise ValueError(f"training config: expected 0 < lr_decay <= 1, got {lr_decay}.")
        if ema_decay is not None and not 0 < ema_decay < 1:
            raise ValueError(
                f"training config: expected 0 < ema_decay < 1 (or null), got {ema_decay}."
            )
        if warmup_steps < 0:
            raise ValueError(f"training config: expected warmup_steps >= 0, got {warmup_steps}.")
        if lr_decay_from < 0:
            raise ValueError(f"training config: expected lr_decay_from >= 0, got {lr_decay_from}.")
        if val_augment is not None:  # refused now, not after the first epoch's sampling
            check_augment(val_augment, env, "training", "val_augment")
        self.val_search = GREEDY if val_augment is None else {**GREEDY, "augment": val_augment}
        self.lr_decay = lr_decay
        self.lr_decay_from = lr_decay_from
        self.warmup_steps = warmup_steps
        self.restart_from = first_epoch("restart_from_best", restart_from_best)
        self.stop_objective = stop_objective
        self.policy = policy
        self.best_policy = copy.deepcopy(policy).requires_grad_(False)
        self.ema: AveragedModel | None = None
        if ema_decay is not None:
            average = get_ema_multi_avg_fn(ema_decay)
            self.ema = AveragedModel(policy, multi_avg_fn=average, use_buffers=True)
            self.ema.requires_grad_(False)
        self.env = env
        self.lr = lr
        self.best_objective: float | None = None
        self.best_version = 0
        self.best_epoch = -1
        self.improved = False
        self.last_val: dict[str, float] = {}
        self._val: dict[str, list[torch.Tensor]] = {}
        self._clock: dict[str, float] = {}

    @property
    def evaluated_policy(self) -> nn.Module:
        """The policy validation scores and promotion copies: the weight average when
        `ema_decay` is set, else the trained policy."""
        return self.policy if self.ema is None else self.ema.module

    def forward(self, state: Batch) -> torch.Tensor:
        """Logits of the trained policy."""
        return self.policy(state)

    def loss(self, states: Batch, targets: torch.Tensor) -> torch.Tensor:
        """Mean next-token cross-entropy over feasible actions (`imitation_loss`)."""
        return imitation_loss(self.policy, self.env, states, targets)

    def training_step(self, batch: tuple[Batch, torch.Tensor], batch_idx: int) -> torch.Tensor:
        """One optimizer step on a batch of sub-trajectory states and expert next actions, or
        (`imitation="trajectories"`) of instances and whole expert trajectories."""
        if self.imitation == "trajectories":
            policy = self.policy
            assert isinstance(policy, HasCache)  # check_imitation refused any other at build
            loss = trajectory_loss(policy, self.env, *batch)
        else:
            loss = self.loss(*batch)
        self.log("train/loss", loss, on_step=True, on_epoch=True, prog_bar=True)
        return loss

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        """Fold the step's weights into the moving average (with `ema_decay`)."""
        if self.ema is not None:
            self.ema.update_parameters(self.policy)

    def configure_optimizers(self) -> Any:
        """Adam on the trained policy only. The learning rate's schedule (warmup, decay) is no
        torch scheduler but set before each step (`on_train_batch_start`): a scheduler's state
        lives in the checkpoint, so a run resumed from a constant-rate checkpoint would restart
        its counters."""
        return torch.optim.Adam(self.policy.parameters(), lr=self.lr)

    def lr_factor(self, step: int, epoch: int) -> float:
        """The learning rate's factor at optimizer step `step` (counted from 0) of `epoch`:
        linear up to 1 over `warmup_steps`, times `lr_decay` per epoch completed since
        `lr_decay_from`."""
        warmup = min(1.0, (step + 1) / self.warmup_steps) if self.warmup_steps else 1.0
        return warmup * self.lr_decay ** max(0, epoch - self.lr_decay_from)

    @property
    def scheduled(self) -> bool:
        """Whether the learning rate follows a schedule (else Adam keeps `lr` throughout)."""
        return self.lr_decay != 1 or self.warmup_steps > 0

    def scheduled_lr(self) -> float:
        """The schedule's learning rate for the next optimizer step."""
        return self.lr * self.lr_factor(self.trainer.global_step, self.current_epoch)

    def on_train_batch_start(self, batch: Any, batch_idx: int) -> None:
        """Set the step's learning rate from the schedule."""
        if self.scheduled:
            lr = self.scheduled_lr()
            optimizer = self.optimizers()
            assert not isinstance(optimizer, list)  # configure_optimizers returns one
            for group in optimizer.param_groups:
                group["lr"] = lr

    def on_train_epoch_start(self) -> None:
        """Start the epoch's clock; with `restart_from_best`, reset the trained policy (and the
        moving average) to the best weights and drop Adam's moments and step counts."""
        if self.restart_from is not None and self.current_epoch >= self.restart_from:
            self.policy.load_state_dict(self.best_policy.state_dict())
            if self.ema is not None:
                self.ema.module.load_state_dict(self.best_policy.state_dict())
                self.ema.n_averaged.zero_()
            optimizer = self.optimizers()
            assert not isinstance(optimizer, list)  # configure_optimizers returns one
            optimizer.optimizer.state.clear()
        self._clock["train"] = time.perf_counter()
        if self.scheduled:  # the rate of the epoch's first step, logged as train/lr
            self._clock["lr"] = self.scheduled_lr()

    def on_validation_epoch_start(self) -> None:
        if "train" in self._clock and not self.trainer.sanity_checking:
            self._clock["train_s"] = time.perf_counter() - self._clock.pop("train")
        self._clock["val"] = time.perf_counter()
        self._val = {"objective": [], "reference": [], "initial": [], "index": []}

    def validation_step(
        self, batch: tuple[Batch, torch.Tensor, torch.Tensor], batch_idx: int
    ) -> None:
        """Greedy rollouts (of `val_augment` copies) of the evaluated (and, the first time, the
        initial best) policy on validation rows `index` (this rank's share under DDP)."""
        instances, refs, index = batch
        obj = decode(self.evaluated_policy, self.env, instances, self.val_search).best().objective
        self._val["objective"].append(obj.to(self.device))
        self._val["reference"].append(refs)
        self._val["index"].append(index)
        if self.best_objective is None:
            init = decode(self.best_policy, self.env, instances, self.val_search).best().objective
            self._val["initial"].append(init.to(self.device))

    def on_validation_epoch_end(self) -> None:
        """Log validation metrics and promote the evaluated policy if it improved."""
        if self.trainer.sanity_checking:
            return
        gathered = self._gathered()
        objective, refs = gathered["objective"], gathered["reference"]
        value = float(objective.mean())
        metrics = {"val/objective": value, "val/cost": float(self.env.cost(objective).mean())}
        known = bool((~torch.isnan(refs)).all())
        if known:
            metrics["val/gap"] = self._gap(objective, refs)
        extra = self.env.validation_metrics(objective)
        metrics.update({f"val/{k}": float(v) for k, v in extra.items()})
        if self.best_objective is None:
            initial = gathered["initial"]
            self.best_objective = float(initial.mean())
            if known:  # where a fine-tune started from
                metrics["val/initial_gap"] = self._gap(initial, refs)
        self.improved = value > self.best_objective
        if self.improved:
            self.best_policy.load_state_dict(self.evaluated_policy.state_dict())
            self.best_objective = value
            self.best_version += 1
            self.best_epoch = self.current_epoch
        metrics["val/best_objective"] = self.best_objective
        metrics["val/improved"] = float(self.improved)
        metrics["time/validation_s"] = time.perf_counter() - self._clock.pop("val")
        self.last_val = metrics
        self.log_dict(metrics)
        if self.stop_objective is not None and value >= self.stop_objective:
            self.trainer.should_stop = True

    def _gap(self, objective: torch.Tensor, refs: torch.Tensor) -> float:
        """Mean percent gap of the costs of `objective` to the reference costs."""
        cost = self.env.cost(objective)
        return float(((cost - refs) / refs).mean() * 100)

    def _gather(self, tensor: torch.Tensor) -> torch.Tensor:
        """`all_gather` of one tensor: (world, *shape)."""
        gathered = self.all_gather(tensor)
        assert isinstance(gathered, torch.Tensor)  # a tensor in, a tensor out
        return gathered

    def on_train_epoch_end(self) -> None:
        """Log the DataModule's sampling statistics, the epoch's wall times and (decaying runs)
        learning rate."""
        datamodule = getattr(self.trainer, "datamodule", None)  # absent from Trainer's stubs
        stats = dict(getattr(datamodule, "epoch_stats", {}))
        if "train_s" in self._clock:
            stats["time/training_s"] = self._clock.pop("train_s")
        if "lr" in self._clock:  # the learning rate this epoch trained with (decaying runs)
            stats["train/lr"] = self._clock.pop("lr")
        if stats:
            self.log_dict(stats)

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Store the best policy's bookkeeping (its weights are part of the state dict)."""
        checkpoint["nco"] = {
            "best_objective": self.best_objective,
            "best_version": self.best_version,
            "best_epoch": self.best_epoch,
        }

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Restore what `on_save_checkpoint` stored. A run resumed with `ema_decay` newly set
        starts its average at the resumed weights; one resumed without it drops the average."""
        weights = checkpoint["state_dict"]
        saved = [k for k in weights if k.startswith("ema.")]
        if self.ema is None:
            for key in saved:
                del weights[key]
        elif not saved:
            for key, value in list(weights.items()):
                if key.startswith("policy."):
                    weights["ema.module." + key.removeprefix("policy.")] = value.clone()
            weights["ema.n_averaged"] = torch.zeros((), dtype=torch.long)
        state = checkpoint["nco"]
        self.best_objective = state["best_objective"]
        self.best_version = int(state["best_version"])
        self.best_epoch = int(state["best_epoch"])

    def _gathered(self) -> dict[str, torch.Tensor]:
        """The validation values of every step, and under DDP of every rank, in validation-set
        row order (float64, CPU). Every rank gets the same tensors, so the metrics and the
        promotion decision computed from them are the same on every rank, and equal to a single
        process's for the same weights."""
        keys = [k for k in ("objective", "reference", "initial") if self._val[k]]
        index = torch.cat([i.to(self.device) for i in self._val["index"]])
        values = torch.stack(
            [torch.cat([v.to(self.device, torch.float64) for v in self._val[k]]) for k in keys]
        )
        if self.trainer.world_size > 1:  # pad the ranks' shares to one length, gather, unpad
            size = int(self._gather(torch.tensor(index.numel(), device=self.device)).max())
            pad = size - index.numel()
            index = F.pad(index, (0, pad), value=-1)
            values = F.pad(values, (0, pad), value=float("nan"))
            index = self._gather(index).flatten()
            values = self._gather(values).transpose(0, 1).flatten(1)
            keep = index >= 0
            index, values = index[keep], values[:, keep]
        order = index.argsort().cpu()
        return {k: values[j].cpu()[order] for j, k in enumerate(keys)}
