"""CVRPLIB files in their own metric: .sol references computed by hand, folders of files with
nco-baseline and nco-eval, one cost for nco-eval and nco-solve, and clear errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from nco import baselines, checkpoint, evaluation, solving
from nco.datasets import load_dataset
from nco.problems.cvrp.io import metric_cost
from tests.tiny_files import TINY6_VRP

CONFIGS = Path(__file__).resolve().parents[3] / "configs"
# By hand, EUC_2D (nint): [1, 5] 57 + 36 + 22 = 115; [2, 3] 50 + 61 + 42 = 153;
# [4, 6] 50 + 45 + 22 = 117; total 385.
SOL = "Route #1: 1 5\nRoute #2: 2 3\nRoute #3: 4 6\nCost 385\n"


def compose_cfg(name: str, overrides: list[str]) -> DictConfig:
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        return compose(config_name=name, overrides=overrides)


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    """tiny6.vrp with its .sol, and a CEIL_2D copy without one."""
    (tmp_path / "tiny6.vrp").write_text(TINY6_VRP)
    (tmp_path / "tiny6.sol").write_text(SOL)
    (tmp_path / "ceil6.vrp").write_text(
        TINY6_VRP.replace("tiny6", "ceil6").replace("EUC_2D", "CEIL_2D")
    )
    return tmp_path


def test_sol_reference_by_hand(folder: Path) -> None:
    """The .sol's routes cost 385 in EUC_2D (by hand above); the Euclidean length is less."""
    data = load_dataset(folder / "tiny6.vrp")
    assert data.metric == "EUC_2D" and data.names == ["tiny6"]
    assert data.references.tolist() == [385.0] and data.reference_source == "tiny6.sol"
    instance = data.instance(0)
    assert metric_cost(instance, [[1, 5], [2, 3], [4, 6]], "EUC_2D") == 385
    assert instance["weights"].shape == (7, 7) and instance["weights"][0, 1] == 57


@pytest.mark.parametrize(
    ("sol", "match"),
    [
        ("Route #1: 1 5\nRoute #2: 2 3\nRoute #3: 4 6\nCost 300\n", "field 'Cost' says 300"),
        ("Route #1: 1 5 2\nRoute #2: 3\nRoute #3: 4 6\nCost 1\n", "carries 13 > capacity 10"),
        ("Route #1: 1 5\nRoute #2: 2 3\nCost 1\n", "each customer 1..6 exactly once"),
    ],
)
def test_bad_sol_files_are_refused_in_one_line(folder: Path, sol: str, match: str) -> None:
    """A .sol with a wrong cost, an overloaded route or a missing customer names the file."""
    (folder / "tiny6.sol").write_text(sol)
    with pytest.raises(ValueError, match=match) as info:
        load_dataset(folder / "tiny6.vrp")
    assert "tiny6.sol" in str(info.value) and "\n" not in str(info.value)


def test_unsupported_section_is_one_clear_line(tmp_path: Path) -> None:
    """CVRPLIB sections nco does not read (e.g. time windows) are refused, naming the section."""
    path = tmp_path / "tw.vrp"
    path.write_text(
        TINY6_VRP.replace("DEPOT_SECTION", "TIME_WINDOW_SECTION\n1 0 100\nDEPOT_SECTION")
    )
    with pytest.raises(ValueError, match="section TIME_WINDOW_SECTION is not supported"):
        load_dataset(path)


def test_baseline_on_a_folder_in_each_files_metric(folder: Path) -> None:
    """nco-baseline on a folder: one row per file, each in its own metric, the gap to the .sol
    where there is one; HGS optimises the file's rounded distances."""
    results = baselines.run(
        compose_cfg(
            "baseline",
            ["problem=cvrp", "solver=hgs", f"data={folder}", "time_limit=1", "workers=1"],
        )
    )
    assert results.names == ["ceil6", "tiny6"]
    assert results.info["metrics"] == ["CEIL_2D", "EUC_2D"]
    assert results.references == [None, 385.0]
    data = [load_dataset(folder / f"{n}.vrp") for n in results.names]
    for d, cost, routes in zip(data, results.objectives, results.solutions, strict=True):
        assert cost == metric_cost(d.instance(0), routes, d.metric)
    assert results.objectives[1] <= 385 and results.gaps[1] <= 0
    assert results.objectives[0] >= results.objectives[1]  # ceil >= nint on every edge


def test_eval_and_solve_agree_on_a_cvrplib_file(folder: Path) -> None:
    """The same .vrp and checkpoint give one cost with nco-eval and nco-solve (both scale into
    the unit square for the policy and score in the file's metric)."""
    model = OmegaConf.to_container(OmegaConf.load(CONFIGS / "model" / "bq_cvrp_tiny.yaml"))
    problem = {
        "name": "cvrp",
        "env": {"_target_": "nco.problems.cvrp.CVRPEnv", "num_customers": 6, "capacity": 10},
    }
    torch.manual_seed(0)
    checkpoint.save(folder / "c.pt", instantiate(model), model, problem)
    solved = solving.run(
        compose_cfg(
            "solve",
            [f"instance={folder / 'tiny6.vrp'}", f"checkpoint={folder / 'c.pt'}", "plot=false",
             f"out={folder / 's.json'}"],
        )
    )  # fmt: skip
    results = evaluation.run(
        compose_cfg(
            "evaluate",
            ["progress=false", f"checkpoint={folder / 'c.pt'}", f"data={folder / 'tiny6.vrp'}"],
        )
    )
    assert results.objectives == [solved["cost"]] and solved["edge_weight_type"] == "EUC_2D"
    assert results.info["euclidean_costs"][0] == pytest.approx(solved["euclidean_cost"], 1e-9)
    assert results.references == [385.0] and solved["reference"] == 385.0
    assert np.isclose(results.gaps[0], solved["gap"])
