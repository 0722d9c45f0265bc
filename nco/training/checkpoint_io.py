"""Lightning checkpoint I/O that replaces `last.ckpt` atomically, even across filesystems."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch.plugins.io import TorchCheckpointIO


class AtomicCheckpointIO(TorchCheckpointIO):
    """Writes each checkpoint to a temporary file beside its target, syncs it, then renames it
    into place, so a run killed during the write keeps the previous checkpoint intact; reads
    every checkpoint onto the CPU.

    Lightning's own writer stages the file in the system temp folder and moves it, which is a
    copy, not an atomic rename, wherever /tmp is another filesystem (tmpfs on most clusters).
    Its reader keeps tensors on the device that saved them, so a run begun on a GPU could not
    continue on a machine without one; Lightning moves the restored states to the training
    device itself.
    """

    def load_checkpoint(
        self,
        path: str | os.PathLike,
        map_location: Any = "cpu",
        weights_only: bool | None = None,
    ) -> dict[str, Any]:
        return super().load_checkpoint(
            Path(path), map_location=map_location, weights_only=weights_only
        )

    def save_checkpoint(
        self, checkpoint: dict[str, Any], path: str | os.PathLike, storage_options: Any = None
    ) -> None:
        if storage_options is not None:
            raise TypeError("AtomicCheckpointIO.save_checkpoint takes no storage_options.")
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                torch.save(checkpoint, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
