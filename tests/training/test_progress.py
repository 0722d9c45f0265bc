"""Progress output: one-line summaries when stderr is not a terminal, none when disabled."""

from __future__ import annotations

import pytest

from nco.training.progress import LineProgress
from nco.training.runner import build, run


def test_log_file_gets_summary_lines_not_bar_redraws(tiny_cfg, capsys) -> None:
    """Under pytest stderr is not a terminal: the trainer uses LineProgress, which prints a
    step line per interval and one line per validated epoch with its metrics."""
    cfg = tiny_cfg("trainer.enable_progress_bar=true", "training.progress_interval_s=1e-9")
    trainer, _, _ = build(cfg)
    assert isinstance(trainer.progress_bar_callback, LineProgress)
    run(cfg)
    err = capsys.readouterr().err
    done = [line for line in err.splitlines() if " done: " in line]
    assert [line.split()[1] for line in done] == ["0", "1"]
    assert all("val/objective" in line for line in done)
    assert "epoch 0 step 1/3 train/loss" in err
    assert "\r" not in err  # no bar redraws


def test_disabled_progress_prints_nothing(tiny_cfg, capsys) -> None:
    """With trainer.enable_progress_bar=false there is no progress callback at all."""
    trainer, _, _ = build(tiny_cfg())
    assert trainer.progress_bar_callback is None
    assert "done:" not in capsys.readouterr().err


def test_interval_must_be_positive() -> None:
    """A zero or negative interval is refused."""
    with pytest.raises(ValueError, match="interval_s > 0"):
        LineProgress(0)


def test_progress_bars_stay_out_of_log_files(capsys) -> None:
    """nco.progress bars are silent when stderr is not a terminal (here: captured), even when
    enabled, so log files get no redraw lines; disabled bars are always silent."""
    from nco.progress import progress_bar

    for enabled in (True, False):
        bar = progress_bar(range(3), enabled, desc="x")
        assert bar.disable
        assert list(bar) == [0, 1, 2]
    assert "\r" not in capsys.readouterr().err
