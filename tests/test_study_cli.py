"""The installed `nco-study` as a user runs it: from an unrelated directory, on a study file of
one's own (a tiny TSP8 SL-vs-SI study): train a run, decode its best.pt on the test set in
resumable parts, report."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BIN = Path(sys.executable).parent
ENV = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
TINY = [  # tsp20_quick shrunk to a TSP8 epoch of seconds
    "problem.num_nodes=8",
    "problem.reference_solver=exact",
    "problem.reference_time_limit=5",
    "sampling.beam_width=2",
    "sampling.rounds=2",
    "sampling.num_samples=4",
    "training.instances_per_epoch=4",
    "training.batches_per_epoch=2",
    "training.batch_size=8",
    "training.val_instances=4",
    "trainer.max_epochs=2",
]


def nco_study(*args: str, cwd: Path, ok: bool = True) -> subprocess.CompletedProcess:
    """Run the installed console script in `cwd`; fail with its stderr tail unless it ends as
    expected (`ok`: exit status 0)."""
    exe = BIN / "nco-study"
    assert exe.is_file(), f"{exe}: console script not installed (pip install -e .)"
    proc = subprocess.run(
        [str(exe), *args], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=600
    )
    assert (proc.returncode == 0) == ok, f"nco-study {args}:\n{proc.stderr[-3000:]}"
    return proc


def optimal_tour_length(coords: np.ndarray) -> float:
    """The shortest closed tour through `coords`, by trying every order (8 nodes: 5,040)."""
    best = np.inf
    for rest in itertools.permutations(range(1, len(coords))):
        tour = coords[[0, *rest, 0]]
        best = min(best, float(np.linalg.norm(np.diff(tour, axis=0), axis=1).sum()))
    return best


@pytest.fixture
def study_file(tmp_path: Path) -> Path:
    """A study of one's own: tsp20_quick shrunk to TSP8, tested on 5 instances whose exact
    optima are the references."""
    coords = np.random.default_rng(0).uniform(size=(5, 8, 2))
    optima = np.array([optimal_tour_length(c) for c in coords])
    np.savez(tmp_path / "test5.npz", coords=coords, reference_costs=optima)
    text = {
        "kind": "sl_vs_si",
        "experiment": "tsp20_quick",
        "overrides": TINY,
        "test": str(tmp_path / "test5.npz"),
        "sl_data": "expert/tsp8.npz",
        "expert": "--problem tsp --size 8 --num 4 --solver exact",
        "target": {"greedy_gap_pct": 5.0, "name": "a made-up target"},
    }
    path = tmp_path / "tiny.yaml"
    path.write_text(json.dumps(text))  # JSON is YAML
    return path


def test_a_study_of_ones_own_trains_decodes_in_parts_and_reports(
    tmp_path: Path, study_file: Path
) -> None:
    """`run` trains one epoch of the WR arm under <root>/data/reproduction/tiny/wr_s0 and
    records the chunk; `evaluate --chunk 3` decodes the 5 test instances as parts 0-2 and 3-4
    merged into one results file; `report` puts its gap (>= 0 against the optima) into the
    study JSON and prints the arm table (reruns continuing is tested in-process, in
    test_reproduction_script.py)."""
    run = ["run", "--study", "tiny.yaml", "--methods", "wr", "--seeds", "0", "--until", "1"]
    run += ["--parallel", "1", "--threads", "1"]
    out = nco_study(*run, cwd=tmp_path).stdout
    assert "wr seed 0: epochs 0..1 (ok)" in out
    folder = tmp_path / "data" / "reproduction" / "tiny" / "wr_s0"
    assert (folder / "best.pt").is_file() and (folder / "checkpoints" / "last.ckpt").is_file()
    (chunk,) = [json.loads(line) for line in (folder / "chunks.jsonl").read_text().splitlines()]
    assert chunk["epochs"] == [0, 1] and chunk["commit"]
    evaluate = ["evaluate", "--study", "tiny.yaml", "--decoders", "greedy", "--chunk", "3"]
    nco_study(*evaluate, cwd=tmp_path)
    results = tmp_path / "data" / "results" / "reproduction"
    decoded = json.loads((results / "tiny__wr_s0__greedy.json").read_text())
    assert decoded["num_instances"] == 5 and decoded["info"]["parts"] == 2
    assert not (results / "tiny__wr_s0__greedy.parts").exists()
    pairs = zip(decoded["objectives"], decoded["references"], strict=True)
    assert all(cost >= optimum - 1e-6 for cost, optimum in pairs)
    printed = nco_study("report", "--study", "tiny.yaml", cwd=tmp_path).stdout
    report = json.loads((results / "tiny.json").read_text())
    assert report["runs"]["wr_s0"]["epochs"] == [0]
    test = report["test"]["wr_s0"]["greedy"]
    assert test["mean_gap"] == pytest.approx(decoded["mean_gap"]) and test["mean_gap"] >= 0
    assert f"| WR | s0 {test['mean_gap']:.3f}; **{test['mean_gap']:.3f}** | - |" in printed
    assert (results / "tiny.png").stat().st_size > 0


def test_refusals_name_the_file_and_what_to_do(tmp_path: Path, study_file: Path) -> None:
    """The SL arm without its expert data names the nco-data command that writes it; an
    unknown study lists the shipped ones; a study file of the wrong kind says so."""
    proc = nco_study("run", "--study", "tiny.yaml", "--methods", "sl", cwd=tmp_path, ok=False)
    assert "expert/tsp8.npz: the SL arm's expert data is missing" in proc.stderr
    assert "nco-data expert --problem tsp --size 8 --num 4 --solver exact --out" in proc.stderr
    proc = nco_study("report", "--study", "tsp7", cwd=tmp_path, ok=False)
    assert "study 'tsp7': expected one of" in proc.stderr and "'tsp20'" in proc.stderr
    proc = nco_study("report", "--study", "gomoku", cwd=tmp_path, ok=False)
    assert "gomoku.yaml: expected kind sl_vs_si" in proc.stderr


def test_epochs_report_of_runs_so_far(tmp_path: Path) -> None:
    """`nco-study epochs --study gomoku --report` reads the runs under <out>/runs (here two
    3x3 runs: WR solved at epoch 2, GD censored at the cap of 2), writes <out>.json and .png
    and prints the Markdown tables; relative --out is the current directory's."""
    for name, wins in (("wr_seed0", [4, 9]), ("gd_seed0", [1, 2])):
        metrics = tmp_path / "small" / "runs" / name / "logs" / "metrics.csv"
        metrics.parent.mkdir(parents=True)
        rows = [f"{e},{w},{9 - w}" for e, w in enumerate(wins)]
        metrics.write_text("\n".join(["epoch,val/wins,val/draws", *rows]) + "\n")
    report = ["epochs", "--study", "gomoku", "--board", "3", "--max-epochs", "2", "--report"]
    printed = nco_study(*report, "--out", "small", cwd=tmp_path).stdout
    assert "| wr | 0: 2 | 1 of 1 | 2.0 | 2.0 | 9 |" in printed
    assert "| gd | 0: > 2 | 0 of 1 |  | censored | 2 |" in printed
    summary = json.loads((tmp_path / "small.json").read_text())
    assert summary["comparisons"]["wr vs gd"]["prob_faster"] == 1.0
    assert (tmp_path / "small.png").stat().st_size > 0
