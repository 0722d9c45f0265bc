"""The results JSON (gap math, round trip, validation, table) and the `nco-baseline` command."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from nco.baselines import run
from nco.problems.cvrp.problem import kool_cvrp
from nco.problems.cvrp.routes import routes_cost
from nco.problems.tsp.problem import kool_tsp
from nco.problems.tsp.solvers import tour_length
from nco.results import Results, format_table, read_results, write_results

REPO = Path(__file__).resolve().parents[1]


def test_gaps_by_hand() -> None:
    """Gaps are (cost - ref) / ref; a missing reference gives no gap and is left out of the mean."""
    res = Results("tsp", "d", "m", [11.0, 9.0, 5.0], [10.0, 10.0, math.nan], wall_time_s=1.0)
    assert res.gaps == [pytest.approx(0.1), pytest.approx(-0.1), None]
    assert res.mean_gap == pytest.approx(0.0, abs=1e-12)
    assert res.mean_cost == pytest.approx(25 / 3)
    assert Results("tsp", "d", "m", [12.0, 10.0], [10.0, 10.0], 1.0).mean_gap == pytest.approx(10)
    assert Results("tsp", "d", "m", [1.0], None, 1.0).to_dict()["gaps"] is None


def test_round_trip_is_strict_json(tmp_path: Path) -> None:
    """write_results then read_results gives the same object; the file has no NaN tokens."""
    res = Results(
        "cvrp",
        "kool:cvrp20_test",
        "hgs",
        [4.0, 6.0],
        [np.float64(4.0), np.nan],
        2.5,
        solutions=[[[1, 2]], [[1], [2]]],
        times_s=[0.1, 0.2],
        info={"seed": 1},
    )
    path = write_results(res, tmp_path / "sub" / "r.json")
    text = path.read_text()
    assert "NaN" not in text and json.loads(text)["references"] == [4.0, None]
    back = read_results(path)
    assert back.to_dict() == res.to_dict()
    assert [p.name for p in path.parent.iterdir()] == ["r.json"]  # no temporary file left


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("mean_gap", 5.0, "mean_gap"),
        ("gaps", [0.5, None], "gaps"),
        ("num_instances", 3, "num_instances"),
        ("objectives", [4.0], "expected 1 values"),
    ],
)
def test_read_rejects_inconsistent_files(tmp_path: Path, key: str, value, match: str) -> None:
    """A results file whose derived fields disagree with its objectives is rejected."""
    data = Results("tsp", "d", "m", [4.0, 6.0], [4.0, 5.0], 1.0).to_dict()
    data[key] = value
    (tmp_path / "r.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match=match):
        read_results(tmp_path / "r.json")


def test_read_rejects_missing_fields(tmp_path: Path) -> None:
    """A file without the required fields names what is missing."""
    (tmp_path / "r.json").write_text(json.dumps({"problem": "tsp"}))
    with pytest.raises(ValueError, match="missing fields"):
        read_results(tmp_path / "r.json")


def test_table_rows_and_averages() -> None:
    """The table has a row per instance with its gap in percent, and an average line."""
    res = Results("tsp", "d", "lkh", [11.0, 9.0], [10.0, 10.0], 3.0, times_s=[1.0, 2.0])
    lines = format_table(res).splitlines()
    assert lines[1].split() == ["Instance", "Cost", "Ref", "Gap", "%", "Time"]
    assert lines[3].split() == ["0", "11.000000", "10.000000", "10.000", "1.00"]
    assert lines[-2].split() == ["Average", "10.000000", "10.000000", "0.000", "1.50"]


def test_table_says_when_gaps_cover_only_some_instances() -> None:
    """With a missing reference, the gap averages the others and the table says so."""
    res = Results("tsp", "d", "lkh", [11.0, 9.0, 8.0], [10.0, None, 10.0], 3.0)
    lines = format_table(res).splitlines()
    assert lines[-3].split()[:4] == ["Average", "9.333333", "10.000000", "-5.000"]
    assert lines[-1].startswith("Ref and Gap average over the 2 instances with a reference; 1 ")
    full = Results("tsp", "d", "lkh", [11.0, 9.0], [10.0, 10.0], 3.0)
    assert "Ref and Gap average" not in format_table(full)


def baseline_cfg(*overrides: str):
    with initialize_config_dir(config_dir=str(REPO / "configs"), version_base="1.3"):
        return compose("baseline", overrides=list(overrides))


def test_baseline_tsp_writes_consistent_json(tmp_path: Path) -> None:
    """nco-baseline on a 3-instance TSP file: objectives are the tours' lengths, gaps to refs."""
    coords = kool_tsp(3, 12, 0)["coords"]
    np.savez(tmp_path / "d.npz", coords=coords, reference_costs=np.array([3.0, 3.5, 4.0]))
    out = tmp_path / "r.json"
    cfg = baseline_cfg(
        "problem=tsp",
        "solver=lkh",
        f"data={tmp_path / 'd.npz'}",
        "time_limit=1",
        "workers=1",
        f"out={out}",
        "limit=2",
    )
    run(cfg)
    res = read_results(out)
    assert res.num_instances == 2 and res.method == "lkh"
    for i, tour in enumerate(res.solutions):
        assert res.objectives[i] == tour_length(coords[i], tour)
        assert res.gaps[i] == pytest.approx(res.objectives[i] / [3.0, 3.5][i] - 1)


def test_baseline_cvrp_in_parallel(tmp_path: Path) -> None:
    """Two worker processes solve a CVRP file; each cost is its routes' length."""
    arrays = kool_cvrp(2, 8, 0, capacity=15)
    np.savez(tmp_path / "c.npz", **arrays)
    cfg = baseline_cfg(
        "problem=cvrp",
        "solver=hgs",
        f"data={tmp_path / 'c.npz'}",
        "time_limit=0.3",
        "workers=2",
        f"out={tmp_path / 'r.json'}",
    )
    res = run(cfg)
    assert read_results(tmp_path / "r.json").to_dict() == res.to_dict()
    for i, routes in enumerate(res.solutions):
        assert res.objectives[i] == routes_cost(arrays["depot"][i], arrays["locs"][i], routes)


def test_baseline_jssp_reports_proofs() -> None:
    """CP-SAT on ta01 for a short time gives a makespan no better than the known optimum 1231."""
    res = run(
        baseline_cfg(
            "problem=jssp",
            "solver=cpsat",
            "data=taillard:ta01",
            "time_limit=2",
            "workers=1",
            "save_solutions=false",
        )
    )
    assert res.names == ["ta01"] and res.objectives[0] >= 1231 and res.solutions is None
    assert res.info["bounds"][0] <= 1231


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        (["solver=hgs", "data=kool:tsp20_test"], "Unknown tsp solver"),
        (["solver=lkh"], "data= is required"),
        (["problem=cvrp", "solver=hgs", "data=kool:tsp20_test"], "not cvrp"),
        (["solver=lkh", "data=kool:tsp20_test", "time_limit=0"], "time_limit"),
    ],
)
def test_baseline_bad_arguments(overrides: list[str], match: str) -> None:
    """Unknown solvers, missing data, problem mismatches and bad limits raise ValueError."""
    with pytest.raises(ValueError, match=match):
        run(baseline_cfg(*overrides))


def test_module_entry_point(tmp_path: Path) -> None:
    """`python -m nco.cli.baseline key=value ...` prints the table and writes the JSON."""
    np.savez(tmp_path / "d.npz", coords=kool_tsp(2, 10, 1)["coords"])
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "nco.cli.baseline",
            "solver=ortools",
            f"data={tmp_path / 'd.npz'}",
            "time_limit=0.2",
            "workers=1",
            f"out={out}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "Average" in proc.stdout and read_results(out).num_instances == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.npz", "r.json"]


def test_library_file_with_raw_coordinates(tmp_path: Path) -> None:
    """A TSPLIB file with coordinates in the hundreds: solved on the unit square (LKH used to
    abort on them) with the file's EUC_2D distances, cost in that metric equal to the exact
    EUC_2D optimum, the Euclidean length of the same tour beside it."""
    from nco.problems.tsp.io import tsplib_weights
    from nco.problems.tsp.solvers import solve_exact

    coords = np.random.default_rng(3).integers(0, 1000, size=(12, 2)).astype(np.float64)
    lines = "\n".join(f"{i + 1} {int(x)} {int(y)}" for i, (x, y) in enumerate(coords))
    path = tmp_path / "raw12.tsp"
    path.write_text(
        f"NAME : raw12\nTYPE : TSP\nDIMENSION : 12\nEDGE_WEIGHT_TYPE : EUC_2D\n"
        f"NODE_COORD_SECTION\n{lines}\nEOF\n"
    )
    results = run(baseline_cfg("solver=lkh", f"data={path}", "time_limit=1", "workers=1"))
    lo, span = coords.min(0), (coords.max(0) - coords.min(0)).max()
    weights = tsplib_weights(coords, "EUC_2D")
    optimum = solve_exact({"coords": (coords - lo) / span, "weights": weights}, 10.0, 0).cost
    assert results.objectives[0] == optimum
    assert results.info["metrics"] == ["EUC_2D"]
    euclid = tour_length(coords, results.solutions[0])
    assert results.info["euclidean_costs"][0] == pytest.approx(euclid, 1e-9)
