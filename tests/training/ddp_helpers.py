"""A callback that records, per DDP rank and epoch, what must agree across ranks.

`nco-train` builds it from the command line (+callbacks.probe._target_=ddp_helpers.RankProbe),
so the test session puts this folder on PYTHONPATH.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import lightning as L
import torch


def digest(tensors: list[torch.Tensor]) -> str:
    """A hash of the tensors' exact bytes, in order."""
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


class RankProbe(L.Callback):
    """After each validated epoch, appends one JSON line per rank to `<folder>/rank<r>.jsonl`:
    hashes of the trained and best weights and of the buffer, the promotion decision and the
    best-policy bookkeeping."""

    def __init__(self, folder: str) -> None:
        self.folder = Path(folder)

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        buffer = trainer.datamodule.buffer
        rows = [t for inst, acts in buffer.groups for t in (*dict(inst._items()).values(), acts)]
        record = {
            "epoch": trainer.current_epoch,
            "world": trainer.world_size,
            "policy": digest(list(pl_module.policy.state_dict().values())),
            "best": digest(list(pl_module.best_policy.state_dict().values())),
            "buffer": digest(rows),
            "improved": bool(pl_module.improved),
            "best_version": pl_module.best_version,
            "best_objective": pl_module.best_objective,
            "val_objective": pl_module.last_val.get("val/objective"),
        }
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / f"rank{trainer.global_rank}.jsonl", "a") as f:
            f.write(json.dumps(record) + "\n")
