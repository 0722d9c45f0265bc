"""scripts/gpu_window.sh picks a plan of steps from scripts/gpu_plans/ and budgets its timeouts."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A checkout holding only the window script, its plans and the JSSP run's metrics."""
    (tmp_path / "repo" / "scripts").mkdir(parents=True)
    (tmp_path / "repo" / "data/jssp_cpu/gd/logs").mkdir(parents=True)
    (tmp_path / "repo" / "data/jssp_cpu/gd/logs/metrics.csv").write_text("epoch\n0\n")
    shutil.copy(ROOT / "scripts" / "gpu_window.sh", tmp_path / "repo" / "scripts")
    shutil.copytree(ROOT / "scripts" / "gpu_plans", tmp_path / "repo" / "scripts" / "gpu_plans")
    return tmp_path / "repo"


def dry_run(
    repo: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    out = repo.parent / "out"
    return subprocess.run(
        ["bash", str(repo / "scripts/gpu_window.sh"), "--dry-run", str(out), *args],
        capture_output=True,
        text=True,
        env=env,
    )


def files(repo: Path) -> set[str]:
    return {str(p.relative_to(repo)) for p in repo.rglob("*") if p.is_file()}


def steps(stdout: str) -> list[tuple[str, int]]:
    return [(m[1], int(m[2])) for m in re.finditer(r"start (\S+) \(timeout (\d+)s\)", stdout)]


def test_the_default_plan_is_the_benchmarks_within_the_budget(repo: Path) -> None:
    proc = dry_run(repo, "560")
    assert proc.returncode == 0, proc.stderr
    # 560 s less the 20 s reserve: 240 + 240 + 60, and the probe is skipped
    assert steps(proc.stdout) == [("search", 240), ("policy", 240), ("train", 60)]
    assert "skip jssp_probe" in proc.stdout


def test_the_runs_plan_trains_for_the_budget_then_snapshots(repo: Path) -> None:
    before = files(repo)
    proc = dry_run(repo, "560", "runs")
    assert files(repo) == before  # a dry run writes nothing into the checkout, the run included
    assert "jssp_train: 2 lines in metrics.csv" in proc.stdout
    # 560 s less the 20 s reserve, less 40 s kept for the snapshot
    assert steps(proc.stdout) == [("jssp_train", 500), ("snapshot", 30)]
    assert "experiment=jssp_cpu" in proc.stdout and "jssp_cpu_gd.tgz" in proc.stdout


def test_the_runs_plan_passes_extra_training_overrides(repo: Path) -> None:
    env = {**os.environ, "NCO_JSSP_OVERRIDES": "training.instances_per_epoch=32 seed=3"}
    proc = dry_run(repo, "560", "runs", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "trainer.enable_progress_bar=false training.instances_per_epoch=32 seed=3" in proc.stdout


def test_the_table2_plan_decodes_its_cells_in_parts_then_snapshots(repo: Path) -> None:
    env = {
        **os.environ,
        "NCO_METHODS": "greedy gd32x4",
        "NCO_GROUPS": "20x20 100x20",
        "NCO_RUNS": "epoch99_s1235:1235:4",
    }
    proc = dry_run(repo, "300", "table2", env=env)
    assert proc.returncode == 0, proc.stderr
    # 300 s less the 20 s reserve, less 40 s kept for the snapshot
    assert steps(proc.stdout) == [("table2_epoch99_s1235", 240), ("snapshot", 30)]
    assert "DEVICE=cuda" in proc.stdout and "SEED=1235 REPEATS=4" in proc.stdout
    assert (
        "scripts/jssp_cells.sh data/checkpoints/jssp/best.pt epoch99_s1235 greedy:20x20 "
        "greedy:100x20 gd32x4:20x20 gd32x4:100x20"
    ) in proc.stdout
    assert "table2.tgz" in proc.stdout


def test_the_table2_plan_defaults_to_the_missing_runs_of_the_shipped_policy(
    repo: Path,
) -> None:
    """By default the window decodes the shipped file's GD 32x4 cells the CPU needs longest for,
    seed 1234 first, then the repeat runs under the CPU's tags; a run without seed and repeats
    passes neither."""
    proc = dry_run(repo, "300", "table2")
    assert "SEED=" not in proc.stdout.split("skip")[0]
    assert (
        "scripts/jssp_cells.sh data/checkpoints/jssp/best.pt epoch120 gd32x4:100x20 "
        "gd32x4:50x20 gd32x4:50x15 gd32x4:30x20"
    ) in proc.stdout
    # the dry run's first step spends the budget, so the repeat cells' steps are skipped
    assert (
        "skip table2_epoch120_s1235" in proc.stdout and "skip table2_epoch120_s1237" in proc.stdout
    )
    proc = dry_run(repo, "300", "table2", env={**os.environ, "NCO_RUNS": "epoch120_s1235:1235:2"})
    assert "SEED=1235 REPEATS=2" in proc.stdout


def test_an_unknown_plan_or_a_bad_budget_is_refused(repo: Path) -> None:
    proc = dry_run(repo, "560", "nope")
    assert proc.returncode == 2 and "bench" in proc.stderr and "runs" in proc.stderr
    assert dry_run(repo, "soon").returncode == 2


def test_the_si_plan_trains_two_runs_at_once_then_snapshots_before_decoding(repo: Path) -> None:
    run = repo / "data/reproduction/tsp50/finetune-gpu2"
    run.mkdir(parents=True)
    (run / "best.pt").write_bytes(b"weights")
    proc = dry_run(repo, "560", "si")
    assert proc.returncode == 0, proc.stderr
    # both trainings end 100 s before the budget (540 s after the reserve): snapshots, decode
    assert sorted(steps(proc.stdout)[:2]) == [("jssp_train", 440), ("tsp50_train", 435)]
    assert steps(proc.stdout)[2:] == [("snapshot", 30), ("tsp50_snapshot", 30), ("tsp50_aug8", 45)]
    assert "training.instances_per_epoch=32 training.batches_per_epoch=192" in proc.stdout
    assert "nco.cli.study finetune --study tsp50 --name finetune-gpu2" in proc.stdout
    assert "--trainer gpu" in proc.stdout and "search.augment=8" in proc.stdout


def test_a_dry_runs_timeouts_do_not_depend_on_how_long_it_took(repo: Path) -> None:
    """A dry run's clock is the sum of its steps' timeouts: a slow host gives the same plan."""
    (repo / "scripts/gpu_plans/slow.sh").write_text(
        "step first 100 true\nsleep 1.2\nstep second 1000 true\n"
    )
    proc = dry_run(repo, "560", "slow")
    assert proc.returncode == 0, proc.stderr
    # 560 s less the 20 s reserve: 100 for the first, all of the other 440 for the second
    assert steps(proc.stdout) == [("first", 100), ("second", 440)]


def test_pack_new_packs_only_the_files_the_plan_wrote(repo: Path, tmp_path: Path) -> None:
    """A real (not dry) window on a stand-in GPU: pack_new's tarball holds the files written
    under its folder after the plan began, not the older ones beside them."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nvidia-smi").write_text("#!/bin/sh\necho fake GPU\n")
    (repo / ".venv/bin").mkdir(parents=True)
    (repo / ".venv/bin/python").write_text("#!/bin/sh\necho torch fake\n")  # 'sees' a GPU
    for script in (fake / "nvidia-smi", repo / ".venv/bin/python"):
        script.chmod(0o755)
    (repo / "data/cells").mkdir(parents=True)
    (repo / "data/cells/old.json").write_text("{}")
    os.utime(repo / "data/cells/old.json", (0, 0))
    (repo / "scripts/gpu_plans/pack.sh").write_text(
        "step write 30 bash -c 'echo 1 > data/cells/new.json'\n"
        "pack_new snapshot data/cells cells.tgz\n"
    )
    out = repo.parent / "out"
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    proc = subprocess.run(
        ["bash", "scripts/gpu_window.sh", str(out), "200", "pack"],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with tarfile.open(out / "cells.tgz") as tar:
        assert tar.getnames() == ["data/cells/new.json"]


def test_the_light_plan_decodes_in_resumable_parts_then_snapshots(repo: Path) -> None:
    before = files(repo)
    proc = dry_run(repo, "555", "light")
    assert proc.returncode == 0, proc.stderr
    assert files(repo) == before
    # 555 s less the 20 s reserve: fixed steps, the TSP100 sampling takes the rest less 40 s
    assert steps(proc.stdout) == [
        ("cvrp100_sample1280", 150),
        ("cvrp100_gd32x4", 150),
        ("cvrp100_beam16", 60),
        ("tsp100_beam16", 60),
        ("tsp100_sample1280", 75),
        ("snapshot", 30),
    ]
    assert proc.stdout.count("scripts/eval_in_parts.py") == 5
    assert proc.stdout.count("device=cuda progress=false") == 5
    # the CPU's committed parts are of 500 instances: the same chunk continues them
    assert "--chunk 500 --out data/results/light/am_tsp100_sample1280_all.json" in proc.stdout
