"""The config tree: every group option composes, experiments carry the paper's values."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import CONFIGS, compose_train
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf

from nco.decode import decoder_kwargs
from nco.training.runner import named_instances

REPO = CONFIGS.parent


@pytest.mark.parametrize("name", sorted(p.stem for p in (CONFIGS / "search").glob("*.yaml")))
def test_every_search_config_is_a_valid_decoder_call(name: str) -> None:
    """Each configs/search option names a decoder and only parameters it accepts."""
    decoder_kwargs(search_option(name))


def search_option(name: str) -> dict:
    """configs/search/<name>.yaml with the options its `defaults` list extends merged under it."""
    node = OmegaConf.load(CONFIGS / "search" / f"{name}.yaml")
    merged = OmegaConf.create()
    for base in node.pop("defaults", []):
        if base != "_self_":
            merged = OmegaConf.merge(merged, search_option(base))
    return OmegaConf.to_container(OmegaConf.merge(merged, node))


@pytest.mark.parametrize("name", ["csv", "tensorboard", "wandb"])
def test_loggers_instantiate_offline(name: str, tmp_path) -> None:
    """CSV, TensorBoard and (offline) W&B loggers build without network access."""
    cfg = compose_train([f"logger={name}"], tmp_path)
    (logger,) = named_instances(cfg.logger)
    assert str(tmp_path) in str(logger.save_dir if name == "wandb" else logger.log_dir)


def test_several_loggers_and_callbacks_compose_together(tmp_path) -> None:
    """`logger=[csv,tensorboard]` keeps both (a single-valued group kept only the last), and
    `callbacks=[default,top_k,early_stopping]` gives last.ckpt, top-k and early stopping."""
    cfg = compose_train(
        ["logger=[csv,tensorboard]", "callbacks=[default,top_k,early_stopping]"], tmp_path
    )
    names = [type(x).__name__ for x in named_instances(cfg.logger)]
    assert names == ["ResumableCSVLogger", "TensorBoardLogger"]
    callbacks = named_instances(cfg.callbacks)
    assert [type(c).__name__ for c in callbacks] == [
        "ModelCheckpoint",
        "ModelCheckpoint",
        "EarlyStopping",
    ]
    assert callbacks[1].monitor == "val/objective" and callbacks[1].save_top_k == 3


def test_tsp100_gumbeldore_has_the_paper_hyperparameters() -> None:
    """Appendix D.2: 1000 instances, 32 x 4 Gumbeldore, sigma 0.3, p_min 0.95 after 500 epochs,
    1000 batches of 1024 sub-tours, lr 2e-4, the full BQ model."""
    cfg = compose_train(["experiment=tsp100_gumbeldore"], tiny=False)
    assert cfg.problem.num_nodes == 100
    assert (cfg.model.dim, cfg.model.layers, cfg.model.heads, cfg.model.ff_dim) == (128, 9, 8, 512)
    assert cfg.search.method == "gumbeldore" and cfg.search["update"] == "global"
    assert (cfg.search.beam_width, cfg.search.rounds, cfg.search.sigma) == (32, 4, 0.3)
    t = cfg.training
    assert (t.instances_per_epoch, t.batches_per_epoch, t.batch_size) == (1000, 1000, 1024)
    assert t.lr == 2e-4
    assert dict(t.p_min_schedule) == {0: 1.0, 500: 0.95}
    assert cfg.trainer.gradient_clip_val == 1.0


def test_tsp100_sl_is_supervised_with_lr_1e4() -> None:
    """The SL baseline: mode sl, lr 1e-4 (D.2.3), 1000 batches of 1024 sub-tours."""
    cfg = compose_train(["experiment=tsp100_sl", "sl_data=x.npz"], tiny=False)
    assert cfg.mode == "sl" and cfg.training.lr == 1e-4
    assert (cfg.training.batches_per_epoch, cfg.training.batch_size) == (1000, 1024)


def test_tsp20_quick_is_small() -> None:
    """The laptop experiment: TSP20, at most 128 instances and 50 batches of 256 per epoch."""
    cfg = compose_train(["experiment=tsp20_quick"], tiny=False)
    assert cfg.problem.num_nodes == 20 and cfg.problem.env.num_nodes == 20
    assert cfg.training.instances_per_epoch <= 128
    assert cfg.training.batches_per_epoch * cfg.training.batch_size <= 50 * 256


def test_cvrp20_quick_is_small() -> None:
    """The CPU routing experiment: CVRP20 (capacity 30), tiny BQ-CVRP, at most 128 instances
    and 50 batches of 256 per epoch."""
    cfg = compose_train(["experiment=cvrp20_quick"], tiny=False)
    assert cfg.problem.name == "cvrp" and cfg.problem.env.num_customers == 20
    assert cfg.model._target_ == "nco.models.bq_cvrp.BQCVRPPolicy"
    assert cfg.training.instances_per_epoch <= 128
    assert cfg.training.batches_per_epoch * cfg.training.batch_size <= 50 * 256


def test_sigma_sweep_is_a_multirun_grid_over_0_to_5() -> None:
    """tsp_sigma_sweep sweeps sampling.sigma over [0, 5] as a Hydra multirun."""
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose("train", ["experiment=tsp_sigma_sweep"], return_hydra_config=True)
    assert cfg.hydra.mode.name == "MULTIRUN"
    sigmas = [float(s) for s in str(cfg.hydra.sweeper.params["sampling.sigma"]).split(",")]
    assert min(sigmas) == 0.0 and max(sigmas) == 5.0 and len(sigmas) >= 5


@pytest.mark.slow
def test_cli_multirun_writes_one_run_per_value(tmp_path: Path) -> None:
    """`python -m nco.cli.train --multirun search.sigma=0,1` trains two runs, each with its resolved
    config, metrics and best.pt."""
    from conftest import TINY

    args = [a for a in TINY if not a.startswith("trainer.max_epochs")] + [
        "trainer.max_epochs=1",
        "search.sigma=0,1",
        f"hydra.sweep.dir={tmp_path}",
    ]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run(
        [sys.executable, "-m", "nco.cli.train", "--multirun", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for job, sigma in (("0", 0.0), ("1", 1.0)):
        run_dir = tmp_path / job
        saved = OmegaConf.load(run_dir / ".hydra" / "config.yaml")
        assert saved.search.sigma == sigma
        assert (run_dir / "best.pt").is_file()
        assert (run_dir / "logs" / "metrics.csv").is_file()


@pytest.mark.parametrize(
    ("experiment", "search", "expected"),
    [
        ("tsp100_gumbeldore", None, {"method": "gumbeldore", "update": "global", "sigma": 0.3}),
        ("tsp100_gumbeldore", "wor", {"method": "gumbeldore", "update": "none", "sigma": 0.0}),
        ("tsp100_gumbeldore", "wr", {"method": "sample", "num_samples": 128}),
        ("tsp100_wor", None, {"method": "gumbeldore", "update": "none", "beam_width": 32}),
        ("cvrp100_gumbeldore", None, {"method": "gumbeldore", "update": "global", "sigma": 3.0}),
        ("tsp20_quick", "wor", {"method": "gumbeldore", "update": "none", "beam_width": 16}),
        ("tsp20_quick", "wr", {"method": "sample", "num_samples": 64}),
        ("jssp_cpu", None, {"method": "gumbeldore", "update": "global", "sigma": 0.05}),
        ("jssp_cpu_wor", None, {"method": "gumbeldore", "update": "none", "sigma": 0.0}),
    ],
)
def test_search_group_choice_gives_that_method(experiment, search, expected, tmp_path) -> None:
    """An experiment's sampling budget never overrides the method of the chosen search group:
    `experiment=tsp100_gumbeldore search=wor` is round-wise SBS (update none, sigma 0)."""
    overrides = [f"experiment={experiment}"] + ([f"search={search}"] if search else [])
    cfg = compose_train(overrides, tmp_path, tiny=False)
    composed = OmegaConf.to_container(cfg.search, resolve=True)
    assert {k: composed[k] for k in expected} == expected
    decoder_kwargs(composed)  # every key is a parameter of that decoder


def test_paper_experiments_compose(tmp_path) -> None:
    """CVRP100 SI GD draws capacities from 40..100 with BQ-CVRP; LEHD and SL variants compose."""
    cvrp = compose_train(["experiment=cvrp100_gumbeldore"], tmp_path, tiny=False)
    assert list(cvrp.problem.env.capacity_range) == [40, 100]
    assert cvrp.model._target_.endswith("BQCVRPPolicy") and cvrp.problem.num_customers == 100
    lehd = compose_train(["experiment=tsp100_lehd_gumbeldore"], tmp_path, tiny=False)
    assert lehd.model._target_.endswith("LEHDTSPPolicy") and lehd.search.method == "gumbeldore"
    sl = compose_train(["experiment=cvrp100_sl"], tmp_path, tiny=False)
    assert sl.mode == "sl" and sl.training.lr == 1e-4 and sl.problem.name == "cvrp"


def test_val_env_overrides_the_generated_validation_set(tmp_path) -> None:
    """training.val_env changes only the validation generator: JSSP trains on 15 x {10,15,20}
    and validates on 20 x 20 (paper); CVRP100 SI GD validates at capacity 50, not 40..100."""
    from nco.training.runner import validation_set

    jssp = compose_train(
        ["experiment=jssp_gumbeldore", "training.val_instances=3", "training.val_gap=false"],
        tmp_path,
        tiny=False,
    )
    instances, refs = validation_set(jssp, instantiate(jssp.problem.env))
    assert tuple(instances.durations.shape) == (3, 20, 20) and refs is None
    cvrp = compose_train(
        ["experiment=cvrp100_gumbeldore", "training.val_instances=64", "training.val_gap=false"],
        tmp_path,
        tiny=False,
    )
    env = instantiate(cvrp.problem.env)
    val, _ = validation_set(cvrp, env)
    assert bool((val.capacity == 50).all())
    assert len(set(env.generate(64).capacity.tolist())) > 1


def test_validation_data_takes_named_sets_and_files_like_nco_eval(tmp_path) -> None:
    """`training.val_data` resolves as `nco-eval data=` does: a named set (with its shipped
    references) or a file; a set of another problem is refused naming both."""
    import numpy as np

    from nco.problems.cvrp import CVRPEnv
    from nco.problems.tsp import TSPEnv
    from nco.training.runner import validation_data

    instances, refs = validation_data("kool:tsp20_test", TSPEnv(20))
    assert instances.batch_size == 10000 and refs is not None
    assert abs(float(refs.mean()) - 3.84) < 0.01  # Kool et al.'s TSP20 optimum, 3.84
    coords = np.random.default_rng(0).uniform(size=(3, 20, 2))
    np.savez(tmp_path / "val.npz", coords=coords, reference_costs=np.array([4.0, 4.1, 4.2]))
    instances, refs = validation_data(str(tmp_path / "val.npz"), TSPEnv(20))
    assert np.allclose(instances.coords.numpy(), coords) and refs.tolist() == [4.0, 4.1, 4.2]
    with pytest.raises(ValueError, match="tsp set, not cvrp"):
        validation_data("kool:tsp20_test", CVRPEnv(20))
    head, head_refs = validation_data("kool:tsp20_test", TSPEnv(20), limit=100)
    assert head.batch_size == 100 and head_refs is not None
    full, full_refs = validation_data("kool:tsp20_test", TSPEnv(20))
    assert torch.equal(head.coords, full.coords[:100]) and torch.equal(head_refs, full_refs[:100])
    with pytest.raises(ValueError, match="training.val_limit=0"):
        validation_data("kool:tsp20_test", TSPEnv(20), limit=0)
