"""nco.runs: a run folder's metrics per epoch, epochs done, checkpoints and status."""

from __future__ import annotations

from pathlib import Path

import pytest

from nco.runs import Run, read_metrics_file


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def lightning_log(folder: Path) -> Run:
    """A run as nco-train logs it: step rows, then per epoch a validation row and a timing row
    (epoch 1 validated twice: the last value counts)."""
    write(
        folder / "logs" / "metrics.csv",
        "epoch,step,train/loss_step,val/objective,val/gap,time/sampling_s,time/training_s\n"
        "0,9,1.5,,,,\n"
        "0,10,,-4.0,5.0,,\n"
        "0,10,,,,30,60\n"
        "1,20,,-3.9,3.0,,\n"
        "1,20,,-3.8,2.5,,\n"
        "1,20,,,,20,40\n"
        "2,30,1.2,,,,\n",
    )
    return Run(folder)


def test_metrics_per_epoch_and_epochs_done(tmp_path: Path) -> None:
    """Each metric's last value per epoch; epochs done counts validated epochs only; timers sum
    per epoch; the best epoch has the lowest value."""
    run = lightning_log(tmp_path / "run")
    assert run.metric("val/gap") == {0: 5.0, 1: 2.5}
    assert run.metrics(["train/loss_step", "val/cost"]) == {
        "train/loss_step": {0: 1.5, 2: 1.2},
        "val/cost": {},
    }
    assert run.epochs_done() == 2  # epoch 2 has not validated yet
    assert run.wall_seconds(("time/sampling_s", "time/training_s")) == {0: 90.0, 1: 60.0}
    assert run.best_epoch("val/gap") == 1 and run.best_epoch("val/cost") is None
    assert len(run.rows()) == 7 and run.rows()[0] == {"epoch": 0, "step": 9, "train/loss_step": 1.5}


def test_status_follows_epochs_and_last_checkpoint(tmp_path: Path) -> None:
    """new before any validated epoch; resumable with last.ckpt; closed without it (a committed
    run, which a rerun would start over); finished at max_epochs either way."""
    run = Run(tmp_path / "run")
    assert (run.status(), run.epochs_done(), run.rows()) == ("new", 0, [])
    lightning_log(run.folder)
    assert run.status() == "closed" and run.status(max_epochs=2) == "finished"
    write(run.last_file, "ckpt")
    assert run.status() == "resumable" and run.status(max_epochs=3) == "resumable"
    assert run.best_file == run.folder / "best.pt"
    assert run.last_file == run.folder / "checkpoints" / "last.ckpt"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("step,val/gap\n1,2.0\n", r"expected an 'epoch' column"),
        ("epoch,val/gap\n0,high\n", r"metrics.csv:2: expected numbers"),
    ],
)
def test_bad_metrics_files_are_refused_with_the_file_named(
    tmp_path: Path, text: str, message: str
) -> None:
    """A CSV without an epoch column or with a non-number names the file (and line)."""
    write(tmp_path / "logs" / "metrics.csv", text)
    with pytest.raises(ValueError, match=message):
        Run(tmp_path).rows()
    with pytest.raises(ValueError, match="no such metrics file"):
        read_metrics_file(tmp_path / "nothing.csv")
