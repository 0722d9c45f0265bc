"""benchmarks/bench_train.py: a tiny case times steps in both precisions and records comparable
loss curves (same seeds, so the first step's loss agrees across precisions)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_train.py"


def test_tiny_case_times_steps_and_records_loss_curves(tmp_path: Path) -> None:
    out, curve = tmp_path / "train.json", tmp_path / "loss.png"
    args = ["--experiments", "tsp20_quick", "--batch-size", "8", "--steps", "3", "--warmup", "1"]
    args += ["--buffer", "16", "--threads", "1", "--precisions", "fp32", "bf16"]
    args += ["--out", str(out), "--curve", str(curve)]
    subprocess.run([sys.executable, str(SCRIPT), *args], check=True, timeout=300)
    result = json.loads(out.read_text())["experiments"]["tsp20_quick"]
    steps = result["steps"]
    assert set(steps) == {"fp32", "bf16"}
    for r in steps.values():
        assert r["step_s"] > 0 and r["samples_per_s"] > 0
        assert len(r["losses"]) == 4  # warm-up included
        assert all(loss > 0 for loss in r["losses"])
    # same initial weights and batch: bf16 autocast changes the first loss only by rounding
    first = steps["fp32"]["losses"][0]
    assert abs(steps["bf16"]["losses"][0] - first) < 0.02 * first
    assert result["bf16_speedup_step"] > 0
    assert set(result["final_loss"]) == {"fp32", "bf16"}
    assert curve.stat().st_size > 0
