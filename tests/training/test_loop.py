"""Algorithm 1 end to end, in-process (TSP10, tiny BQ): buffer, best policy, resume, best.pt."""

from __future__ import annotations

import csv
from pathlib import Path

import lightning as L
import pytest
import torch
from hydra.utils import instantiate
from loop_helpers import Recorder, fit, same_weights

from nco import checkpoint
from nco.decode import decode
from nco.distributed import InProcessSampler
from nco.distributed.chunks import derive_seed, seeded_generator
from nco.problems.tsp import TSPEnv
from nco.training.data import GENERATE, SAMPLE, TrajectoryDataModule, p_min_for_epoch
from nco.training.runner import build, run


def test_buffer_holds_the_best_sampled_sequence(tiny_cfg) -> None:
    """After epoch 0 the buffer holds, per generated instance, the best of its decoded sequences."""
    cfg = tiny_cfg("trainer.max_epochs=1")
    module, dm = fit(cfg, Recorder())
    instances = dm.env.generate(8, seeded_generator(cfg.seed, 0, GENERATE))
    assert torch.equal(dm.buffer.instances.coords, instances.coords)
    # Epoch 0 sampled with the initial policy; rebuild it from the same seed.
    L.seed_everything(cfg.seed, verbose=False)
    initial = instantiate(cfg.model)
    seed = derive_seed(cfg.seed, 0, SAMPLE, 0)
    search = dict(cfg.search)
    for c, lo in enumerate(range(0, 8, 4)):
        chunk = instances.index(torch.arange(lo, lo + 4))
        gen = torch.Generator().manual_seed(derive_seed(seed, c))
        sols = decode(initial, dm.env, chunk, search, gen)
        assert sols.valid.sum(1).min() > 1  # several candidates per instance
        best = sols.objective.max(1).values
        state = dm.env.reset(chunk)
        for t in range(dm.buffer.actions.shape[1]):
            state = dm.env.step(state, dm.buffer.actions[lo : lo + 4, t])
        assert torch.allclose(dm.env.objective(state), best)


def test_non_improving_epoch_grows_and_improving_epoch_resets(tiny_cfg) -> None:
    """Buffer: +8 per epoch while the best policy stays; cleared after an improvement."""
    recorder = Recorder(improve=[False, True, False])
    module, dm = fit(tiny_cfg("trainer.max_epochs=3"), recorder)
    assert recorder.buffer_sizes == [8, 16, 8]
    assert recorder.best_equals_trained == [False, True, False]
    assert module.best_version == 1 and module.best_epoch == 1


def test_buffer_capacity_drops_oldest(tiny_cfg) -> None:
    """With capacity 12 a non-improving epoch keeps the 12 newest trajectories."""
    cfg = tiny_cfg("trainer.max_epochs=2", "training.buffer_capacity=12")
    recorder = Recorder(improve=[False, False])
    _, dm = fit(cfg, recorder)
    assert len(dm.buffer) == 12
    epoch0 = dm.env.generate(8, seeded_generator(cfg.seed, 0, GENERATE)).coords
    epoch1 = dm.env.generate(8, seeded_generator(cfg.seed, 1, GENERATE)).coords
    assert torch.equal(dm.buffer.instances.coords, torch.cat([epoch0[4:], epoch1]))


def test_run_logs_metrics_and_writes_loadable_best(tiny_cfg) -> None:
    """A 2-epoch run logs the per-epoch metrics; its best.pt decodes the validation set and
    initializes another run."""
    cfg = tiny_cfg("training.val_gap=true")
    result = run(cfg)
    with open(Path(cfg.out_dir) / "logs" / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    for key in (
        "sample/objective",
        "buffer/size",
        "train/loss_epoch",
        "val/objective",
        "val/gap",
        "time/sampling_s",
        "time/training_s",
    ):
        assert sum(1 for r in rows if r[key]) == 2, key
    gaps = [float(r["val/gap"]) for r in rows if r["val/gap"]]
    assert all(g >= -1e-6 for g in gaps)  # LKH references are optimal on TSP10
    start = [(r["epoch"], float(r["val/initial_gap"])) for r in rows if r.get("val/initial_gap")]
    assert len(start) == 1 and start[0][0] == "0" and start[0][1] >= -1e-6  # the start's gap
    loaded = checkpoint.load(result["best_checkpoint"])
    assert loaded.meta["epoch"] == result["best_epoch"]
    val = loaded.env.generate(8, torch.Generator().manual_seed(cfg.training.val_seed))
    objective = decode(loaded.policy, loaded.env, val, {"method": "greedy"}).best().objective
    assert float(objective.mean()) == pytest.approx(result["best_objective"], rel=1e-6)
    assert (Path(cfg.out_dir) / "checkpoints" / "last.ckpt").is_file()
    _, module, _ = build(tiny_cfg(f"init_checkpoint={result['best_checkpoint']}"))
    assert same_weights(module.policy, loaded.policy, exact=True)
    assert same_weights(module.best_policy, loaded.policy, exact=True)


def test_resume_continues_where_it_stopped(tiny_cfg) -> None:
    """1 epoch + resume to 2 equals 2 straight epochs: epoch, best policy, buffer and weights."""
    straight = Recorder()
    full, _ = fit(tiny_cfg(), straight)
    first_cfg = tiny_cfg("trainer.max_epochs=1")
    first, _ = fit(first_cfg, Recorder())
    last = Path(first_cfg.out_dir) / "checkpoints" / "last.ckpt"
    resumed_rec = Recorder()
    resumed, _ = fit(tiny_cfg(f"ckpt_path={last}"), resumed_rec)
    assert resumed_rec.epochs == [1]
    assert resumed_rec.buffer_sizes == straight.buffer_sizes[1:]
    assert same_weights(resumed.policy, full.policy)
    assert same_weights(resumed.best_policy, full.best_policy)
    assert resumed.best_objective == pytest.approx(full.best_objective)


def test_last_ckpt_loads_the_trained_policy_with_best_pts_configs(tiny_cfg, tmp_path) -> None:
    """checkpoint.load on a run's last.ckpt gives the policy being trained (not the best one),
    its epoch, and the run facts of best.pt; without best.pt beside it, the error names it."""
    cfg = tiny_cfg("trainer.max_epochs=1")
    module, _ = fit(cfg, Recorder())
    last = Path(cfg.out_dir) / "checkpoints" / "last.ckpt"
    loaded = checkpoint.load(last)
    assert same_weights(loaded.policy, module.policy, exact=True)
    assert loaded.meta["epoch"] == 0 and loaded.meta["seed"] == cfg.seed
    assert "val_objective" not in loaded.meta and not loaded.policy.training
    assert type(loaded.env) is type(checkpoint.load(Path(cfg.out_dir) / "best.pt").env)
    moved = tmp_path / "elsewhere" / "checkpoints" / "last.ckpt"
    moved.parent.mkdir(parents=True)
    moved.write_bytes(last.read_bytes())
    with pytest.raises(ValueError, match="best.pt"):
        checkpoint.load(moved)


class StepRates(L.Callback):
    """Records the learning rate of every optimizer step."""

    def __init__(self) -> None:
        self.rates: list[float] = []

    def on_before_optimizer_step(self, trainer, pl_module, optimizer) -> None:
        self.rates.append(float(optimizer.param_groups[0]["lr"]))


def fit_rates(cfg, resume: Path | None = None) -> tuple[L.LightningModule, list[float]]:
    """Train `cfg` (resumed from `resume`) and return the module and every step's rate."""
    trainer, module, dm = build(cfg)
    rates = StepRates()
    trainer.callbacks.append(rates)
    trainer.fit(module, datamodule=dm, ckpt_path=resume)
    return module, rates.rates


def test_lr_decay_shrinks_the_rate_each_epoch_and_resumes_decayed(tiny_cfg) -> None:
    """lr_decay 0.5: epochs train at lr, lr/2, lr/4 (logged as train/lr), and a run resumed
    after one epoch goes on from the decayed rate with the same weights as a straight run."""
    decay = ["training.lr=1e-3", "training.lr_decay=0.5", "trainer.max_epochs=3"]
    cfg = tiny_cfg(*decay)
    full, _ = fit(cfg, Recorder())
    assert logged_rates(cfg) == pytest.approx([1e-3, 5e-4, 2.5e-4])
    first_cfg = tiny_cfg(*decay[:2], "trainer.max_epochs=1")
    fit(first_cfg, Recorder())
    last = Path(first_cfg.out_dir) / "checkpoints" / "last.ckpt"
    resumed_cfg = tiny_cfg(*decay, f"ckpt_path={last}")
    resumed, _ = fit(resumed_cfg, Recorder())
    assert logged_rates(resumed_cfg) == pytest.approx([5e-4, 2.5e-4])  # epochs 1 and 2
    assert same_weights(resumed.policy, full.policy)


def logged_rates(cfg) -> list[float]:
    """The `train/lr` of every epoch in a run's metrics.csv."""
    with open(Path(cfg.out_dir) / "logs" / "metrics.csv") as f:
        return [float(r["train/lr"]) for r in csv.DictReader(f) if r.get("train/lr")]


def test_decay_from_a_later_epoch_also_after_resuming_a_constant_rate_run(tiny_cfg) -> None:
    """lr_decay 0.5 from epoch 1: epochs train at lr, lr, lr/2, lr/4. A run trained one epoch
    at the constant rate (a checkpoint without any schedule) and resumed with that schedule
    trains its later epochs at the same rates, step for step, as the straight run, and ends
    with the same weights."""
    decay = ["training.lr=1e-3", "training.lr_decay=0.5", "training.lr_decay_from=1"]
    straight, rates = fit_rates(tiny_cfg(*decay, "trainer.max_epochs=4"))
    per_epoch = len(rates) // 4
    lr = 1e-3
    expected = [r for r in (lr, lr, lr / 2, lr / 4) for _ in range(per_epoch)]
    assert rates == pytest.approx(expected)
    first_cfg = tiny_cfg("training.lr=1e-3", "trainer.max_epochs=1")  # constant, no schedule
    fit(first_cfg, Recorder())
    last = Path(first_cfg.out_dir) / "checkpoints" / "last.ckpt"
    resumed, rates = fit_rates(tiny_cfg(*decay, "trainer.max_epochs=4"), last)
    assert rates == pytest.approx(expected[per_epoch:])
    assert same_weights(resumed.policy, straight.policy)


def test_warmup_rises_linearly_then_decays_per_epoch_and_resumes(tiny_cfg) -> None:
    """warmup 4 steps with 3 steps per epoch and decay 0.5: steps train at lr/4, lr/2, 3lr/4,
    then lr/2 (epoch 1, warmup done) ... lr/4 (epoch 2); a run resumed after one epoch goes on
    at the same rates and ends with the same weights as a straight run."""
    setup = ["training.lr=1e-3", "training.lr_decay=0.5", "training.warmup_steps=4"]
    module, rates = fit_rates(tiny_cfg(*setup, "trainer.max_epochs=3"))
    lr = 1e-3
    expected = [lr / 4, lr / 2, 3 * lr / 4, lr / 2, lr / 2, lr / 2, lr / 4, lr / 4, lr / 4]
    assert rates == pytest.approx(expected)
    first_cfg = tiny_cfg(*setup, "trainer.max_epochs=1")
    fit(first_cfg, Recorder())
    last = Path(first_cfg.out_dir) / "checkpoints" / "last.ckpt"
    resumed, rates = fit_rates(tiny_cfg(*setup, "trainer.max_epochs=3"), last)
    assert rates == pytest.approx(expected[3:])
    assert same_weights(resumed.policy, module.policy)


def test_negative_warmup_is_refused(tiny_cfg) -> None:
    with pytest.raises(ValueError, match="warmup_steps"):
        build(tiny_cfg("training.warmup_steps=-1"))


def test_lr_decay_outside_zero_to_one_is_refused(tiny_cfg) -> None:
    with pytest.raises(ValueError, match="lr_decay"):
        build(tiny_cfg("training.lr_decay=1.5"))
    with pytest.raises(ValueError, match="lr_decay_from"):
        build(tiny_cfg("training.lr_decay_from=-1"))


def test_p_min_schedule() -> None:
    """p_min follows the latest schedule entry at or before the epoch."""
    schedule = {0: 1.0, 500: 0.95}
    assert [p_min_for_epoch(schedule, e) for e in (0, 499, 500, 2000)] == [1.0, 1.0, 0.95, 0.95]
    assert p_min_for_epoch({5: 0.9}, 2) is None
    assert p_min_for_epoch(None, 3) is None


def test_search_for_epoch_applies_the_schedule() -> None:
    """The DataModule's search config switches p_min at the scheduled epoch."""
    env = TSPEnv(5)
    search = {"method": "gumbeldore", "beam_width": 2, "rounds": 2, "sigma": 0.3, "p_min": 1.0}
    dm = TrajectoryDataModule(
        env, env.generate(2), sampler=InProcessSampler(env), search=search, p_min_schedule={3: 0.95}
    )
    assert [dm.search_for_epoch(e)["p_min"] for e in (0, 2, 3, 9)] == [1.0, 1.0, 0.95, 0.95]
    assert dm.search_for_epoch(3)["sigma"] == 0.3


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "rl"}, "unknown mode 'rl'"),
        ({"mode": "sl"}, "needs expert data"),
        ({"search": None}, "needs a sampler and a search config"),
        ({"instances_per_epoch": 0}, "instances_per_epoch >= 1"),
        ({"batch_size": 0}, "batch_size >= 1"),
        (
            {"search": {"method": "sample", "num_samples": 2}, "p_min_schedule": {0: 0.9}},
            "takes p_min",
        ),
        ({"val_references": torch.zeros(3)}, "expected 2 reference costs"),
    ],
)
def test_datamodule_rejects_bad_settings(kwargs, message) -> None:
    """Bad modes, sizes, schedules and reference shapes raise ValueError."""
    env = TSPEnv(5)
    args = {"sampler": InProcessSampler(env), "search": {"method": "greedy"}, **kwargs}
    with pytest.raises(ValueError, match=message):
        TrajectoryDataModule(env, env.generate(2), **args)


def test_several_instance_sizes_train_through_non_improving_epochs(tmp_path: Path) -> None:
    """JSSP with one random size per epoch: the buffer keeps every size's rows through epochs
    without improvement, and training draws batches from each size's group."""
    from conftest import compose_train

    cfg = compose_train(
        [
            "problem=jssp", "model=jssp_transformer_tiny", "problem.env.sizes=[[3,2],[4,2],[3,3]]",
            "search.beam_width=2", "search.rounds=2", "training.instances_per_epoch=4",
            "training.batches_per_epoch=4", "training.batch_size=8", "training.val_instances=4",
            "training.val_batch_size=4", "training.val_gap=false", "training.progress=false",
            "distributed.chunk_size=4", "trainer.max_epochs=4", "trainer.accelerator=cpu",
            "trainer.enable_progress_bar=false", "trainer.enable_model_summary=false",
        ],
        tmp_path / "run",
        tiny=False,
    )  # fmt: skip
    recorder = Recorder(improve=[False, False, False, False])
    _, dm = fit(cfg, recorder)
    assert recorder.buffer_sizes == [4, 8, 12, 16]
    shapes = {tuple(g[0].durations.shape[1:]) for g in dm.buffer.groups}
    assert len(shapes) >= 2 and len(dm.buffer) == 16
