"""scripts/jssp_buffer_probe.py on a tiny fake JSSP run: one arm per seed and rate, validations
along the steps and of moving averages, in the JSON it writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf

from nco import checkpoint
from nco.problems.jssp.dispatching import dispatch
from nco.training.buffer import TrajectoryBuffer
from nco.training.runner import build, initial_policy
from tests.fake_jssp_run import write_config, write_references
from tests.script_loader import SCRIPTS


def fake_run(run: Path) -> None:
    """A run folder as nco-train leaves it: config, cached references, best.pt, and a
    last.ckpt whose buffer holds FDD/MWKR schedules of three 4x3 instances."""
    cfg, val = write_config(run, 3, "model=jssp_transformer_tiny", "model.precision=fp32")
    write_references(run, np.full(3, 10.0))
    torch.manual_seed(0)
    model = OmegaConf.to_container(cfg.model)
    problem = OmegaConf.to_container(cfg.problem)
    checkpoint.save(run / "best.pt", instantiate(cfg.model), model, problem, {"epoch": 5})
    buffer = TrajectoryBuffer()
    buffer.add(val, dispatch(val, "fdd/mwkr"))
    (run / "checkpoints").mkdir()
    torch.save(
        {"TrajectoryDataModule": {"buffer": buffer.state_dict()}}, run / "checkpoints/last.ckpt"
    )


def test_arms_per_seed_with_steps_and_averages(tmp_path: Path) -> None:
    fake_run(tmp_path)
    out = tmp_path / "probe.json"
    cmd = [sys.executable, str(SCRIPTS / "jssp_buffer_probe.py"), "--run", str(tmp_path),
           "--lrs", "1e-3", "--seeds", "0", "1", "--steps", "3", "--eval-at", "1", "3",
           "--ema-decays", "0.5", "--batch-size", "8", "--skip-best",
           "--out", str(out)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(out.read_text())
    assert record["buffer_instances"] == 3 and record["best_epoch"] == 5
    assert "best_val_gap_percent" not in record  # --skip-best
    arms = record["arms"]
    assert [(a["seed"], a["lr"]) for a in arms] == [(0, 1e-3), (1, 1e-3)]
    for arm in arms:
        assert list(arm["val_gap_percent_at_step"]) == ["1"]  # the last step is the final value
        assert list(arm["ema_val_gap_percent"]) == ["0.5"]
        assert arm["val_gap_percent"] >= -100 and np.isfinite(arm["val_gap_percent"])
    printed = [json.loads(line) for line in proc.stdout.splitlines() if '"step"' in line]
    assert [(p["seed"], p["step"]) for p in printed] == [(0, 1), (1, 1)]


def test_untrained_init_is_the_policy_nco_train_starts_from(tmp_path: Path) -> None:
    """`--init untrained` trains copies of the weights nco-train's `build` gives the run
    (both come from `initial_policy`; the seed is drawn before the env and model are built)."""
    fake_run(tmp_path)
    cfg = OmegaConf.load(tmp_path / ".hydra" / "config.yaml")
    cfg.out_dir = str(tmp_path / "train")
    cfg.distributed.workers = 0
    _, module, _ = build(cfg)
    ours = initial_policy(cfg)[1].state_dict()
    theirs = module.policy.state_dict()
    assert ours.keys() == theirs.keys()
    assert all(torch.equal(ours[k], theirs[k]) for k in ours)
    cfg.seed = int(cfg.seed) + 1
    other = initial_policy(cfg)[1].state_dict()
    assert not all(torch.equal(ours[k], other[k]) for k in ours)  # the seed matters

    out = tmp_path / "probe.json"
    cmd = [sys.executable, str(SCRIPTS / "jssp_buffer_probe.py"), "--run", str(tmp_path),
           "--init", "untrained", "--lrs", "1e-3", "--steps", "2", "--batch-size", "8",
           "--out", str(out)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(out.read_text())
    assert record["init"] == "untrained" and "best_epoch" not in record
    assert np.isfinite(record["untrained_val_gap_percent"])
    assert [a["seed"] for a in record["arms"]] == [0]
