"""scripts/sampler_vs_greedy.py regenerates the instances an SI run sampled in an epoch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.script_loader import SCRIPTS

TINY = ["model=bq_tsp_tiny", "problem.num_nodes=10", "search=greedy", "training.lr=1e-12",
        "training.instances_per_epoch=8", "training.batches_per_epoch=2", "training.batch_size=16",
        "training.val_instances=8", "training.val_batch_size=8", "training.val_gap=false",
        "training.progress=false", "trainer.max_epochs=2", "trainer.accelerator=cpu",
        "trainer.enable_progress_bar=false", "distributed.chunk_size=8"]  # fmt: skip


def test_greedy_on_the_regenerated_instances_is_the_logged_greedy_sample(tmp_path: Path) -> None:
    """A run that samples greedily and all but never changes its weights (lr 1e-12): the
    script's greedy cost on epoch e's regenerated instances is the run's logged sample/cost."""
    run = tmp_path / "run"
    train = [sys.executable, "-m", "nco.cli.train", *TINY, f"hydra.run.dir={run}"]
    subprocess.run(train, cwd=tmp_path, capture_output=True, text=True, check=True)
    out = tmp_path / "probe.json"
    cmd = [sys.executable, str(SCRIPTS / "sampler_vs_greedy.py"), "--run", str(run), "--checkpoint",
           str(run / "best.pt"), "--epochs", "0", "1", "--out", str(out)]  # fmt: skip
    subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, check=True)
    rows = json.loads(out.read_text())["epochs"]
    for row in rows:
        assert abs(row["greedy"]["mean_cost"] - row["logged_sample_cost"]) < 1e-4
        assert len(row["greedy"]["costs"]) == 8
    assert rows[0]["greedy"]["costs"] != rows[1]["greedy"]["costs"]  # new instances per epoch
