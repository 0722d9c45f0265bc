"""training.greedy_candidate: the greedy solution joins each instance's candidates."""

from __future__ import annotations

import torch
from loop_helpers import Recorder, fit

from nco.distributed.chunks import better_of
from nco.search.solutions import Best


def test_better_of_takes_the_larger_objective_pads_alike_and_keeps_the_first_on_ties() -> None:
    a = Best(torch.tensor([[1, 2, -1], [3, 4, 5]]), torch.tensor([-5.0, -7.0], dtype=torch.float64))
    b = Best(torch.tensor([[6, 7], [8, 9]]), torch.tensor([-5.0, -6.0], dtype=torch.float64))
    got = better_of(a, b)
    assert got.actions.tolist() == [[1, 2, -1], [8, 9, -1]]
    assert got.objective.tolist() == [-5.0, -6.0]


def epoch_stats(tiny_cfg, *overrides: str) -> tuple[dict[str, float], list[float]]:
    """One epoch (Gumbeldore 4 x 2 with an untrained policy); the epoch's sampling stats and
    the cost of every buffered trajectory, replayed through the env."""
    cfg = tiny_cfg("trainer.max_epochs=1", *overrides)
    _, data = fit(cfg, Recorder())
    env = data.env
    costs = []
    for instances, actions in data.buffer.groups:
        state = env.reset(instances)
        for t in range(actions.shape[1]):  # TSP10: every sequence has the same length
            state = env.step(state, actions[:, t])
        costs += env.cost(env.objective(state)).tolist()
    return data.epoch_stats, costs


def test_the_greedy_solution_replaces_worse_samples(tiny_cfg) -> None:
    plain, plain_costs = epoch_stats(tiny_cfg)
    mixed, mixed_costs = epoch_stats(tiny_cfg, "training.greedy_candidate=true")
    assert "sample/greedy_kept" not in plain
    # the same seeded sampler ran in both runs
    assert mixed["sample/sampler_cost"] == plain["sample/cost"]
    assert mixed["sample/cost"] <= min(mixed["sample/sampler_cost"], mixed["sample/greedy_cost"])
    # 8 samples of an untrained policy against its greedy: each wins some of the 8 instances
    assert 0 < mixed["sample/greedy_kept"] < 8
    assert mixed["sample/cost"] < plain["sample/cost"]
    # the buffer holds what the stats report
    assert abs(sum(mixed_costs) / len(mixed_costs) - mixed["sample/cost"]) < 1e-4
    assert abs(sum(plain_costs) / len(plain_costs) - plain["sample/cost"]) < 1e-4


def test_from_an_epoch_only_later_epochs_take_greedy_candidates(tiny_cfg) -> None:
    """`greedy_candidate=1`: epoch 0 samples as without the option, epoch 1 adds greedy."""
    cfg = tiny_cfg("trainer.max_epochs=2", "training.greedy_candidate=1")
    seen: list[dict[str, float]] = []

    class Stats(Recorder):
        def on_train_epoch_end(self, trainer, pl_module) -> None:
            seen.append(dict(trainer.datamodule.epoch_stats))
            super().on_train_epoch_end(trainer, pl_module)

    fit(cfg, Stats())
    assert "sample/greedy_kept" not in seen[0]
    assert "sample/greedy_kept" in seen[1]
