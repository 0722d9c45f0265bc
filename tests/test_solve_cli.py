"""nco-solve: solution JSON and plot for TSPLIB, CVRPLIB and JSSP files, with checkpoints and
classical solvers; costs in the file's units; errors on bad input; TSPLIB integer distances."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from nco import checkpoint, solving
from nco.cli import solve as solve_cli
from nco.problems.jssp import JSSPEnv, make_instances
from nco.problems.jssp.schedule import check_schedule
from nco.problems.tsp import TSPInstances
from nco.problems.tsp.io import tsplib_length
from nco.problems.tsp.solvers import solve_exact
from nco.search import greedy
from tests.tiny_files import TINY6_VRP

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
PNG = b"\x89PNG\r\n\x1a\n"
TSP_COORDS = np.array(
    [[565, 575], [25, 185], [345, 750], [945, 685], [845, 655], [880, 660], [25, 230], [525, 1000]],
    dtype=np.float64,
)
# OR-Library layout: "J M", then per job the pairs (machine, duration).
JSSP_TEXT = "3 3\n0 3 1 2 2 2\n0 2 2 1 1 4\n1 4 2 3 0 3\n"


def compose_cfg(overrides: list[str]) -> DictConfig:
    """The solve config composed like the command line would."""
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        return compose(config_name="solve", overrides=overrides)


def length(coords: np.ndarray, tour: list[int]) -> float:
    """Closed Euclidean tour length with numpy."""
    pts = coords[tour]
    return float(np.linalg.norm(pts - np.roll(pts, -1, axis=0), axis=1).sum())


def check_png(path: Path) -> None:
    """The file is a non-trivial PNG."""
    data = path.read_bytes()
    assert data[:8] == PNG and len(data) > 2000


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """A TSPLIB file (8 nodes, coordinates up to 1000), a JSSP 3x3 file, a CVRPLIB file and a
    tiny random-weight TSP checkpoint."""
    root = tmp_path_factory.mktemp("solve")
    lines = [f"{i + 1} {int(x)} {int(y)}" for i, (x, y) in enumerate(TSP_COORDS)]
    header = "NAME : tiny8\nTYPE : TSP\nDIMENSION : 8\nEDGE_WEIGHT_TYPE : EUC_2D\n"
    (root / "tiny8.tsp").write_text(header + "NODE_COORD_SECTION\n" + "\n".join(lines) + "\nEOF\n")
    (root / "tiny3x3.txt").write_text(JSSP_TEXT)
    (root / "tiny6.vrp").write_text(TINY6_VRP)
    model = OmegaConf.to_container(OmegaConf.load(CONFIGS / "model" / "bq_tsp_tiny.yaml"))
    problem = {"name": "tsp", "num_nodes": 8, "env": {"_target_": "nco.problems.tsp.TSPEnv"}}
    torch.manual_seed(0)
    checkpoint.save(root / "best.pt", instantiate(model), model, problem)
    return {
        "root": root,
        "tsp": root / "tiny8.tsp",
        "jssp": root / "tiny3x3.txt",
        "vrp": root / "tiny6.vrp",
        "checkpoint": root / "best.pt",
    }


def run_solve(files: dict[str, Path], name: str, *overrides: str) -> tuple[dict, Path]:
    """Run nco-solve in-process; the written JSON and its path."""
    out = files["root"] / f"{name}.json"
    payload = solving.run(compose_cfg([f"out={out}", *overrides]))
    assert json.loads(out.read_text()) == payload
    return payload, out


def test_tsplib_with_checkpoint_scales_into_unit_square(files) -> None:
    """The policy sees min-max scaled coordinates (its greedy tour there is the answer) and the
    cost is the tour's length in the file's units."""
    result, out = run_solve(
        files, "ckpt", f"instance={files['tsp']}", f"checkpoint={files['checkpoint']}"
    )
    tour = result["tour"]
    assert sorted(tour) == list(range(8)) and tour[0] == 0
    assert result["euclidean_cost"] == pytest.approx(length(TSP_COORDS, tour), rel=1e-12)
    assert result["cost"] == int(result["cost"])  # EUC_2D: the file's integer metric
    scaled = (TSP_COORDS - TSP_COORDS.min(0)) / (TSP_COORDS.max(0) - TSP_COORDS.min(0)).max()
    loaded = checkpoint.load(files["checkpoint"])
    direct = greedy(loaded.policy, loaded.env, TSPInstances(torch.from_numpy(scaled)[None]))
    assert tour == [0, *direct.best().actions[0].tolist()]
    assert result["coordinate_transform"] == {"offset": [25.0, 185.0], "scale": 920.0}
    assert result["instance"] == "tiny8" and result["problem"] == "tsp"
    check_png(out.with_suffix(".png"))


def test_tsplib_with_lkh_is_optimal_in_file_units(files) -> None:
    """LKH's tour has the brute-force optimal length; rounded_cost uses TSPLIB's nint distances."""
    result, out = run_solve(files, "lkh", f"instance={files['tsp']}", "solver=lkh")
    best = min(length(TSP_COORDS, [0, *p]) for p in itertools.permutations(range(1, 8)))
    assert result["euclidean_cost"] == pytest.approx(best, rel=1e-9)
    assert result["euclidean_cost"] == pytest.approx(length(TSP_COORDS, result["tour"]), rel=1e-12)
    pts = TSP_COORDS[result["tour"]]
    edges = np.linalg.norm(pts - np.roll(pts, -1, axis=0), axis=1)
    assert result["cost"] == int(np.floor(edges + 0.5).sum())
    assert result["method"] == "lkh" and result["edge_weight_type"] == "EUC_2D"
    check_png(out.with_suffix(".png"))


def test_jssp_with_cpsat_is_optimal_and_drawn(files) -> None:
    """CP-SAT's schedule is feasible with the optimal makespan (min over all job sequences)."""
    result, out = run_solve(files, "jssp", f"instance={files['jssp']}", "solver=cpsat")
    durations = np.array([[3, 2, 2], [2, 1, 4], [4, 3, 3]])
    machines = np.array([[0, 1, 2], [0, 2, 1], [1, 2, 0]])
    start = np.array(result["start_times"])
    assert check_schedule(durations, machines, start) == result["cost"]
    sequences = torch.tensor(sorted(set(itertools.permutations([0, 0, 0, 1, 1, 1, 2, 2, 2]))))
    instances = make_instances(durations, machines)
    batch = instances.index(torch.zeros(len(sequences), dtype=torch.long))
    env = JSSPEnv(3, 3)
    optimum = float(-env.objective(env.replay(batch, sequences)).max())
    assert result["cost"] == optimum and result["optimal"] is True
    check_png(out.with_suffix(".png"))


def test_cvrplib_with_hgs_gives_feasible_routes(files) -> None:
    """HGS routes cover each customer once within capacity; the cost is their length."""
    result, out = run_solve(
        files, "vrp", f"instance={files['vrp']}", "solver=hgs", "time_limit=0.2"
    )
    nodes = np.array([[50, 50], [10, 10], [20, 90], [80, 80], [90, 20], [30, 40], [70, 60.0]])
    demands = np.array([0, 4, 5, 3, 6, 4, 2])
    routes = result["routes"]
    assert sorted(c for r in routes for c in r) == list(range(1, 7))
    assert all(demands[r].sum() <= 10 for r in routes)
    euclid = sum(length(nodes, [0, *r]) for r in routes)
    assert result.get("euclidean_cost", result["cost"]) == pytest.approx(euclid, rel=1e-12)
    assert result["instance"] == "tiny6"
    check_png(out.with_suffix(".png"))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["solver=lkh", "checkpoint=best.pt"], "exactly one of"),
        ([], "exactly one of"),
        (["solver=magic"], "expected one of"),
        (["solver=ortools", "instance=JSSP"], "pass problem="),
        (["solver=lkh", "problem=cvrp"], "holds tsp instances but problem= says cvrp"),
        (["instance=VRP", "checkpoint=CKPT"], "holds cvrp instances but the checkpoint says tsp"),
        (["solver=lkh", "instance=missing.tsp"], "missing.tsp not found"),
    ],
)
def test_bad_arguments_raise(files, overrides, message) -> None:
    """Conflicting, missing or unknown arguments raise ValueError with a clear message."""
    values = {"JSSP": files["jssp"], "VRP": files["vrp"], "CKPT": files["checkpoint"]}
    args = {"instance": str(files["tsp"])}
    for item in overrides:
        key, value = item.split("=", 1)
        args[key] = str(values.get(value, value))
    with pytest.raises(ValueError, match=message):
        solving.run(compose_cfg([f"{k}={v}" for k, v in args.items()]))


@pytest.mark.parametrize(
    ("points", "kind", "expected"),
    [
        ([[0, 0], [3, 4], [0, 4]], "EUC_2D", 12),  # 5 + 3 + 4
        ([[0, 0], [1, 1], [0, 1]], "EUC_2D", 3),  # nint(1.414) + 1 + 1
        ([[0, 0], [1, 1], [0, 1]], "CEIL_2D", 4),  # ceil(1.414) + 1 + 1
        ([[0, 0], [10, 0], [10, 10]], "ATT", 13),  # sqrt(10) -> 4, 4, sqrt(20) -> 5
        ([[0, 0], [1, 0], [2, 0]], "GEO", 447),  # 1 degree of latitude -> 112, 112, 223
    ],
)
def test_tsplib_length_by_hand(points, kind, expected) -> None:
    """TSPLIB's integer distance conventions on tours computed by hand."""
    assert tsplib_length(np.array(points, float), [0, 1, 2], kind) == expected


def test_console_entry_point(files, monkeypatch) -> None:
    """`main` parses key=value arguments and writes <stem>.solution.json with out unset."""
    monkeypatch.chdir(files["root"])
    monkeypatch.setattr(sys, "argv", ["nco-solve", f"instance={files['jssp']}", "solver=cpsat"])
    solve_cli.main()
    assert json.loads((files["root"] / "tiny3x3.solution.json").read_text())["cost"] == 11
    check_png(files["root"] / "tiny3x3.solution.png")


def test_nco_eval_on_library_files_matches_nco_solve(files) -> None:
    """The same TSPLIB / CVRPLIB file and checkpoint give one cost with both commands: nco-eval
    scales into the unit square like nco-solve and reports file units (it used raw coordinates,
    3952.9 vs 9432.8 in the issue); unit-square files are left untouched by both."""
    from nco import evaluation

    solved, _ = run_solve(
        files, "same", f"instance={files['tsp']}", f"checkpoint={files['checkpoint']}"
    )
    out = files["root"] / "eval.json"
    evaluation.run(
        compose_eval([f"checkpoint={files['checkpoint']}", f"data={files['tsp']}", f"out={out}"])
    )
    written = json.loads(out.read_text())
    assert written["objectives"][0] == solved["cost"]  # the file's EUC_2D metric
    assert written["info"]["euclidean_costs"][0] == pytest.approx(solved["euclidean_cost"], 1e-9)

    unit = TSP_COORDS / 1000.0  # inside [0, 1]^2: nobody rescales it
    np.savez(files["root"] / "unit.npz", coords=unit[None])
    solved, _ = run_solve(
        files, "unit", f"instance={files['root'] / 'unit.npz'}", f"checkpoint={files['checkpoint']}"
    )
    assert "coordinate_transform" not in solved or solved["coordinate_transform"]["scale"] == 1.0
    loaded = checkpoint.load(files["checkpoint"])
    direct = greedy(loaded.policy, loaded.env, TSPInstances(torch.from_numpy(unit)[None]))
    assert solved["tour"] == [0, *direct.best().actions[0].tolist()]


def compose_eval(overrides: list[str]) -> DictConfig:
    """The evaluate config composed like the command line would."""
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        return compose(config_name="evaluate", overrides=["progress=false", *overrides])


def test_nco_eval_on_a_folder_of_library_files(files, tmp_path) -> None:
    """One row per file in the file's own metric (TSPLIB EUC_2D / ATT integer distances), the
    Euclidean length beside it, and the gap to an .opt.tour where one lies beside the file."""
    from nco import evaluation
    from nco.problems.tsp.io import tsplib_length

    folder = tmp_path / "lib"
    folder.mkdir()
    text = files["tsp"].read_text()
    (folder / "a8.tsp").write_text(text.replace("tiny8", "a8"))
    (folder / "b8.tsp").write_text(text.replace("tiny8", "b8").replace("EUC_2D", "ATT"))
    optimal = solve_exact({"coords": TSP_COORDS / 1000}, 10.0, 0).solution  # unit square
    tour_lines = "\n".join(str(i + 1) for i in optimal)
    (folder / "a8.opt.tour").write_text(
        f"NAME : a8\nTYPE : TOUR\nDIMENSION : 8\nTOUR_SECTION\n{tour_lines}\n-1\nEOF\n"
    )
    out = tmp_path / "lib.json"
    results = evaluation.run(
        compose_eval([f"checkpoint={files['checkpoint']}", f"data={folder}", f"out={out}"])
    )
    assert results.names == ["a8", "b8"]
    assert results.info["metrics"] == ["EUC_2D", "ATT"]
    (euc, att), (len_a, len_b) = results.objectives, results.info["euclidean_costs"]
    assert euc == int(euc) and abs(euc - len_a) <= 8 * 0.5  # nint per edge
    assert att == int(att) and abs(att - len_b / 10**0.5) <= 8  # ATT: ceil-ish of d / sqrt(10)
    ref = tsplib_length(TSP_COORDS, optimal, "EUC_2D")
    assert results.references == [ref, None]
    assert results.gaps[0] >= 0 and results.gaps[1] is None
    assert json.loads(out.read_text())["names"] == ["a8", "b8"]
    (folder / "c.vrp").write_text(TINY6_VRP)
    with pytest.raises(ValueError, match="not"):
        evaluation.run(compose_eval([f"checkpoint={files['checkpoint']}", f"data={folder}"]))


@pytest.mark.parametrize("name", ["am_tsp100", "pomo_tsp100"])
def test_nco_eval_and_nco_solve_read_the_am_form(files, name: str) -> None:
    """A checkpoint of the AM's TSP form (the start node is an action) gives the same valid
    tour's cost with nco-eval and nco-solve on a TSPLIB file; both read the actions as the
    BQ form (node 0 prepended) before, which nco-eval raised on."""
    from nco import evaluation

    if not (CONFIGS.parent / "data" / "checkpoints" / name / "best.pt").is_file():
        pytest.skip(f"shipped:{name} is not in this checkout")
    solved, _ = run_solve(
        files, name, f"instance={files['tsp']}", f"checkpoint=shipped:{name}", "plot=false"
    )
    assert sorted(solved["tour"]) == list(range(8))
    out = files["root"] / f"eval_{name}.json"
    evaluation.run(
        compose_eval([f"checkpoint=shipped:{name}", f"data={files['tsp']}", f"out={out}"])
    )
    assert json.loads(out.read_text())["objectives"][0] == solved["cost"]
