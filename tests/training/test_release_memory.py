"""nco-train gives the heap's free pages back between phases: after each epoch's sampling and
after each validation."""

from __future__ import annotations

from nco.training import callbacks
from nco.training.runner import run


def test_memory_released_after_sampling_and_validation(tiny_cfg, monkeypatch) -> None:
    events: list[str] = []
    original = callbacks.ReleaseMemory.on_train_epoch_start

    def release() -> bool:
        events.append("release")
        return True

    def epoch_start(self, trainer, pl_module) -> None:
        events.append(f"epoch {trainer.current_epoch} (buffer {len(trainer.datamodule.buffer)})")
        original(self, trainer, pl_module)

    monkeypatch.setattr(callbacks, "release_freed_memory", release)
    monkeypatch.setattr(callbacks.ReleaseMemory, "on_train_epoch_start", epoch_start)
    run(tiny_cfg())
    # each epoch starts with its sampled trajectories in the buffer, then releases; each of the
    # two validations (one per epoch) releases after it
    assert events[0].startswith("epoch 0 (buffer ") and not events[0].endswith("(buffer 0)")
    assert events == [events[0], "release", "release", events[3], "release", "release"]
    assert events[3].startswith("epoch 1 ")
