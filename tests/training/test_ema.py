"""training.ema_decay: a moving average of the trained weights is what validation scores,
promotion copies, best.pt holds and a resumed run continues."""

from __future__ import annotations

from pathlib import Path

import lightning as L
import pytest
import torch
from loop_helpers import Recorder, fit, same_weights

from nco import checkpoint
from nco.decode import decode
from nco.training.runner import build


class StepWeights(L.Callback):
    """Records the trained policy's parameters after every optimizer step."""

    def __init__(self) -> None:
        self.after_step: list[dict[str, torch.Tensor]] = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        params = {k: v.detach().clone() for k, v in pl_module.policy.named_parameters()}
        self.after_step.append(params)


def test_average_follows_every_step_and_is_what_validation_promotes(tiny_cfg) -> None:
    """decay 0.6: the average starts at the first step's weights, then mixes 0.6 old + 0.4 new
    per step; validation scores it and the promoted best policy and best.pt are the average."""
    cfg = tiny_cfg("training.ema_decay=0.6", "trainer.max_epochs=1")
    trainer, module, dm = build(cfg)
    steps = StepWeights()
    trainer.callbacks.insert(0, steps)  # before the module's own hook reads the weights
    trainer.fit(module, datamodule=dm)
    assert len(steps.after_step) == 3
    expected = steps.after_step[0]
    for later in steps.after_step[1:]:
        expected = {k: 0.6 * expected[k] + 0.4 * later[k] for k in expected}
    average = dict(module.ema.module.named_parameters())
    for k, v in expected.items():
        assert torch.allclose(average[k], v, atol=1e-6), k
    trained = dict(module.policy.named_parameters())
    assert any(not torch.allclose(average[k], trained[k]) for k in trained)
    val = dm.val_instances
    greedy = decode(module.ema.module, module.env, val, {"method": "greedy"}).best().objective
    assert module.last_val["val/objective"] == pytest.approx(float(greedy.mean()), rel=1e-6)
    if module.improved:  # promotion copies the average, never the raw trained weights
        assert same_weights(module.best_policy, module.ema.module, exact=True)
        saved = checkpoint.load(Path(cfg.out_dir) / "best.pt").policy
        assert same_weights(saved, module.ema.module, exact=True)


def test_forced_promotion_copies_the_average(tiny_cfg) -> None:
    module, _ = fit(tiny_cfg("training.ema_decay=0.9", "trainer.max_epochs=1"), Recorder([True]))
    assert same_weights(module.best_policy, module.ema.module, exact=True)
    assert not same_weights(module.best_policy, module.policy)


def test_resume_continues_the_average(tiny_cfg) -> None:
    """1 epoch + resume to 2 equals 2 straight epochs, moving average included."""
    full, _ = fit(tiny_cfg("training.ema_decay=0.7"), Recorder())
    first_cfg = tiny_cfg("training.ema_decay=0.7", "trainer.max_epochs=1")
    fit(first_cfg, Recorder())
    last = Path(first_cfg.out_dir) / "checkpoints" / "last.ckpt"
    resumed, _ = fit(tiny_cfg("training.ema_decay=0.7", f"ckpt_path={last}"), Recorder())
    assert same_weights(resumed.ema.module, full.ema.module)
    assert same_weights(resumed.best_policy, full.best_policy)
    assert same_weights(resumed.policy, full.policy)


def test_switching_the_average_on_or_off_when_resuming(tiny_cfg) -> None:
    """A run resumed with ema_decay newly set averages from the resumed weights on (its first
    step's weights after the resume); one resumed without it loads and drops the average."""
    plain = tiny_cfg("trainer.max_epochs=1")
    fit(plain, Recorder())
    last = Path(plain.out_dir) / "checkpoints" / "last.ckpt"
    cfg = tiny_cfg("training.ema_decay=0.5", f"ckpt_path={last}", "training.batches_per_epoch=1")
    trainer, module, dm = build(cfg)
    steps = StepWeights()
    trainer.callbacks.insert(0, steps)
    trainer.fit(module, datamodule=dm, ckpt_path=str(last))
    assert len(steps.after_step) == 1
    average = dict(module.ema.module.named_parameters())
    assert all(torch.equal(average[k], v) for k, v in steps.after_step[0].items())
    averaged = tiny_cfg("training.ema_decay=0.5", "trainer.max_epochs=1")
    fit(averaged, Recorder())
    again = Path(averaged.out_dir) / "checkpoints" / "last.ckpt"
    resumed, _ = fit(tiny_cfg(f"ckpt_path={again}"), Recorder())
    assert resumed.ema is None and resumed.current_epoch == 2


def test_without_the_option_there_is_no_average(tiny_cfg) -> None:
    _, module, _ = build(tiny_cfg())
    assert module.ema is None and module.evaluated_policy is module.policy


@pytest.mark.parametrize("decay", ["0", "1", "1.5"])
def test_decay_outside_zero_to_one_is_refused(tiny_cfg, decay: str) -> None:
    with pytest.raises(ValueError, match="ema_decay"):
        build(tiny_cfg(f"training.ema_decay={decay}"))
