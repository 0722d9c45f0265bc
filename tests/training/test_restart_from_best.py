"""training.restart_from_best: every epoch trains from the best weights with a fresh Adam."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from loop_helpers import Recorder, fit, same_weights


class FirstStep(Recorder):
    """Forces the promotions (`Recorder`) and records, before each epoch's first optimizer step,
    whether the trained policy holds the best policy's weights and for how many parameters Adam
    holds moments."""

    def __init__(self, improve: list[bool]) -> None:
        super().__init__(improve)
        self.trained_is_best: list[bool] = []
        self.adam_states: list[int] = []
        self.average_is_best: list[bool] = []

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if batch_idx == 0:
            same = same_weights(pl_module.policy, pl_module.best_policy, exact=True)
            self.trained_is_best.append(same)
            self.adam_states.append(len(trainer.optimizers[0].state))
            if pl_module.ema is not None:
                average = pl_module.ema.module
                self.average_is_best.append(same_weights(average, pl_module.best_policy, True))


def run(tiny_cfg, *overrides: str, improve: list[bool]) -> tuple[FirstStep, torch.nn.Module]:
    """Fit 3 epochs with forced promotions; the recorder and the module."""
    first = FirstStep(improve)
    module, _ = fit(tiny_cfg("trainer.max_epochs=3", *overrides), first)
    return first, module


def test_each_epoch_starts_from_the_best_weights_with_fresh_adam(tiny_cfg) -> None:
    """No epoch promotes: with the option every epoch trains from the initial weights with an
    empty Adam state; without it the second and third epochs carry weights and moments on."""
    restarted, module = run(tiny_cfg, "training.restart_from_best=true", improve=[False] * 3)
    assert restarted.trained_is_best == [True, True, True]
    assert restarted.adam_states == [0, 0, 0]
    assert not same_weights(module.policy, module.best_policy)  # the last epoch did train
    carried, _ = run(tiny_cfg, improve=[False] * 3)
    assert carried.trained_is_best == [True, False, False]
    assert carried.adam_states[0] == 0 and min(carried.adam_states[1:]) > 0


def test_a_promotion_becomes_the_next_epochs_start(tiny_cfg) -> None:
    """Epoch 0 promotes, epoch 1 does not: epochs 1 and 2 both start from epoch 0's weights."""
    flag = "training.restart_from_best=true"
    restarted, _ = run(tiny_cfg, flag, improve=[True, False, False])
    assert restarted.trained_is_best == [True, True, True]
    assert restarted.adam_states == [0, 0, 0]


def test_the_moving_average_restarts_too(tiny_cfg) -> None:
    """With ema_decay, the average is reset to the best weights at every epoch's start."""
    flag = "training.restart_from_best=true"
    restarted, _ = run(tiny_cfg, flag, "training.ema_decay=0.5", improve=[False, True, False])
    assert restarted.trained_is_best == [True, True, True]
    assert restarted.average_is_best == [True, True, True]


def test_resume_with_restart_equals_a_straight_run(tiny_cfg) -> None:
    """1 epoch + resume to 2 equals 2 straight epochs: the resumed Adam state is dropped, as a
    straight run drops it at the epoch boundary."""
    flag = "training.restart_from_best=true"
    full, _ = fit(tiny_cfg(flag), Recorder([False, False]))
    first_cfg = tiny_cfg(flag, "trainer.max_epochs=1")
    fit(first_cfg, Recorder([False]))
    last = Path(first_cfg.out_dir) / "checkpoints" / "last.ckpt"
    resumed, _ = fit(tiny_cfg(flag, f"ckpt_path={last}"), Recorder([False, False]))
    assert same_weights(resumed.policy, full.policy)
    assert same_weights(resumed.best_policy, full.best_policy)


def test_from_an_epoch_carries_on_before_it_and_restarts_after(tiny_cfg) -> None:
    """`restart_from_best=2` (a recipe switched mid-run): epoch 1 carries epoch 0's weights and
    moments on, as without the option; epoch 2 restarts from the best with a fresh Adam."""
    switched, _ = run(tiny_cfg, "training.restart_from_best=2", improve=[False] * 3)
    assert switched.trained_is_best == [True, False, True]
    assert switched.adam_states[0] == 0 and switched.adam_states[1] > 0
    assert switched.adam_states[2] == 0


@pytest.mark.parametrize("value", ["-1", "1.5", "yes"])
def test_a_bad_first_epoch_is_refused(tiny_cfg, value) -> None:
    with pytest.raises(ValueError, match="restart_from_best to be true, false or a first epoch"):
        run(tiny_cfg, f"training.restart_from_best={value}", improve=[False])
