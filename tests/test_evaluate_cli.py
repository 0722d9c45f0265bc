"""nco-eval: results JSON consistent with the decoded tours, errors on bad input, overrides."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.errors import MissingConfigException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from nco import checkpoint, evaluation, inference
from nco.cli import evaluate as evaluate_cli
from nco.models.bq import BQPolicy
from nco.problems.jssp import JSSPEnv
from nco.problems.jssp.io import write_npz
from nco.problems.tsp import TSPInstances
from nco.problems.tsp.io import save_tsp_npz
from nco.results import read_results
from nco.search import greedy

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
REFERENCES = np.array([3.0, 3.5, 2.5, 4.0])


def compose_cfg(name: str, overrides: list[str]) -> DictConfig:
    """A top-level config composed like the command line would."""
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        return compose(config_name=name, overrides=overrides)


def tour_lengths(coords: np.ndarray, tours: list[list[int]]) -> np.ndarray:
    """Closed tour lengths computed with numpy, independently of the env."""
    out = []
    for c, tour in zip(coords, tours, strict=True):
        pts = c[tour]
        out.append(np.linalg.norm(pts - np.roll(pts, -1, axis=0), axis=1).sum())
    return np.array(out)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """A tiny random-weight BQ checkpoint for TSP10 and 4 TSP10 instances with references."""
    root = tmp_path_factory.mktemp("eval")
    model = OmegaConf.to_container(OmegaConf.load(CONFIGS / "model" / "bq_tsp_tiny.yaml"))
    problem = OmegaConf.create({"problem": OmegaConf.load(CONFIGS / "problem" / "tsp.yaml")})
    problem.problem.num_nodes = 10
    torch.manual_seed(0)
    problem_cfg = OmegaConf.to_container(problem, resolve=True)["problem"]
    checkpoint.save(root / "best.pt", instantiate(model), model, problem_cfg)
    coords = np.random.default_rng(0).uniform(size=(4, 10, 2))
    save_tsp_npz(root / "tsp10.npz", coords, REFERENCES, "made up")
    return {"checkpoint": root / "best.pt", "data": root / "tsp10.npz", "root": root}


def run_eval(files: dict[str, Path], *overrides: str) -> dict:
    """Run nco-eval in-process and return the written JSON."""
    out = files["root"] / "r.json"
    cfg = compose_cfg(
        "evaluate",
        [
            f"checkpoint={files['checkpoint']}",
            f"data={files['data']}",
            f"out={out}",
            "progress=false",
            *overrides,
        ],
    )
    evaluation.run(cfg)
    return json.loads(out.read_text())


def check_consistent(result: dict, coords: np.ndarray, num: int) -> None:
    """Objectives are the lengths of the returned tours; gaps and means follow from them."""
    assert result["num_instances"] == num == len(result["objectives"])
    tours = [[0, *actions] for actions in result["solutions"]]
    for tour in tours:
        assert sorted(tour) == list(range(coords.shape[1]))
    np.testing.assert_allclose(result["objectives"], tour_lengths(coords[:num], tours), rtol=1e-12)
    costs, refs = np.array(result["objectives"]), REFERENCES[:num]
    np.testing.assert_allclose(result["references"], refs)
    np.testing.assert_allclose(result["gaps"], (costs - refs) / refs, rtol=1e-12)
    assert result["mean_gap"] == pytest.approx(100 * np.mean((costs - refs) / refs), rel=1e-12)
    assert result["mean_cost"] == pytest.approx(costs.mean(), rel=1e-12)
    assert result["info"]["instances_per_s"] > 0 and result["wall_time_s"] > 0


def test_greedy_json_matches_direct_decoding(files) -> None:
    """Greedy with limit=3: consistent JSON, equal to greedy decoding the loaded checkpoint."""
    result = run_eval(files, "search=greedy", "limit=3", "batch_size=2", "save_solutions=true")
    coords = np.load(files["data"])["coords"]
    check_consistent(result, coords, 3)
    assert result["info"]["limit"] == 3  # a rerun can tell a limited result from a full one
    loaded = checkpoint.load(files["checkpoint"])
    direct = greedy(loaded.policy, loaded.env, TSPInstances(torch.from_numpy(coords[:3])))
    np.testing.assert_allclose(result["objectives"], -direct.best().objective.numpy(), rtol=1e-12)
    assert read_results(files["root"] / "r.json").num_instances == 3
    assert result["method"] == "best.pt greedy"  # augment 1 and no starts go unnamed


def test_offset_decodes_a_slice_equal_to_that_part_of_the_whole(files) -> None:
    """offset=1 limit=2 decodes instances 1 and 2 against their references, as the whole run
    does; an offset past the data is an error naming it."""
    whole = run_eval(files, "search=greedy", "save_solutions=true")
    part = run_eval(files, "search=greedy", "offset=1", "limit=2", "save_solutions=true")
    assert part["objectives"] == whole["objectives"][1:3]
    assert part["solutions"] == whole["solutions"][1:3]
    np.testing.assert_allclose(part["references"], REFERENCES[1:3])
    assert (part["info"]["offset"], part["info"]["limit"], whole["info"]["offset"]) == (1, 2, 0)
    assert run_eval(files, "offset=3")["references"] == [REFERENCES[3]]
    with pytest.raises(ValueError, match=r"tsp10.npz: expected offset in 0..3 \(4 instances\)"):
        run_eval(files, "offset=4")


def test_gumbeldore_is_consistent_and_reproducible(files) -> None:
    """Gumbeldore 4 x 2 gives consistent JSON; the same seed gives the same tours."""
    args = (
        "search=gumbeldore",
        "search.beam_width=4",
        "search.rounds=2",
        "search.p_min=0.9",
        "batch_size=3",
        "save_solutions=true",
        "seed=5",
    )
    first = run_eval(files, *args)
    check_consistent(first, np.load(files["data"])["coords"], 4)
    second = run_eval(files, *args)
    assert first["solutions"] == second["solutions"]
    assert first["info"]["search"]["p_min"] == 0.9


def test_solutions_are_optional(files) -> None:
    """Without save_solutions the JSON's solutions field is null."""
    assert run_eval(files, "limit=1")["solutions"] is None


def test_missing_checkpoint_is_reported(files) -> None:
    """A checkpoint path that does not exist raises ValueError naming it."""
    cfg = compose_cfg("evaluate", [f"checkpoint={files['root'] / 'nope.pt'}", "data=x.npz"])
    with pytest.raises(ValueError, match="nope.pt not found"):
        evaluation.run(cfg)


def test_shipped_checkpoints_are_named_and_unknown_names_listed() -> None:
    """`shipped:<name>` is data/checkpoints/<name>/best.pt wherever nco is installed; an
    unknown name raises ValueError listing the shipped ones."""
    names = inference.shipped_checkpoints()
    assert {"tsp20", "cvrp20", "tsp20_quick"} <= set(names)
    path = inference.check_checkpoint("shipped:tsp20", "nco-eval")
    assert path == inference.DATA_DIR / "checkpoints" / "tsp20" / "best.pt" and path.is_file()
    with pytest.raises(ValueError, match=r"shipped:tsp21 is not shipped; expected one of .*"):
        inference.check_checkpoint("shipped:tsp21", "nco-solve")
    with pytest.raises(ValueError, match="shipped:cvrp20, shipped:cvrp20_quick"):
        inference.check_checkpoint("shipped:", "nco-eval")


def test_problem_mismatch_is_reported(files) -> None:
    """A TSP checkpoint on a JSSP dataset raises ValueError naming both problems."""
    path = files["root"] / "jssp.npz"
    write_npz(path, JSSPEnv(3, 3).generate(2, torch.Generator().manual_seed(0)))
    cfg = compose_cfg("evaluate", [f"checkpoint={files['checkpoint']}", f"data={path}"])
    with pytest.raises(ValueError, match="tsp policy but .* holds jssp instances"):
        evaluation.run(cfg)


def test_unknown_search_method_lists_valid_ones(files) -> None:
    """An unknown method raises ValueError listing the decoders; an unknown group is Hydra's."""
    cfg = compose_cfg(
        "evaluate",
        [f"checkpoint={files['checkpoint']}", f"data={files['data']}", "search.method=magic"],
    )
    with pytest.raises(ValueError, match="expected one of .*gumbeldore"):
        evaluation.run(cfg)
    with pytest.raises(MissingConfigException, match="gumbeldore"):
        compose_cfg("evaluate", ["search=magic"])


def test_knn_is_automatic_per_problem_and_can_be_switched_off() -> None:
    """knn=null: the descriptor's rule (CVRP 250 beyond 250 customers, TSP never) unless the
    checkpoint set one; knn=0 / none / off / false: no restriction; k >= 1 wins; bad values
    raise."""
    policy = BQPolicy(dim=8, layers=1, heads=2, ff_dim=8)
    assert inference.configure_policy(policy, "tsp", 500, None, None)["knn"] is None
    assert inference.configure_policy(policy, "cvrp", 250, None, None)["knn"] is None
    assert inference.configure_policy(policy, "cvrp", 251, "bf16", None) == {
        "precision": "bf16",
        "knn": 250,
    }
    assert inference.configure_policy(policy, "tsp", 500, None, None, saved_knn=100)["knn"] == 100
    assert inference.configure_policy(policy, "tsp", 1000, None, 40)["knn"] == 40
    for off in (0, "0", "none", "off", "OFF", False):
        assert inference.configure_policy(policy, "cvrp", 1000, None, off)["knn"] is None, off
        assert policy.knn is None
    with pytest.raises(ValueError, match="precision"):
        inference.configure_policy(policy, "tsp", 10, "fp16", None)
    for bad in (-3, "many", True):
        with pytest.raises(ValueError, match="knn"):
            inference.configure_policy(policy, "tsp", 10, None, bad)


def test_console_entry_point(files, monkeypatch, capsys) -> None:
    """`main` parses key=value arguments, prints the table with instances/s and writes out."""
    out = files["root"] / "main.json"
    argv = [
        "nco-eval",
        f"checkpoint={files['checkpoint']}",
        f"data={files['data']}",
        "limit=2",
        "progress=false",
        f"out={out}",
    ]
    monkeypatch.setattr(sys, "argv", argv)
    evaluate_cli.main()
    printed = capsys.readouterr().out
    assert "instances/s" in printed and "Average" in printed
    assert json.loads(out.read_text())["num_instances"] == 2
