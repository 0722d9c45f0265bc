"""The Gomoku experiment (paper C.4): random tie-break, fixed opening set, configs, tiny runs."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from nco.decode import decode
from nco.problems.gomoku import GomokuEnv
from nco.problems.tsp import TSPEnv
from nco.search.solutions import Solutions
from nco.training.data import best_random_tie
from nco.training.runner import build, fixed_instance_set, run

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
QUICK = ["trainer.accelerator=cpu", "logger=csv"]


def compose_train(overrides: list[str], out_dir: Path | str = "unused") -> DictConfig:
    """The train config with `overrides`, writing under `out_dir`."""
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        return compose("train", overrides=[f"out_dir={out_dir}", *QUICK, *overrides])


def solutions(objective: list[list[float]]) -> Solutions:
    """Solutions whose action rows encode their slot index, for checking which one was kept."""
    obj = torch.tensor(objective, dtype=torch.float64)
    n, s = obj.shape
    actions = torch.arange(s).view(1, s, 1).expand(n, s, 2).clone()
    return Solutions(actions, obj, torch.zeros_like(obj))


def test_random_tie_break_is_uniform_among_the_best() -> None:
    """Only best slots are kept (win > draw > loss), each about equally often, seeded."""
    sols = solutions([[1, 0, 1, -1, 1], [0, -1, 0, -1, -1], [-1, -1, -1, -1, -1]])
    gen = torch.Generator().manual_seed(0)
    picks = torch.stack([best_random_tie(sols, gen).actions[:, 0] for _ in range(3000)])
    assert set(picks[:, 0].tolist()) == {0, 2, 4}
    assert set(picks[:, 1].tolist()) == {0, 2}
    assert set(picks[:, 2].tolist()) == {0, 1, 2, 3, 4}
    freq = torch.bincount(picks[:, 0], minlength=5)[[0, 2, 4]] / 3000
    assert torch.allclose(freq, torch.full((3,), 1 / 3, dtype=freq.dtype), atol=0.04)
    best = best_random_tie(sols, torch.Generator().manual_seed(0))
    assert best.objective.tolist() == [1.0, 0.0, -1.0]
    again = best_random_tie(sols, torch.Generator().manual_seed(0))
    assert torch.equal(best.actions, again.actions)


def test_random_tie_break_ignores_padded_slots() -> None:
    """Padded slots (objective -inf) are never chosen, even when every real one is a loss."""
    sols = solutions([[-1.0, float("-inf"), float("-inf")]])
    for seed in range(20):
        assert best_random_tie(sols, torch.Generator().manual_seed(seed)).actions[0, 0] == 0


def test_fixed_instances_are_all_instances_and_need_all_instances() -> None:
    """The fixed set is every cell once; an env without all_instances() is a ValueError."""
    assert torch.equal(fixed_instance_set(GomokuEnv(6)).opening, torch.arange(36))
    with pytest.raises(ValueError, match="all_instances"):
        fixed_instance_set(TSPEnv(num_nodes=5))


def test_experiment_configs_have_the_paper_settings() -> None:
    """C.4: 9x9, 320 games per opening (WR, or Gumbeldore 32 x 10, sigma 5, no nucleus,
    global update), 100 batches of 32, fixed openings, random tie-break, stop at all wins."""
    wr = compose_train(["experiment=gomoku_wr"])
    gd = compose_train(["experiment=gomoku_gumbeldore"])
    for cfg in (wr, gd):
        assert cfg.problem.env.board_size == 9 and cfg.model.board_size == 9
        t = cfg.training
        assert (t.batches_per_epoch, t.batch_size) == (100, 32)
        assert t.fixed_instances and t.tie_break == "random" and t.stop_objective == 1.0
        assert cfg.problem.env.learn_from == "winner"
    assert wr.search.method == "sample" and wr.search.num_samples == 320
    s = gd.search
    assert (s.method, s.beam_width, s.rounds, s.sigma, s.p_min) == ("gumbeldore", 32, 10, 5.0, 1.0)
    assert s["update"] == "global" and s.top_p is None and s.baseline == 0.0
    assert s.advantage == "sum"
    for cfg in (wr, gd):  # LightZero's AlphaZero net and rule bot v1 by default
        assert cfg.problem.env.bot == "v1"
        m = cfg.model
        assert (m.channels, m.blocks, m.prediction_blocks) == (32, 1, 1)
        assert (m.head_channels, m.head_hidden, m.zero_init) == (16, 32, True)


def test_mean_advantage_experiment_is_the_authors_code_setting() -> None:
    """gomoku_gumbeldore_mean: as gomoku_gumbeldore but step 1 and the mean result per edge
    (the authors' advantage_constant 1, use_pure_outcomes, normalize_advantage_by_visit_count)."""
    gd = compose_train(["experiment=gomoku_gumbeldore"])
    mean = compose_train(["experiment=gomoku_gumbeldore_mean"])
    assert (mean.search.sigma, mean.search.advantage) == (1.0, "mean")
    for key in ("beam_width", "rounds", "p_min", "update", "baseline", "top_p"):
        assert mean.search[key] == gd.search[key]
    assert mean.training == gd.training and mean.model == gd.model


def test_first_tie_break_variant_differs_only_in_the_pseudo_expert() -> None:
    """gomoku_gumbeldore_mean_first: the authors' advantage, the first best game as target."""
    mean = compose_train(["experiment=gomoku_gumbeldore_mean"])
    first = compose_train(["experiment=gomoku_gumbeldore_mean_first"])
    assert (mean.training.tie_break, first.training.tie_break) == ("random", "first")
    assert first.search == mean.search and first.model == mean.model
    assert {**first.training, "tie_break": "random"} == {**mean.training}


def test_mean_advantage_quick_run_decodes_and_trains(tmp_path: Path) -> None:
    """One tiny epoch with the mean advantage: the search config reaches the decoder."""
    over = ["experiment=gomoku_gumbeldore_quick", "search.advantage=mean", "search.sigma=1.0"]
    cfg = compose_train([*over, "trainer.max_epochs=1"], tmp_path)
    trainer, module, dm = build(cfg)
    trainer.fit(module, datamodule=dm)
    assert len(dm.buffer) == 25 and len(read_val(tmp_path / "logs" / "metrics.csv")) == 1
    with pytest.raises(ValueError, match="advantage"):
        decode(module.policy, dm.env, dm.env.all_instances(), {**cfg.search, "advantage": "x"})


def test_bad_tie_break_is_rejected(tmp_path: Path) -> None:
    """An unknown training.tie_break raises ValueError naming the field."""
    cfg = compose_train(["experiment=gomoku_quick", "training.tie_break=last"], tmp_path)
    with pytest.raises(ValueError, match="tie_break"):
        build(cfg)


def read_val(path: Path) -> list[dict[str, float]]:
    """The validation rows of a metrics.csv, as floats."""
    with open(path) as f:
        return [
            {k: float(v) for k, v in row.items() if v}
            for row in csv.DictReader(f)
            if row.get("val/wins")
        ]


def test_quick_run_trains_on_all_instances_and_logs_greedy_wins(tmp_path: Path) -> None:
    """One epoch on 5x5: the buffer holds one game per opening, and val/wins, draws and losses
    count the trained policy's greedy games over all 25 openings."""
    cfg = compose_train(["experiment=gomoku_quick", "trainer.max_epochs=1"], tmp_path)
    trainer, module, dm = build(cfg)
    trainer.fit(module, datamodule=dm)
    assert torch.equal(dm.buffer.instances.opening, torch.arange(25))
    assert torch.equal(dm.val_instances.opening, torch.arange(25))
    (val,) = read_val(tmp_path / "logs" / "metrics.csv")
    greedy = decode(module.policy, dm.env, dm.env.all_instances(), {"method": "greedy"})
    obj = greedy.best().objective
    assert val["val/wins"] == float((obj == 1).sum())
    assert val["val/wins"] + val["val/draws"] + val["val/losses"] == 25
    assert val["val/objective"] == pytest.approx(float(obj.mean()))


def test_gumbeldore_run_keeps_one_epoch_and_stops_at_objective(tmp_path: Path) -> None:
    """Gumbeldore quick variant (2 epochs): sampling with the trained policy keeps only the
    epoch's 25 games; stop_objective=-1 (always reached) ends training after the first epoch."""
    cfg = compose_train(["experiment=gomoku_gumbeldore_quick"], tmp_path / "a")
    trainer, module, dm = build(cfg)
    trainer.fit(module, datamodule=dm)
    assert len(dm.buffer) == 25 and len(read_val(tmp_path / "a" / "logs" / "metrics.csv")) == 2
    stop = ["experiment=gomoku_gumbeldore_quick", "trainer.max_epochs=3"]
    stop.append("training.stop_objective=-1.0")
    run(compose_train(stop, tmp_path / "b"))
    assert len(read_val(tmp_path / "b" / "logs" / "metrics.csv")) == 1
