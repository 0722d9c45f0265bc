"""`nco-train`: self-improvement (Algorithm 1) or supervised training from a Hydra config.

    nco-train experiment=tsp20_quick
    nco-train experiment=tsp100_gumbeldore distributed=ray distributed.workers=16
    nco-train ckpt_path=outputs/<date>/<time>/checkpoints/last.ckpt   # resume
    nco-train --multirun experiment=tsp_sigma_sweep

See docs/training.md for the config groups, logged metrics and checkpoints.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import hydra
import lightning as L
import torch
from hydra.utils import get_method, instantiate
from lightning.pytorch.callbacks import ModelCheckpoint
from omegaconf import DictConfig, OmegaConf

from nco import checkpoint
from nco.distributed import Sampler, make_sampler
from nco.env import Batch, Env
from nco.training import ExportBest, SelfImprovementModule, TrajectoryDataModule
from nco.training.references import reference_costs

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"  # absolute: console scripts work


def fixed_instance_set(env: Env) -> Batch:
    """The problem's complete instance set for `training.fixed_instances` (Gomoku: every
    opening), from the env's `all_openings()`."""
    openings = getattr(env, "all_openings", None)
    if not callable(openings):
        raise ValueError(
            f"train config: training.fixed_instances needs an env with all_openings(); "
            f"{type(env).__name__} has none."
        )
    return openings()


def validation_set(cfg: DictConfig, env: Env) -> tuple[Batch, torch.Tensor | None]:
    """The fixed validation instances (a file, the fixed training set when
    `training.fixed_instances` is set, or `val_instances` generated from `val_seed`) and their
    reference costs where a file or the problem's reference solver provides them."""
    tcfg = cfg.training
    if tcfg.get("fixed_instances") and not tcfg.get("val_data"):
        return fixed_instance_set(env), None
    if tcfg.get("val_data"):
        instances, refs = get_method(cfg.problem.loader)(tcfg.val_data)
        return instances, None if refs is None else torch.as_tensor(refs, dtype=torch.float64)
    gen = torch.Generator().manual_seed(int(tcfg.val_seed))
    instances = env.generate(int(tcfg.val_instances), gen)
    solver_path = cfg.problem.get("reference_solver")
    if not tcfg.get("val_gap") or not solver_path:
        return instances, None
    solver = get_method(solver_path)
    return instances, reference_costs(solver, instances, float(cfg.problem.reference_time_limit))


def build(cfg: DictConfig) -> tuple[L.Trainer, SelfImprovementModule, TrajectoryDataModule]:
    """Trainer, module and DataModule (holding the sampler) for a composed train config."""
    L.seed_everything(int(cfg.seed), verbose=False)
    out = Path(cfg.out_dir)
    tcfg = cfg.training
    model_cfg = OmegaConf.to_container(cfg.model, resolve=True)
    problem_cfg = OmegaConf.to_container(cfg.problem, resolve=True)
    search_cfg = OmegaConf.to_container(cfg.search, resolve=True)
    env = instantiate(cfg.problem.env)
    policy = instantiate(cfg.model)
    if cfg.get("init_checkpoint"):
        policy.load_state_dict(checkpoint.load(cfg.init_checkpoint).policy.state_dict())
    val_instances, val_refs = validation_set(cfg, env)
    sampler: Sampler | None = None
    expert = None
    if cfg.mode == "sl":
        if not cfg.get("sl_data"):
            raise ValueError("train config: mode 'sl' needs sl_data (an .npz with expert tours).")
        expert = get_method(cfg.problem.expert_loader)(cfg.sl_data)
    elif cfg.mode == "si":
        sampler = make_sampler(
            cfg.distributed, env, problem_cfg["env"], model_cfg, progress=bool(tcfg.progress)
        )
    schedule = tcfg.get("p_min_schedule")
    tie_break = str(tcfg.get("tie_break", "first"))
    if tie_break == "random" and int(cfg.distributed.get("workers", 0)) > 0:
        raise ValueError(
            "train config: training.tie_break=random samples in-process; set distributed.workers=0."
        )
    datamodule = TrajectoryDataModule(
        env,
        val_instances,
        val_refs,
        mode=cfg.mode,
        sampler=sampler,
        search=search_cfg,
        expert=expert,
        instances_per_epoch=int(tcfg.instances_per_epoch),
        batches_per_epoch=int(tcfg.batches_per_epoch),
        batch_size=int(tcfg.batch_size),
        buffer_capacity=tcfg.get("buffer_capacity"),
        val_batch_size=int(tcfg.val_batch_size),
        p_min_schedule={int(k): float(v) for k, v in schedule.items()} if schedule else None,
        seed=int(cfg.seed),
        fixed_instances=fixed_instance_set(env) if tcfg.get("fixed_instances") else None,
        tie_break=tie_break,
        sample_policy=str(tcfg.get("sample_policy", "best")),
    )
    stop = tcfg.get("stop_objective")
    module = SelfImprovementModule(
        policy, env, lr=float(tcfg.lr), stop_objective=None if stop is None else float(stop)
    )
    meta = {
        "mode": cfg.mode,
        "seed": int(cfg.seed),
        "search": search_cfg if cfg.mode == "si" else {},
    }
    callbacks = [
        ModelCheckpoint(dirpath=out / "checkpoints", save_last=True, save_top_k=0),
        ExportBest(out / "best.pt", model_cfg, problem_cfg, meta),
    ]
    logger = instantiate(cfg.logger) if cfg.get("logger") else False
    trainer = instantiate(
        cfg.trainer,
        logger=logger,
        callbacks=callbacks,
        default_root_dir=str(out),
        reload_dataloaders_every_n_epochs=1,
    )
    return trainer, module, datamodule


def run(cfg: DictConfig) -> dict[str, Any]:
    """Train as configured; returns the best validation objective, its epoch and best.pt's path."""
    trainer, module, datamodule = build(cfg)
    try:
        trainer.fit(module, datamodule=datamodule, ckpt_path=cfg.get("ckpt_path"))
    finally:
        if datamodule.sampler is not None:
            datamodule.sampler.close()
    return {
        "best_objective": module.best_objective,
        "best_epoch": module.best_epoch,
        "best_checkpoint": str(Path(cfg.out_dir) / "best.pt"),
    }


@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="train")
def main(cfg: DictConfig) -> float | None:
    """Hydra entry point; returns the best validation objective (for sweepers)."""
    warnings.filterwarnings("ignore", ".*does not have many workers.*")
    warnings.filterwarnings("ignore", ".*IterableDataset. has .__len__. defined.*")
    return run(cfg)["best_objective"]


if __name__ == "__main__":
    main()
