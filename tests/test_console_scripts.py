"""Every installed console script starts and does its job from an unrelated directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[1]
CHECKPOINT = REPO / "data" / "checkpoints" / "tsp20_quick" / "best.pt"
ENV = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}


def run(name: str, *args: str, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    """Run the console script `name` from .venv/bin in `cwd`; fail with its stderr tail."""
    exe = BIN / name
    assert exe.is_file(), f"{exe}: console script not installed (pip install -e .)"
    proc = subprocess.run(
        [str(exe), *args], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"{name} failed:\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture
def tsp_file(tmp_path: Path) -> Path:
    """Three TSP10 instances as an .npz in a folder outside the repository."""
    coords = np.random.default_rng(0).uniform(size=(3, 10, 2))
    np.savez(tmp_path / "d.npz", coords=coords)
    return tmp_path / "d.npz"


def test_nco_baseline(tmp_path: Path, tsp_file: Path) -> None:
    """nco-baseline finds its configs from any directory (it used a relative config path)."""
    out = tmp_path / "r.json"
    proc = run("nco-baseline", "solver=exact", f"data={tsp_file}", "time_limit=5", "workers=1",
               f"out={out}", cwd=tmp_path)  # fmt: skip
    assert "Average" in proc.stdout
    assert json.loads(out.read_text())["num_instances"] == 3


def test_nco_eval_and_nco_solve(tmp_path: Path, tsp_file: Path) -> None:
    """nco-eval scores a dataset and nco-solve one instance with the shipped checkpoint."""
    out = tmp_path / "e.json"
    proc = run("nco-eval", f"checkpoint={CHECKPOINT}", f"data={tsp_file}", "search=greedy",
               f"out={out}", "progress=false", cwd=tmp_path)  # fmt: skip
    assert "Average" in proc.stdout
    assert len(json.loads(out.read_text())["objectives"]) == 3
    sol = tmp_path / "s.json"  # the same checkpoint by its shipped name
    run("nco-solve", f"instance={tsp_file}", "checkpoint=shipped:tsp20_quick", f"out={sol}",
        "plot=false", cwd=tmp_path)  # fmt: skip
    assert sorted(json.loads(sol.read_text())["tour"]) == list(range(10))


def test_nco_train(tmp_path: Path, tsp_file: Path) -> None:
    """nco-train runs a tiny self-improvement epoch and writes best.pt, last.ckpt, metrics;
    nco-eval decodes with the run's last.ckpt."""
    run_dir = tmp_path / "run"
    run("nco-train", "model=bq_tsp_tiny", "problem.num_nodes=8", "sampling.beam_width=2",
        "sampling.rounds=2", "training.instances_per_epoch=4", "training.batches_per_epoch=2",
        "training.batch_size=8", "training.val_instances=4", "training.val_gap=false",
        "trainer.max_epochs=1", f"hydra.run.dir={run_dir}", cwd=tmp_path)  # fmt: skip
    for name in ("best.pt", "checkpoints/last.ckpt", "logs/metrics.csv"):
        assert (run_dir / name).is_file(), name
    out = tmp_path / "e.json"
    run("nco-eval", f"checkpoint={run_dir / 'checkpoints' / 'last.ckpt'}", f"data={tsp_file}",
        "search=greedy", f"out={out}", "progress=false", cwd=tmp_path)  # fmt: skip
    assert len(json.loads(out.read_text())["objectives"]) == 3


def test_nco_demo(tmp_path: Path) -> None:
    """nco-demo trains one short epoch (overrides passed to nco-train) and prints the table."""
    proc = run("nco-demo", "--epochs", "1", "--instances", "4", "--out", str(tmp_path / "demo"),
               "training.batches_per_epoch=2", "training.instances_per_epoch=8",
               "training.val_instances=8", cwd=tmp_path)  # fmt: skip
    assert "greedy" in proc.stdout and "(reference)" in proc.stdout
    table = json.loads((tmp_path / "demo" / "demo_results.json").read_text())
    assert [row["method"] for row in table][1:] == [
        "greedy", "beam search 16", "gumbeldore 16x4", "shipped: greedy", "shipped: beam 16"
    ]  # fmt: skip
    assert all(row["mean_gap"] >= -1e-6 for row in table)  # the reference is LKH-3 or exact
    assert table[-1]["mean_gap"] < 1.0  # the shipped TSP20 checkpoint is near optimal
    assert (tmp_path / "demo" / "best.pt").is_file()


def test_ray_is_imported_only_for_ray_sampling() -> None:
    """In-process training and the other commands never import Ray (a heavy, optional start)."""
    code = (
        "import sys, nco.cli.train, nco.cli.evaluate, nco.cli.solve, nco.cli.baseline\n"
        "import nco.cli.demo\n"
        "assert 'ray' not in sys.modules, 'ray imported'\n"
        "from nco.distributed import RaySampler\n"
        "assert 'ray' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=ENV, timeout=120)


JSSP_SHIPPED = [
    name
    for name in ("jssp", "jssp_small")
    if (REPO / "data" / "checkpoints" / name / "best.pt").is_file()
]


@pytest.mark.parametrize("name", JSSP_SHIPPED)
def test_nco_solve_jssp_checkpoint_on_taillard_and_orlib_files(tmp_path: Path, name: str) -> None:
    """A shipped JSSP policy schedules a user's 6x6 instance given in Taillard's format and in
    the OR-Library format: the same feasible schedule from both, its makespan as the cost, and a
    Gantt chart."""
    from nco.problems.jssp.generator import generate  # noqa: PLC0415
    from nco.problems.jssp.io import write_orlib, write_taillard  # noqa: PLC0415
    from nco.problems.jssp.schedule import check_schedule  # noqa: PLC0415

    instance = generate(1, [(6, 6)], torch.Generator().manual_seed(3))
    write_taillard(tmp_path / "user_ta.txt", instance)
    write_orlib(tmp_path / "user_orlib.txt", instance)
    results = []
    for file in ("user_ta.txt", "user_orlib.txt"):
        out = tmp_path / f"{file}.json"
        run("nco-solve", f"instance={file}", f"checkpoint=shipped:{name}", f"out={out}",
            cwd=tmp_path)  # fmt: skip
        results.append(json.loads(out.read_text()))
        assert out.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    ta, orlib = results
    assert ta["start_times"] == orlib["start_times"] and ta["cost"] == orlib["cost"]
    durations = instance.durations[0].numpy()
    makespan = check_schedule(durations, instance.machines[0].numpy(), np.array(ta["start_times"]))
    assert ta["cost"] == makespan and ta["problem"] == "jssp"


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("nco-solve", ["instance=bad.txt", "problem=jssp", "checkpoint=shipped:jssp"],
         "nco-solve: bad.txt: expected 3 rows of 6 integers under '3 3'."),
        ("nco-eval", ["checkpoint=nope.pt", "data=taillard:ta01"],
         "nco-eval: checkpoint file nope.pt not found."),
        ("nco-baseline", ["problem=tsp", "solver=nope", "data=d.npz"], "nco-baseline: "),
    ],
)  # fmt: skip
def test_a_users_mistake_is_one_line_and_exit_status_2(
    tmp_path: Path, name: str, args: list[str], message: str
) -> None:
    """A bad file, checkpoint or solver name ends the command with its message, not Hydra's
    chained traceback; HYDRA_FULL_ERROR=1 still shows the traceback."""
    (tmp_path / "bad.txt").write_text("3 3\n0 3 1 2 2\n0 2 2 1 1 4\n")
    np.savez(tmp_path / "d.npz", coords=np.random.default_rng(0).uniform(size=(2, 5, 2)))
    cmd = [str(BIN / name), *args]
    proc = subprocess.run(cmd, cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert proc.stderr.startswith(message) and "Traceback" not in proc.stderr
    full = {**ENV, "HYDRA_FULL_ERROR": "1"}
    proc = subprocess.run(cmd, cwd=tmp_path, env=full, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "Traceback" in proc.stderr


LIGHT_SHIPPED = [
    name
    for name in ("am_tsp100", "pomo_tsp100", "am_cvrp100", "pomo_cvrp100")
    if (REPO / "data" / "checkpoints" / name / "best.pt").is_file()
]


@pytest.mark.parametrize("name", LIGHT_SHIPPED)
def test_nco_solve_light_checkpoint_on_library_files(tmp_path: Path, name: str) -> None:
    """A shipped AM / POMO policy solves a user's TSPLIB / CVRPLIB file, with augmentation and
    multi-start: the tour or routes come back in the env form the checkpoint decodes (the AM's
    start node is an action and its depot is node 0; nco-solve read them as the BQ form, a tour
    with node 0 twice), and the cost is the file's metric of that solution, near the optimum."""
    from nco.problems.cvrp.io import read_dataset as read_cvrp  # noqa: PLC0415
    from nco.problems.cvrp.solvers import check_routes  # noqa: PLC0415
    from nco.problems.tsp.io import tsplib_length  # noqa: PLC0415
    from nco.problems.tsp.solvers import solve_lkh  # noqa: PLC0415

    out = tmp_path / "s.json"
    starts = ["search.augment=8", "search.starts=60"] if name.startswith("pomo") else []
    rng = np.random.default_rng(5)
    coords = rng.integers(0, 1000, size=(61, 2))
    lines = "\n".join(f"{i + 1} {x} {y}" for i, (x, y) in enumerate(coords))
    if "cvrp" in name:  # a Kool-like CVRP file: 60 customers, demands 1..9, capacity 50
        demands = "\n".join(f"{i + 1} {0 if i == 0 else rng.integers(1, 10)}" for i in range(61))
        file = "u60.vrp"
        (tmp_path / file).write_text(
            "NAME : u60\nTYPE : CVRP\nDIMENSION : 61\nEDGE_WEIGHT_TYPE : EUC_2D\nCAPACITY : 50\n"
            f"NODE_COORD_SECTION\n{lines}\nDEMAND_SECTION\n{demands}\nDEPOT_SECTION\n1\n-1\nEOF\n"
        )
    else:
        file = "u61.tsp"
        (tmp_path / file).write_text(
            "NAME : u61\nTYPE : TSP\nDIMENSION : 61\nEDGE_WEIGHT_TYPE : EUC_2D\n"
            f"NODE_COORD_SECTION\n{lines}\nEOF\n"
        )
    run("nco-solve", f"instance={file}", f"checkpoint=shipped:{name}", f"out={out}",
        "plot=false", *starts, cwd=tmp_path)  # fmt: skip
    result = json.loads(out.read_text())
    if "cvrp" in name:
        instance = read_cvrp(tmp_path / file).instance(0)
        routes = result["routes"]
        assert sorted(c for r in routes for c in r) == list(range(1, 61))
        check_routes(np.asarray(instance["demands"]), int(instance["capacity"]), routes)
        hgs = tmp_path / "hgs.json"
        run("nco-solve", f"instance={file}", "solver=hgs", "time_limit=2", f"out={hgs}",
            "plot=false", cwd=tmp_path)  # fmt: skip
        assert result["cost"] <= 1.12 * json.loads(hgs.read_text())["cost"]
        return
    assert sorted(result["tour"]) == list(range(61))
    assert result["cost"] == tsplib_length(coords, result["tour"], "EUC_2D")
    best = solve_lkh({"coords": coords / 1000.0}, 5.0, 0).solution
    assert result["cost"] <= 1.06 * tsplib_length(coords, best, "EUC_2D")
