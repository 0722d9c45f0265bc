"""The adaptive Gumbeldore budget (`search.adaptive=true`): stopping rule and reallocation."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf
from toy_tree import FixedLogits, FlatEnv, TablePolicy, ToyEnv, ToyInstances, all_leaves

from nco import checkpoint, evaluation
from nco.decode import decode, decoder_kwargs
from nco.env import Batch
from nco.problems.tsp.io import save_tsp_npz
from nco.search.adaptive import gumbeldore_adaptive, gumbeldore_rounds, recording
from nco.search.counting import CountingPolicy


@dataclasses.dataclass(frozen=True)
class SizedState(Batch):
    """The choice so far (-1 before it) and how many actions the instance may pick from."""

    choice: torch.Tensor  # (B,) long
    size: torch.Tensor  # (B,) long


class SizedFlatEnv(FlatEnv):
    """One categorical choice; instance i picks among its first sizes[i] actions and scores
    the action's index."""

    def __init__(self, sizes: list[int], num_actions: int = 5) -> None:
        super().__init__(num_actions)
        self.sizes = torch.tensor(sizes)

    def reset(self, instances: ToyInstances) -> SizedState:
        return SizedState(
            choice=torch.full((instances.batch_size,), -1), size=self.sizes[instances.ids]
        )

    def step(self, state: SizedState, actions: torch.Tensor) -> SizedState:
        return SizedState(choice=actions, size=state.size)

    def action_mask(self, state: SizedState) -> torch.Tensor:
        return torch.arange(self.num_actions).view(1, -1) < state.size.view(-1, 1)

    def is_done(self, state: SizedState) -> torch.Tensor:
        return state.choice >= 0

    def objective(self, state: SizedState) -> torch.Tensor:
        return state.choice.to(torch.float64)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_no_stopping_is_the_fixed_run() -> None:
    """Thresholds 0 and no reallocation: the same sequences as the fixed budget."""
    env, policy = ToyEnv(), TablePolicy(seed=1)
    inst = env.generate(6)
    fixed, _ = gumbeldore_rounds(policy, env, inst, 2, 3, 0.5, generator=_gen(4))
    sols, log = gumbeldore_rounds(
        policy,
        env,
        inst,
        2,
        3,
        0.5,
        generator=_gen(4),
        adaptive=True,
        stop_mass=0.0,
        stop_chance=0.0,
        reallocate=False,
    )
    assert torch.equal(sols.actions, fixed.actions)
    assert [int(w.sum()) for w in log.width] == [12, 12, 12]


def test_stop_mass_one_stops_everyone_after_one_round() -> None:
    """stop_mass = 1: any sampled mass leaves less than 1 unsampled, so one round only, and
    the policy rows are those of that round."""
    env = ToyEnv()
    policy = CountingPolicy(TablePolicy(seed=3))
    inst = env.generate(5)
    sols, log = gumbeldore_rounds(
        policy, env, inst, 2, 4, 0.0, generator=_gen(0), adaptive=True, stop_mass=1.0
    )
    assert len(log.covered) == 1 and sols.actions.shape[1] == 2
    assert log.rows == [policy.rows]
    one = CountingPolicy(TablePolicy(seed=3))
    gumbeldore_rounds(one, env, inst, 2, 1, 0.0, generator=_gen(0))
    assert one.rows == policy.rows


def test_exhausted_instance_frees_its_rows_for_the_others() -> None:
    """Instance 0 has 2 sequences, instance 1 has 5. With beam 2 x 4 rounds (budget 16),
    instance 0 stops after round 1 (domain exhausted) and instance 1 gets its share, 4, in
    round 2, which exhausts it: every sequence once, within the budget."""
    env, policy = SizedFlatEnv([2, 5]), FixedLogits([0.2, -0.1, 0.4, 0.0, -0.3])
    sols, log = gumbeldore_rounds(
        policy, env, env.generate(2), 2, 4, 0.0, update="none", generator=_gen(1), adaptive=True
    )
    assert [w.tolist() for w in log.width] == [[2, 2], [0, 4]]
    found = [sorted(a for a in sols.actions[i, :, 0].tolist() if a >= 0) for i in range(2)]
    assert found == [[0, 1], [0, 1, 2, 3, 4]]
    assert sum(int(w.sum()) for w in log.width) <= 16
    assert torch.allclose(log.covered[-1], torch.ones(2, dtype=torch.float64))


def test_reallocation_never_exceeds_the_fixed_budget() -> None:
    """Whatever stops when, the sequences given out stay within N x beam x rounds."""
    env, policy = ToyEnv(), TablePolicy(seed=6, scale=2.0)
    n, k, rounds = 9, 3, 4
    sols, log = gumbeldore_rounds(
        policy,
        env,
        env.generate(n),
        k,
        rounds,
        1.0,
        generator=_gen(2),
        adaptive=True,
        stop_chance=0.5,
    )
    assert sum(int(w.sum()) for w in log.width) <= n * k * rounds
    assert int(sols.valid.sum()) <= n * len(all_leaves())
    for i in range(n):
        leaves = [tuple(a) for a in sols.actions[i].tolist() if a[0] >= 0]
        assert len(set(leaves)) == len(leaves)


def test_decode_routes_adaptive_and_records_logs() -> None:
    """`method: gumbeldore` with `adaptive` goes to the adaptive driver, which records its log."""
    fn, kwargs = decoder_kwargs(
        {"method": "gumbeldore", "beam_width": 2, "rounds": 2, "sigma": 0.1, "adaptive": True}
    )
    assert fn is gumbeldore_adaptive and kwargs["adaptive"] is True
    env, policy = ToyEnv(), TablePolicy(seed=1)
    cfg = {
        "method": "gumbeldore",
        "beam_width": 2,
        "rounds": 2,
        "sigma": 0.1,
        "adaptive": False,
        "batch_size": 3,
    }
    with recording() as logs:
        sols = decode(policy, env, env.generate(5), cfg, _gen(0))
    assert len(logs) == 2 and sols.actions.shape[0] == 5
    assert logs[0].extend(logs[1]).stacked("best").shape == (2, 5)


@pytest.mark.parametrize(
    ("key", "value"), [("stop_mass", 1.5), ("stop_chance", -0.1), ("max_width", 1)]
)
def test_bad_settings_are_refused(key: str, value: float) -> None:
    """Thresholds outside [0, 1] and a max_width below the beam width raise ValueError."""
    env, policy = ToyEnv(), TablePolicy()
    with pytest.raises(ValueError, match=key):
        gumbeldore_rounds(policy, env, env.generate(1), 2, 2, 0.1, adaptive=True, **{key: value})


def test_nco_eval_writes_per_round_statistics(tmp_path) -> None:
    """nco-eval with search=gumbeldore_adaptive puts the per-round statistics of every instance
    (in chunks of 2) into the results JSON's info.anytime."""
    configs = Path(__file__).resolve().parents[2] / "configs"
    model = OmegaConf.to_container(OmegaConf.load(configs / "model" / "bq_tsp_tiny.yaml"))
    problem = OmegaConf.create({"problem": OmegaConf.load(configs / "problem" / "tsp.yaml")})
    problem.problem.num_nodes = 8
    torch.manual_seed(0)
    problem_cfg = OmegaConf.to_container(problem, resolve=True)["problem"]
    checkpoint.save(tmp_path / "best.pt", instantiate(model), model, problem_cfg)
    coords = np.random.default_rng(0).uniform(size=(3, 8, 2))
    save_tsp_npz(tmp_path / "tsp8.npz", coords, np.array([3.0, 3.0, 3.0]), "made up")
    with initialize_config_dir(config_dir=str(configs), version_base="1.3"):
        cfg = compose(
            config_name="evaluate",
            overrides=[
                f"checkpoint={tmp_path / 'best.pt'}",
                f"data={tmp_path / 'tsp8.npz'}",
                f"out={tmp_path / 'r.json'}",
                "progress=false",
                "search=gumbeldore_adaptive",
                "search.beam_width=2",
                "search.rounds=2",
                "batch_size=2",
            ],
        )
    evaluation.run(cfg)
    info = json.loads((tmp_path / "r.json").read_text())["info"]["anytime"]
    assert 1 <= info["rounds"] <= 8 and len(info["rows"]) == info["rounds"]
    for name in ("covered", "estimate", "stderr", "best", "nodes", "width"):
        assert all(len(row) == 3 for row in info[name])
    best = json.loads((tmp_path / "r.json").read_text())["objectives"]
    assert info["best"][-1] == pytest.approx([-c for c in best])
