"""A real `nco-train` killed with SIGKILL mid-run continues where it stopped when rerun."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import torch
from conftest import TINY

from nco.training.checkpoint_io import AtomicCheckpointIO
from nco.training.loggers import ResumableCSVLogger

EPOCHS = 8


def validated_epochs(metrics: Path) -> list[int]:
    """Epochs with a validation row in a metrics.csv (empty while the file is absent)."""
    if not metrics.is_file():
        return []
    with open(metrics, newline="") as f:
        return [int(r["epoch"]) for r in csv.DictReader(f) if r.get("val/objective")]


def val_rows(metrics: Path) -> dict[int, str]:
    """Validation objective per epoch as written (exact strings)."""
    with open(metrics, newline="") as f:
        return {
            int(r["epoch"]): r["val/objective"] for r in csv.DictReader(f) if r["val/objective"]
        }


def test_sigkilled_run_resumes_at_the_next_epoch_with_its_metrics(tmp_path: Path) -> None:
    """Kill the installed console script after two validated epochs; the same command continues
    from last.ckpt at the next epoch, and metrics.csv keeps the earlier rows, each epoch once."""
    exe = Path(sys.executable).parent / "nco-train"
    run_dir = tmp_path / "run"
    args = [
        str(exe),
        *[a for a in TINY if not a.startswith(("trainer.max_epochs", "training.batches_"))],
        f"trainer.max_epochs={EPOCHS}",
        "training.batches_per_epoch=40",
        f"hydra.run.dir={run_dir}",
    ]
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    metrics = run_dir / "logs" / "metrics.csv"
    proc = subprocess.Popen(
        args, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 240
    while len(validated_epochs(metrics)) < 2 and proc.poll() is None:
        assert time.monotonic() < deadline, "nco-train validated no two epochs in 240 s"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL, "the run ended before it could be killed"
    before = val_rows(metrics)
    last = run_dir / "checkpoints" / "last.ckpt"
    saved_epoch = int(torch.load(last, map_location="cpu", weights_only=False)["epoch"])
    assert 0 <= saved_epoch < EPOCHS - 1

    again = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"resuming from {last}" in again.stderr
    assert validated_epochs(metrics) == list(range(EPOCHS))  # every epoch once, in order
    after = val_rows(metrics)
    for epoch in range(saved_epoch + 1):  # checkpointed epochs keep their rows untouched
        assert after[epoch] == before[epoch]
    assert (run_dir / "best.pt").is_file()


def test_atomic_checkpoint_write_keeps_the_old_file_when_interrupted(tmp_path: Path) -> None:
    """A write that dies half-way leaves the previous checkpoint readable and no stray file."""
    path = tmp_path / "last.ckpt"
    io = AtomicCheckpointIO()
    io.save_checkpoint({"epoch": 1, "w": torch.ones(3)}, path)

    class Boom(Exception):
        pass

    class Exploding:
        def __reduce__(self):  # pickled mid-write, after part of the file went out
            raise Boom

    try:
        io.save_checkpoint({"epoch": 2, "w": torch.zeros(1000), "x": Exploding()}, path)
    except Boom:
        pass
    assert torch.load(path, weights_only=True)["epoch"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]


def test_csv_logger_appends_and_drops_unfinished_epochs(tmp_path: Path) -> None:
    """A second logger in the same folder keeps the file; drop_from_epoch removes later rows."""
    first = ResumableCSVLogger(tmp_path, name="logs", version="")
    for epoch in range(3):
        first.log_metrics({"epoch": epoch, "a": epoch * 1.0}, step=epoch)
    first.save()
    second = ResumableCSVLogger(tmp_path, name="logs", version="")
    assert second.drop_from_epoch(2) == 1
    second.log_metrics({"epoch": 2, "a": 20.0, "b": 1.0}, step=2)  # a new column too
    second.save()
    with open(tmp_path / "logs" / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["epoch"], r["a"], r["b"]) for r in rows] == [
        ("0", "0.0", ""),
        ("1", "1.0", ""),
        ("2", "20.0", "1.0"),
    ]


def test_checkpoints_are_read_onto_the_cpu(tmp_path: Path, monkeypatch) -> None:
    """Resuming reads last.ckpt with map_location 'cpu' (a GPU run continues on a CPU-only
    machine; Lightning moves the states to the training device)."""
    from lightning.fabric.plugins.io import torch_io

    seen = []
    real = torch_io.pl_load

    def spy(path, map_location=None, weights_only=None):
        seen.append(map_location)
        return real(path, map_location=map_location, weights_only=weights_only)

    monkeypatch.setattr(torch_io, "pl_load", spy)
    io = AtomicCheckpointIO()
    io.save_checkpoint({"epoch": 3, "w": torch.ones(2)}, tmp_path / "last.ckpt")
    assert io.load_checkpoint(tmp_path / "last.ckpt")["epoch"] == 3
    assert seen == ["cpu"]
