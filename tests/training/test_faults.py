"""Faults during training: SIGTERM while sampling and while training (fast, in-process), and
SIGTERM to the real `nco-train` console script (slow)."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import lightning as L
import pytest
from conftest import TINY

import nco.distributed.local as local
from nco.training.runner import Preempted, run

EPOCHS = 3


def val_rows(run_dir: Path) -> dict[int, str]:
    """Validation objective per epoch as metrics.csv holds it; each epoch at most once."""
    with open(run_dir / "logs" / "metrics.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("val/objective")]
    assert len({r["epoch"] for r in rows}) == len(rows), "an epoch was logged twice"
    return {int(r["epoch"]): r["val/objective"] for r in rows}


def test_sigterm_while_sampling_stops_at_once_and_the_rerun_equals_a_straight_run(
    tiny_cfg, monkeypatch
) -> None:
    """SIGTERM arriving in epoch 1's sampling stops it within the chunk (no further chunk is
    sampled), raises Preempted naming the phase and last.ckpt, and the same config resumes to
    exactly the validation results of a run never interrupted."""
    straight = tiny_cfg(f"trainer.max_epochs={EPOCHS}", "training.instances_per_epoch=16")
    run(straight)
    cfg = tiny_cfg(f"trainer.max_epochs={EPOCHS}", "training.instances_per_epoch=16")
    before = signal.getsignal(signal.SIGTERM)
    real, calls = local.sample_chunk, []

    def chunk_then_sigterm(*args, **kwargs):
        calls.append(1)
        if len(calls) == 6:  # epoch 1 (4 chunks per epoch), its second chunk
            os.kill(os.getpid(), signal.SIGTERM)
        return real(*args, **kwargs)

    monkeypatch.setattr(local, "sample_chunk", chunk_then_sigterm)
    with pytest.raises(Preempted, match=r"epoch 1 \(sampling\).*last\.ckpt holds") as stop:
        run(cfg)
    assert len(calls) == 6, "sampling went on after SIGTERM"
    assert "Rerun the same command" in str(stop.value)
    assert signal.getsignal(signal.SIGTERM) is before  # handler restored
    monkeypatch.setattr(local, "sample_chunk", real)
    assert sorted(val_rows(Path(cfg.out_dir))) == [0]
    run(cfg)
    assert val_rows(Path(cfg.out_dir)) == val_rows(Path(straight.out_dir))


class TermAt(L.Callback):
    """Sends SIGTERM to this process after optimizer step `step` of epoch `epoch`."""

    def __init__(self, epoch: int, step: int) -> None:
        self.epoch, self.step = epoch, step
        self.steps_after = 0

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if (trainer.current_epoch, batch_idx) == (self.epoch, self.step):
            os.kill(os.getpid(), signal.SIGTERM)
        elif trainer.current_epoch == self.epoch and batch_idx > self.step:
            self.steps_after += 1


def test_sigterm_while_training_stops_after_the_step_and_the_rerun_equals_a_straight_run(
    tiny_cfg, monkeypatch
) -> None:
    """SIGTERM during epoch 2's optimizer steps stops after that step; resuming repeats epoch 2
    from last.ckpt (epoch 1) and ends with the straight run's validation results."""
    straight = tiny_cfg(f"trainer.max_epochs={EPOCHS}")
    run(straight)
    cfg = tiny_cfg(f"trainer.max_epochs={EPOCHS}")
    probe = TermAt(epoch=2, step=0)
    monkeypatch.setattr("nco.training.runner.named_instances", _with(probe))
    with pytest.raises(Preempted, match=r"epoch 2 \(training\)"):
        run(cfg)
    assert probe.steps_after == 0
    monkeypatch.undo()
    assert sorted(val_rows(Path(cfg.out_dir))) == [0, 1]
    run(cfg)
    assert val_rows(Path(cfg.out_dir)) == val_rows(Path(straight.out_dir))


def _with(extra: L.Callback):
    """`runner.named_instances` that adds `extra` to the callbacks group."""
    from nco.training import runner

    real = runner.named_instances

    def named(group):
        made = real(group)
        return [*made, extra] if group is not None and "last" in group else made

    return named


@pytest.mark.slow  # two nco-train starts with larger sampling: about 60-90 s on 2 busy cores
def test_nco_train_exits_promptly_on_sigterm_while_sampling_and_resumes(tmp_path: Path) -> None:
    """The console script gets SIGTERM just after epoch 0's checkpoint, i.e. in epoch 1's
    sampling (a few seconds long): it exits within 5 s with status 143, one line naming the
    phase and no traceback; the same command then finishes the run."""
    exe = Path(sys.executable).parent / "nco-train"
    run_dir = tmp_path / "run"
    args = [
        str(exe),
        *[a for a in TINY if not a.startswith(("trainer.max_epochs", "training.instances"))],
        "trainer.max_epochs=2",
        "training.instances_per_epoch=400",
        f"hydra.run.dir={run_dir}",
    ]
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    last = run_dir / "checkpoints" / "last.ckpt"
    proc = subprocess.Popen(
        args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 300
    while not last.is_file() and proc.poll() is None:
        assert time.monotonic() < deadline, "no epoch finished in 300 s"
        time.sleep(0.05)
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    took = time.monotonic() - sent
    assert proc.returncode == 143, err[-3000:]
    assert took < 5, f"exited {took:.1f} s after SIGTERM"
    assert "stopped by SIGTERM in epoch 1 (sampling)" in err
    assert "Traceback" not in err
    again = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert sorted(val_rows(run_dir)) == [0, 1]


def tsplib(name: str, coords: list[tuple[int, int]], extra: str = "") -> str:
    """A TSPLIB EUC_2D file's text."""
    nodes = "\n".join(f"{i + 1} {x} {y}" for i, (x, y) in enumerate(coords))
    return (
        f"NAME : {name}\nTYPE : TSP\nDIMENSION : {len(coords)}\nEDGE_WEIGHT_TYPE : EUC_2D\n"
        f"NODE_COORD_SECTION\n{nodes}\n{extra}EOF\n"
    )


def test_folder_evaluation_reports_a_refused_file_and_scores_the_rest(tmp_path, capsys) -> None:
    """A folder of three TSPLIB files, one with FIXED_EDGES_SECTION (refused by the reader):
    nco-eval scores the two others, names the third with the reader's reason in the results
    JSON (info.skipped_files) and on stderr. Costs are TSPLIB EUC_2D lengths computed by hand."""
    import json

    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    from nco import checkpoint, evaluation
    from nco.paths import CONFIG_DIR

    folder = tmp_path / "lib"  # triangles: one tour each, of length 30+40+50 and 3+4+5
    folder.mkdir()
    (folder / "a.tsp").write_text(tsplib("a", [(0, 0), (0, 30), (40, 0)]))
    (folder / "b.tsp").write_text(tsplib("b", [(0, 0), (0, 3), (4, 0)]))
    fixed = tsplib("c", [(0, 0), (0, 30), (40, 0)], "FIXED_EDGES_SECTION\n1 2\n-1\n")
    (folder / "c.tsp").write_text(fixed)
    model = OmegaConf.to_container(OmegaConf.load(CONFIG_DIR / "model" / "bq_tsp_tiny.yaml"))
    problem = {"_target_": "nco.problems.tsp.TSPEnv", "num_nodes": 10}
    ckpt = tmp_path / "best.pt"
    checkpoint.save(ckpt, instantiate(model), model, {"env": problem, "name": "tsp"})
    out = tmp_path / "r.json"
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose(
            config_name="evaluate",
            overrides=[f"checkpoint={ckpt}", f"data={folder}", f"out={out}", "progress=false"],
        )
    evaluation.run(cfg)
    result = json.loads(out.read_text())
    assert result["num_instances"] == 2
    assert sorted(result["objectives"]) == [12, 120]
    (skip,) = result["info"]["skipped_files"]
    assert skip["file"] == str(folder / "c.tsp")
    assert "FIXED_EDGES_SECTION is not supported" in skip["reason"]
    err = capsys.readouterr().err
    assert f"nco-eval: skipped {folder / 'c.tsp'}: " in err
    assert "FIXED_EDGES_SECTION" in err


def test_a_killed_sampling_actor_is_replaced_counted_and_changes_nothing(tmp_path) -> None:
    """A Ray actor exiting hard in its first chunk (as kill -9 would end it): the epoch's
    sampling still returns every instance once, equal to in-process sampling, and the sampler's
    stats (logged as sample/workers_replaced, sample/nodes) count one replaced worker."""
    ray = pytest.importorskip("ray")
    import shutil
    import tempfile

    import torch

    from nco.distributed import InProcessSampler, RaySampler
    from nco.models.bq import BQPolicy
    from nco.problems.tsp import TSPEnv

    here = str(Path(__file__).resolve().parent)
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = here if not old else f"{here}{os.pathsep}{old}"
    import ray_helpers  # noqa: F401  (registers CrashOncePolicy here too)

    temp_dir = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=temp_dir, logging_level="ERROR")
    tiny = {"dim": 16, "layers": 1, "heads": 2, "ff_dim": 32}
    search = {"method": "gumbeldore", "beam_width": 4, "rounds": 2, "sigma": 0.3}
    env_cfg = {"_target_": "nco.problems.tsp.TSPEnv", "num_nodes": 10}
    crash = {"_target_": "ray_helpers.CrashOncePolicy", "marker": str(tmp_path / "x"), **tiny}
    try:
        torch.manual_seed(0)
        env, policy = TSPEnv(10), BQPolicy(**tiny)
        instances = env.generate(14, torch.Generator().manual_seed(5))
        expected = InProcessSampler(env, chunk_size=4).sample(policy, instances, search, 3)
        sampler = RaySampler(env_cfg, crash, workers=2, chunk_size=4, progress=False)
        try:
            got = sampler.sample(policy, instances, search, 3)
        finally:
            sampler.close()
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)
        if old is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = old
    assert sampler.stats == {"workers_replaced": 1.0, "nodes": 1.0}
    assert torch.equal(got.actions, expected.actions)
    assert torch.equal(got.objective, expected.objective)


def test_a_lost_node_shrinks_the_pool_to_what_the_live_nodes_hold(monkeypatch) -> None:
    """The pool's bookkeeping when node B (2 CPUs, 2 of 4 one-CPU workers) dies: B's slots are
    stranded; replacing them finds no room on A (2 CPUs, 2 live workers), so they are dropped;
    a replacement made while B still looked alive, never placed, is stranded too once B is dead;
    with no live worker left, sampling stops with an error. (A real node loss, with results
    equal to in-process sampling: scripts/ray_cluster_check.sh and its log.)"""
    pytest.importorskip("ray")
    import nco.distributed.ray_pool as pool

    nodes = [
        {"NodeID": "A", "Alive": True, "Resources": {"CPU": 2.0}},
        {"NodeID": "B", "Alive": False, "Resources": {"CPU": 2.0}},
    ]
    killed: list[str] = []
    monkeypatch.setattr(pool.ray, "nodes", lambda: nodes)
    monkeypatch.setattr(pool.ray, "kill", killed.append)
    sampler = pool.RaySampler({}, {}, workers=4, progress=False)
    monkeypatch.setattr(sampler, "_new_actor", lambda: "new")
    sampler.actors = ["a0", "a1", "b0", "b1"]
    sampler._slot_nodes = {0: "A", 1: "A", 2: "B", 3: "B"}
    assert sampler._stranded_slots() == [2, 3]
    assert [sampler._replace(s) for s in (2, 3)] == [0, 0]  # no room on A: dropped
    assert sampler.actors == ["a0", "a1", None, None] and killed == ["b0", "b1"]

    sampler.actors = ["a0", "a1", "new", None]  # replaced before B was marked dead
    assert sampler._stranded_slots() == [2]  # unplaced, beyond A's room
    nodes[0]["Resources"] = {"CPU": 3.0}
    assert sampler._stranded_slots() == []  # room for it: it may still be placed

    nodes[0]["Alive"] = False
    sampler.actors, sampler._slot_nodes = ["a0", None, None, None], {0: "A"}
    assert sampler._stranded_slots() == [0]
    with pytest.raises(RuntimeError, match="every worker died"):
        sampler._replace(0)
