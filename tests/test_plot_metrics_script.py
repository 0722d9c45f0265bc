"""scripts/plot_metrics.py: one or several runs' per-epoch metrics as tables and one PNG."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "plot_metrics.py"


def write_metrics(path: Path, gaps: list[float]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = ["epoch,step,val/gap,train/loss_step"]
    for epoch, gap in enumerate(gaps):
        rows += [f"{epoch},{10 * epoch},,1.5", f"{epoch},{10 * epoch + 9},{gap},"]
    path.write_text("\n".join(rows) + "\n")
    return path


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
    )


def test_two_runs_in_one_plot(tmp_path: Path) -> None:
    fp32 = write_metrics(tmp_path / "fp32.csv", [8.0, 7.5])
    run_dir = tmp_path / "bf16_run"
    write_metrics(run_dir / "logs" / "metrics.csv", [8.1, 7.25])
    out = tmp_path / "cmp.png"
    result = run(str(fp32), str(run_dir), "--out", str(out))
    assert result.returncode == 0, result.stderr
    # a table per run, labelled by the CSV's stem and the folder's name, with its own values
    fp32_part, bf16_part = result.stdout.split("bf16_run")
    assert fp32_part.startswith("fp32") and "7.5000" in fp32_part and "7.2500" in bf16_part
    assert out.stat().st_size > 0


def test_missing_metric_names_the_file_and_columns(tmp_path: Path) -> None:
    csv = write_metrics(tmp_path / "run.csv", [8.0])
    result = run(str(csv), "--metrics", "val/cost", "--out", str(tmp_path / "x.png"))
    assert result.returncode != 0
    assert "run.csv" in result.stderr and "val/cost" in result.stderr


def test_from_epoch_leaves_out_earlier_epochs(tmp_path: Path) -> None:
    csv = write_metrics(tmp_path / "run.csv", [668.0, 12.5, 3.25])
    out = tmp_path / "late.png"
    result = run(str(csv), "--from-epoch", "1", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "668.0000" not in result.stdout
    assert "12.5000" in result.stdout and "3.2500" in result.stdout
    assert out.stat().st_size > 0
    beyond = run(str(csv), "--from-epoch", "3", "--out", str(tmp_path / "none.png"))
    assert beyond.returncode != 0 and "no epoch >= 3" in beyond.stderr
