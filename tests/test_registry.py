"""No code from files: checkpoints and buffers build only nco's registered classes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from nco import checkpoint, registry
from nco.models.bq import BQPolicy
from nco.problems.tsp import TSPEnv, TSPInstances
from nco.training.buffer import TrajectoryBuffer

MODEL = {"_target_": "nco.models.bq.BQPolicy", "dim": 16, "layers": 1, "heads": 2, "ff_dim": 32}
ENV = {"_target_": "nco.problems.tsp.TSPEnv", "num_nodes": 7}


def crafted(tmp_path: Path, model: dict, env: dict) -> Path:
    """A checkpoint file whose configs name whatever the attacker likes."""
    policy = BQPolicy(dim=16, layers=1, heads=2, ff_dim=32)
    path = tmp_path / "best.pt"
    checkpoint.save(path, policy, MODEL, {"name": "tsp", "env": ENV})
    payload = torch.load(path, weights_only=True)
    payload["model"], payload["problem"]["env"] = model, env
    torch.save(payload, path)
    return path


@pytest.mark.parametrize(
    ("model", "env", "match"),
    [
        ({"_target_": "pathlib.Path.touch", "self": "VICTIM"}, ENV, "field 'model'._target_"),
        ({"_target_": "builtins.open", "file": "VICTIM", "mode": "w"}, ENV, "not a registered"),
        (MODEL, {"_target_": "pathlib.Path.touch", "self": "VICTIM"}, "field 'problem.env'"),
        (MODEL, {"_target_": "nco.models.bq.BQPolicy", "dim": 8}, "not a registered nco env"),
        ({**MODEL, "knn": {"_target_": "pathlib.Path.touch", "self": "VICTIM"}}, ENV, "_target_"),
        ({**MODEL, "_partial_": True}, ENV, "only plain keyword arguments"),
        ({**MODEL, "_args_": ["VICTIM"]}, ENV, "only plain keyword arguments"),
        (
            {"_target_": "nco.problems.tsp.solvers.os.system", "command": "touch VICTIM"},
            ENV,
            "not a registered",
        ),
    ],
)
def test_crafted_checkpoint_is_refused_before_any_side_effect(
    tmp_path: Path, monkeypatch, model: dict, env: dict, match: str
) -> None:
    """Targets outside the allowlist, nested targets and Hydra keys are refused with one line
    naming the field; the file the payload aims at is never created."""
    monkeypatch.chdir(tmp_path)
    victim = tmp_path / "VICTIM"
    model = {k: (str(victim) if v == "VICTIM" else v) for k, v in model.items()}
    env = {k: (str(victim) if v == "VICTIM" else v) for k, v in env.items()}
    path = crafted(tmp_path, model, env)
    with pytest.raises(ValueError, match=match) as info:
        checkpoint.load(path)
    assert "\n" not in str(info.value)
    assert not victim.exists()


def test_registered_classes_and_aliases_resolve() -> None:
    """Re-exported names and defining-module names both resolve to the registered class."""
    assert registry.resolve("env", "nco.problems.tsp.TSPEnv", "f") is TSPEnv
    assert registry.resolve("env", "nco.problems.tsp.env.TSPEnv", "f") is TSPEnv
    assert registry.resolve("policy", "nco.models.bq.BQPolicy", "f") is BQPolicy
    assert "nco.problems.tsp.env.TSPEnv" in registry.registered("env")
    with pytest.raises(ValueError, match="expected a dotted class name"):
        registry.resolve("env", 3, "f")
    with pytest.raises(ValueError, match="unknown kind"):
        registry.register("optimizer", TSPEnv)


def test_every_shipped_model_config_is_registered() -> None:
    """Every configs/model option and every problem env names a registered class."""
    from omegaconf import OmegaConf

    configs = Path(__file__).resolve().parents[1] / "configs"
    for path in sorted((configs / "model").glob("*.yaml")):
        if path.stem.startswith("default_"):  # aliases: a defaults list naming another option
            continue
        registry.resolve("policy", OmegaConf.load(path)._target_, str(path))
    for path in sorted((configs / "problem").glob("*.yaml")):
        registry.resolve("env", OmegaConf.load(path).env._target_, str(path))


def test_buffer_state_names_only_registered_instance_types() -> None:
    """A Lightning checkpoint's buffer cannot name a callable: `os:system` is refused."""
    buffer = TrajectoryBuffer(None)
    buffer.add(TSPInstances(coords=torch.rand(2, 5, 2)), torch.zeros(2, 4, dtype=torch.long))
    state = buffer.state_dict()
    restored = TrajectoryBuffer(None)
    restored.load_state_dict(state)
    assert len(restored) == 2
    with pytest.raises(ValueError, match="buffer.instance_type"):
        restored.load_state_dict({**state, "instance_type": "os:system"})


def test_mismatched_model_and_problem_are_refused_before_any_work(tmp_path: Path) -> None:
    """`nco-train problem=cvrp` now takes the CVRP model; naming a TSP model for CVRP fails in
    one line at once (it used to fail after 1000 validation references), and a checkpoint whose
    model cannot read its env is refused too."""
    from training.conftest import compose_train

    from nco.training.runner import build

    cfg = compose_train(["problem=cvrp", "problem.num_customers=10"], tmp_path, tiny=False)
    assert cfg.model._target_ == "nco.models.bq_cvrp.BQCVRPPolicy"
    bad = compose_train(["problem=cvrp", "model=bq_tsp_tiny"], tmp_path, tiny=False)
    with pytest.raises(ValueError, match="reads tsp states, not cvrp"):
        build(bad)
    path = crafted(tmp_path, MODEL, {"_target_": "nco.problems.cvrp.CVRPEnv", "num_customers": 10})
    with pytest.raises(ValueError, match="model=default_cvrp"):
        checkpoint.load(path)


def test_pre_package_targets_map_into_nco_and_nothing_else() -> None:
    """Files written before nco was one package name `models.X` / `problems.X` (a Lightning
    checkpoint's buffer: `problems.jssp.types:JSSPInstances`); they resolve to nco's classes.
    A look-alike prefix or a module outside nco's packages is still refused."""
    from nco import registry
    from nco.models.jssp_transformer import JSSPTransformer
    from nco.problems.jssp.types import JSSPInstances

    assert registry.resolve("instances", "problems.jssp.types:JSSPInstances", "f") is JSSPInstances
    assert registry.resolve("policy", "models.jssp_transformer.JSSPTransformer", "f") is (
        JSSPTransformer
    )
    for bad in ("modelsx.bq.BQPolicy", "nco.modelsx.bq.BQPolicy", "nco.registry.build"):
        with pytest.raises(ValueError, match="not a registered nco policy class"):
            registry.resolve("policy", bad, "f")
