"""training.val_augment: validation scores greedy over symmetric copies, best kept, which is
what promotes; null keeps the paper's plain greedy."""

from __future__ import annotations

import copy

import pytest

from nco.decode import decode
from nco.training import SelfImprovementModule
from nco.training.runner import build


def test_validation_scores_the_augmented_greedy_decode(tiny_cfg) -> None:
    trainer, module, dm = build(tiny_cfg("training.val_augment=8", "trainer.max_epochs=1"))
    trainer.fit(module, datamodule=dm)
    val, policy = dm.val_instances, module.evaluated_policy
    augmented = decode(policy, module.env, val, {"method": "greedy", "augment": 8}).best()
    plain = decode(policy, module.env, val, {"method": "greedy"}).best()
    assert module.last_val["val/objective"] == pytest.approx(float(augmented.objective.mean()))
    # the best of 8 copies, the identity among them: never worse, and here better somewhere
    assert bool((augmented.objective >= plain.objective - 1e-5).all())
    assert float(augmented.objective.mean()) > float(plain.objective.mean()) + 1e-4


def test_plain_greedy_by_default(tiny_cfg) -> None:
    trainer, module, dm = build(tiny_cfg("trainer.max_epochs=1"))
    trainer.fit(module, datamodule=dm)
    plain = decode(module.evaluated_policy, module.env, dm.val_instances, {"method": "greedy"})
    assert module.last_val["val/objective"] == pytest.approx(float(plain.best().objective.mean()))


def test_bad_val_augment_is_refused(tiny_cfg) -> None:
    _, module, _ = build(tiny_cfg())
    with pytest.raises(ValueError, match=r"expected val_augment in 1\.\.8, got 0"):
        SelfImprovementModule(module.policy, module.env, val_augment=0)
    env = copy.copy(module.env)  # an env without symmetries is refused before any training
    env.num_augmentations = lambda: 1  # type: ignore[method-assign]
    with pytest.raises(ValueError, match="val_augment=8, but .* has 1 augmentations"):
        SelfImprovementModule(module.policy, env, val_augment=8)
