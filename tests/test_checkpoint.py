"""Inference checkpoints: save/load round trip and validation of every field."""

from __future__ import annotations

import pytest
import torch

from nco import checkpoint
from nco.models.bq import BQPolicy
from nco.problems.tsp import TSPEnv

MODEL = {"_target_": "nco.models.bq.BQPolicy", "dim": 16, "layers": 1, "heads": 2, "ff_dim": 32}
PROBLEM = {
    "name": "tsp",
    "num_nodes": 7,
    "env": {"_target_": "nco.problems.tsp.TSPEnv", "num_nodes": 7},
}


@pytest.fixture
def saved(tmp_path) -> tuple[BQPolicy, object]:
    """A seeded tiny policy saved to best.pt."""
    torch.manual_seed(1)
    policy = BQPolicy(dim=16, layers=1, heads=2, ff_dim=32)
    path = tmp_path / "best.pt"
    checkpoint.save(path, policy, MODEL, PROBLEM, {"epoch": 3, "val": {"val/objective": -2.5}})
    return policy, path


def test_round_trip_gives_the_same_policy_and_env(saved) -> None:
    """The loaded policy gives identical logits, in eval mode, with the saved env and metadata."""
    policy, path = saved
    loaded = checkpoint.load(path)
    assert isinstance(loaded.env, TSPEnv) and loaded.env.num_nodes == 7
    assert not loaded.policy.training
    state = loaded.env.reset(loaded.env.generate(3, torch.Generator().manual_seed(0)))
    assert torch.equal(loaded.policy(state), policy.eval()(state))
    assert loaded.meta["epoch"] == 3 and loaded.meta["val"]["val/objective"] == -2.5
    assert loaded.meta["nco_version"] and loaded.meta["date"]
    assert loaded.model == MODEL and loaded.problem == PROBLEM


def test_file_is_weights_only_loadable(saved) -> None:
    """The raw file loads with torch.load(weights_only=True)."""
    _, path = saved
    assert set(torch.load(path, weights_only=True)) == set(checkpoint.FIELDS)


@pytest.mark.parametrize("field", sorted(checkpoint.FIELDS))
def test_missing_field_is_named(saved, field) -> None:
    """A checkpoint without one of its fields raises ValueError naming that field."""
    _, path = saved
    payload = torch.load(path, weights_only=True)
    del payload[field]
    torch.save(payload, path)
    with pytest.raises(ValueError, match=f"field '{field}' is missing"):
        checkpoint.load(path)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda p: p.update(format="other"), "field 'format' is 'other'"),
        (lambda p: p["model"].pop("_target_"), "model._target_' is missing"),
        (lambda p: p["problem"].pop("env"), "problem.env' is missing"),
        (lambda p: p["model"].update(dim=32, heads=2), "'weights' does not fit field 'model'"),
        (lambda p: p.update(meta=[1]), "field 'meta' must be a dict"),
    ],
)
def test_bad_content_raises(saved, edit, message) -> None:
    """Wrong format, incomplete configs and mismatched weights raise ValueError."""
    _, path = saved
    payload = torch.load(path, weights_only=True)
    edit(payload)
    torch.save(payload, path)
    with pytest.raises(ValueError, match=message):
        checkpoint.load(path)


def test_save_needs_problem_env(tmp_path) -> None:
    """Saving without an env config is refused."""
    with pytest.raises(ValueError, match="problem.env"):
        checkpoint.save(tmp_path / "x.pt", BQPolicy(16, 1, 2, 32), MODEL, {"name": "tsp"})


@pytest.mark.parametrize(
    ("name", "result"),
    [
        ("cvrp20_quick", "cvrp20_quick_on_cvrp20_greedy"),
        ("tsp20_quick", "tsp20_quick_on_tsp100_greedy"),
    ],
)
def test_shipped_format1_checkpoints_decode_as_when_they_were_measured(name, result) -> None:
    """Format-1 files (ReLU, one ReZero weight per residual) load with that form made explicit
    and reproduce their committed greedy results on the first instances exactly."""
    import json
    from pathlib import Path

    from nco.datasets import load_dataset
    from nco.search import greedy

    root = Path(__file__).resolve().parents[1] / "data"
    loaded = checkpoint.load(root / "checkpoints" / name / "best.pt")
    assert (loaded.model["activation"], loaded.model["rezero"]) == ("relu", "separate")
    expected = json.loads((root / "results" / "checkpoints" / f"{result}.json").read_text())
    dataset = load_dataset(expected["dataset"]).head(5)
    instances = type(loaded.env.generate(1))(
        **{k: torch.as_tensor(v) for k, v in dataset.arrays.items()}
    )
    cost = loaded.env.cost(greedy(loaded.policy, loaded.env, instances).best().objective)
    assert cost.tolist() == pytest.approx(expected["objectives"][:5], rel=1e-5)


def test_new_checkpoints_are_the_current_format_with_the_paper_layers(tmp_path) -> None:
    """A fresh BQ policy uses GELU and one shared ReZero weight, and saves in the current
    format (3), whose missing keys mean the defaults."""
    policy = BQPolicy(dim=16, layers=1, heads=2, ff_dim=32)
    assert "encoder.layers.0.alpha" in policy.state_dict()
    checkpoint.save(tmp_path / "b.pt", policy, MODEL, PROBLEM)
    assert torch.load(tmp_path / "b.pt", weights_only=True)["format"] == "nco-checkpoint-3"
    assert "activation" not in checkpoint.load(tmp_path / "b.pt").model  # defaults, not legacy
