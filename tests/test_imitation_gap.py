"""scripts/imitation_gap.py: teacher-forced accuracy / NLL along solver tours and greedy gap."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from script_loader import load_script
from torch import nn

from nco import checkpoint
from nco.models.bq import BQPolicy
from nco.problems.tsp import TSPEnv
from nco.problems.tsp.types import TSPInstances, TSPState

gap = load_script("imitation_gap")

N = 8
MODEL = {"_target_": "nco.models.bq.BQPolicy", "dim": 16, "layers": 1, "heads": 2, "ff_dim": 32}
PROBLEM = {
    "name": "tsp",
    "num_nodes": N,
    "env": {"_target_": "nco.problems.tsp.TSPEnv", "num_nodes": N},
}


class Expert(nn.Module):
    """Puts (almost) all mass on the successor of the current node in the solver's tour."""

    def __init__(self, instances: TSPInstances, actions: torch.Tensor) -> None:
        super().__init__()
        tour = torch.cat([torch.zeros(len(actions), 1, dtype=torch.long), actions], 1)
        self.coords = instances.coords
        self.succ = torch.zeros_like(tour).scatter(1, tour, tour.roll(-1, 1))

    def forward(self, state: TSPState) -> torch.Tensor:
        same = (state.coords[:, None] == self.coords[None]).flatten(2).all(-1)
        nxt = self.succ[same.long().argmax(1), state.origin]
        return torch.zeros(state.coords.shape[:2]).scatter(1, nxt[:, None], 100.0)


class Uniform(nn.Module):
    """Equal logits for every action."""

    def forward(self, state: TSPState) -> torch.Tensor:
        return torch.zeros(state.coords.shape[:2])


@pytest.fixture(scope="module")
def solved() -> tuple[TSPEnv, TSPInstances, object]:
    """Five seeded TSP8 instances with exact tours."""
    env = TSPEnv(N)
    instances = env.generate(5, torch.Generator().manual_seed(3))
    return env, instances, gap.solve("tsp", instances, "exact", 10.0)


def test_solver_actions_are_env_actions(solved) -> None:
    """Every reference is a permutation of nodes 1..n-1 (node 0 is the env's start)."""
    _, _, ref = solved
    assert ref.actions.shape == (5, N - 1) and ref.optimal == 5
    assert (ref.actions.sort(1).values == torch.arange(1, N)).all()


def test_expert_policy_imitates_perfectly_and_decodes_the_solver_tour(solved) -> None:
    """Mass on the solver's next action: accuracy 1, NLL 0 and greedy gap 0."""
    env, instances, ref = solved
    out = gap.measure(Expert(instances, ref.actions), env, instances, ref, batch_size=2)
    assert out["accuracy"] == 1.0 and out["accuracy_by_step"] == [1.0] * (N - 1)
    assert out["nll"] == pytest.approx(0.0, abs=1e-12)
    assert out["greedy_gap"] == pytest.approx(0.0, abs=1e-9)
    assert out["greedy_mean_cost"] == pytest.approx(float(ref.costs.mean()), rel=1e-12)


def test_uniform_policy_nll_is_the_mean_log_of_feasible_actions(solved) -> None:
    """Step t of a TSP8 tour has n-1-t feasible actions, so the NLL is log(k) averaged over
    k = 7..1, whatever the tour."""
    env, instances, ref = solved
    out = gap.measure(Uniform(), env, instances, ref)
    logs = [math.log(k) for k in range(N - 1, 0, -1)]
    assert out["nll"] == pytest.approx(sum(logs) / len(logs), rel=1e-12)
    assert out["nll_by_step"] == pytest.approx(logs, rel=1e-12)
    assert out["greedy_gap"] >= -1e-9  # the exact tours are optimal


def test_wrong_references_are_rejected(solved) -> None:
    """References whose replayed cost is not the solver's cost fail loudly."""
    env, instances, ref = solved
    bad = gap.Reference(ref.actions, ref.costs * 1.01, ref.optimal, ref.seconds)
    with pytest.raises(ValueError, match="solver's costs"):
        gap.measure(Uniform(), env, instances, bad)


def test_main_writes_the_table_and_json(tmp_path: Path, capsys) -> None:
    """Two tiny checkpoints: one table row and one JSON entry each, with every field."""
    paths = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        path = tmp_path / f"p{seed}.pt"
        checkpoint.save(path, BQPolicy(16, 1, 2, 32), MODEL, PROBLEM, {"mode": "si", "epoch": 4})
        paths.append(str(path))
    out = tmp_path / "res" / "imitation.json"
    args = ["--size", str(N), "--num", "4", "--seed", "5", "--checkpoints", *paths]
    assert gap.main([*args, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert all(p in printed for p in paths) and "greedy gap" in printed
    data = json.loads(out.read_text())
    assert data["problem"] == "tsp" and data["size"] == N and data["num_instances"] == 4
    assert data["seed"] == 5 and data["solver"] == "exact"
    assert data["reference_proven_optimal"] == 4 and data["reference_mean_cost"] > 0
    assert [r["path"] for r in data["checkpoints"]] == paths
    for row in data["checkpoints"]:
        assert (row["mode"], row["epoch"]) == ("si", 4)
        assert 0.0 <= row["accuracy"] <= 1.0 and row["nll"] > 0 and row["greedy_gap"] >= -1e-9
        assert len(row["accuracy_by_step"]) == len(row["nll_by_step"]) == N - 1
        assert row["accuracy_by_step"][-1] == 1.0  # the last node is forced


def test_missing_checkpoint_names_the_path(tmp_path: Path, capsys) -> None:
    """A checkpoint path that does not exist stops the run with its path in the message."""
    missing = tmp_path / "nope" / "best.pt"
    with pytest.raises(SystemExit) as exc:
        gap.main(["--size", str(N), "--num", "2", "--checkpoints", str(missing)])
    assert exc.value.code == 2
    assert f"{missing}: checkpoint file not found" in capsys.readouterr().err
