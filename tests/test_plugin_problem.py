"""A problem added from outside nco/ (and outside problems/): its package registers a
descriptor, env, instances and policy, and nco-eval, nco-solve and nco-baseline run on it."""

from __future__ import annotations

import importlib
import json
import shutil
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from nco import baselines, checkpoint, evaluation, registry, solving

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
WEIGHTS = [[0.5, 2.0, 1.0], [3.0, 1.0, 2.0]]  # optimum: heaviest first -> 5.5 and 10.0


def compose_cfg(name: str, overrides: list[str]) -> DictConfig:
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        return compose(config_name=name, overrides=overrides)


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> dict[str, Path]:
    """The plug-in package on sys.path, a data file and a checkpoint of its policy."""
    root = tmp_path_factory.mktemp("plugin")
    package = root / "toyplug"
    package.mkdir()
    shutil.copy(Path(__file__).parent / "plugin" / "toyplug_source.py", package / "__init__.py")
    sys.path.insert(0, str(root))
    try:
        module = importlib.import_module("toyplug")
        data = root / "two.toy"
        data.write_text("\n".join(" ".join(map(str, row)) for row in WEIGHTS) + "\n")
        model = {"_target_": "toyplug.ToyPolicy", "scale": 5.0}
        problem = {"name": "toy", "env": {"_target_": "toyplug.ToyEnv", "num_items": 3}}
        checkpoint.save(root / "toy.pt", module.ToyPolicy(5.0), model, problem)
        yield {"root": root, "data": data, "checkpoint": root / "toy.pt"}
    finally:
        sys.path.remove(str(root))


def test_registry_knows_the_plugin_problem(toy) -> None:
    """The descriptor is found by name and by env; its classes are allowlisted."""
    spec = registry.get_problem("toy")
    assert "toy" in registry.problem_names()
    assert registry.problem_of_env(spec.env()) is spec
    assert "toyplug.ToyPolicy" in registry.registered("policy")
    loaded = checkpoint.load(toy["checkpoint"])
    assert type(loaded.env).__name__ == "ToyEnv"


def test_nco_eval_runs_on_the_plugin_problem(toy) -> None:
    """Greedy decoding picks the heaviest item first: the optimal weighted sums 5.5 and 10."""
    out = toy["root"] / "eval.json"
    results = evaluation.run(
        compose_cfg(
            "evaluate",
            [
                "progress=false",
                f"checkpoint={toy['checkpoint']}",
                f"data={toy['data']}",
                f"out={out}",
            ],
        )
    )
    assert results.problem == "toy"
    assert results.objectives == pytest.approx([5.5, 10.0])
    assert json.loads(out.read_text())["mean_cost"] == pytest.approx(7.75)


def test_nco_solve_runs_on_the_plugin_problem(toy) -> None:
    """nco-solve writes the descriptor's solution field and the checked cost (no plot)."""
    out = toy["root"] / "solve.json"
    payload = solving.run(
        compose_cfg(
            "solve",
            [f"instance={toy['data']}", f"checkpoint={toy['checkpoint']}", "index=1", f"out={out}"],
        )
    )
    assert payload["problem"] == "toy" and payload["order"] == [0, 2, 1]
    assert payload["cost"] == pytest.approx(10.0) and "plot" not in payload


def test_nco_baseline_runs_the_plugin_solver(toy) -> None:
    """nco-baseline finds the plug-in's solver through the registry."""
    cfg = compose_cfg(
        "baseline",
        ["problem.name=toy", "solver=sorted", f"data={toy['data']}", "workers=1", "time_limit=1"],
    )
    results = baselines.run(cfg)
    assert results.objectives == pytest.approx([5.5, 10.0])


@pytest.mark.parametrize(
    "module",
    [
        "dataset", "datasets", "evaluation", "inference", "solving", "scoring", "baselines",
        "registry", "problem", "training/runner", "training/references", "cli/evaluate",
        "cli/solve", "cli/baseline", "cli/train", "cli/importer",
    ],
)  # fmt: skip
def test_core_modules_name_no_problem(module: str) -> None:
    """The dispatching core holds no problem name or nco.problems.<p> import outside docstrings
    and comments: problems are reached only through the registry."""
    import ast

    source = (Path(__file__).resolve().parents[1] / "nco" / f"{module}.py").read_text()
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    names = ("tsp", "cvrp", "jssp", "gomoku")
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings:
                assert node.value not in names, (module, node.value)
                assert not any(f"problems.{n}" in node.value for n in names), (module, node.value)
        if isinstance(node, ast.ImportFrom):
            assert not (node.module or "").startswith("nco.problems."), (module, node.module)
