"""`nco-train`'s work: self-improvement (Algorithm 1) or supervised training from a config.

    nco-train experiment=tsp20_quick
    nco-train experiment=tsp100_gumbeldore distributed=ray distributed.workers=16
    nco-train experiment=tsp20_quick hydra.run.dir=runs/a   # rerun the same: continues
    nco-train ckpt_path=outputs/<date>/<time>/checkpoints/last.ckpt   # resume elsewhere
    nco-train --multirun experiment=tsp_sigma_sweep

See docs/training.md for the config groups, logged metrics and checkpoints.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import lightning as L
import torch
from hydra.utils import instantiate
from lightning.pytorch.utilities.exceptions import SIGTERMException
from omegaconf import DictConfig, OmegaConf

from nco import checkpoint, registry
from nco.config import to_dict
from nco.datasets import load_datasets
from nco.distributed import Sampler, make_sampler
from nco.env import Batch, Env
from nco.hardware import warn_slow_bf16
from nco.inference import to_instances
from nco.registry import problem_of_env
from nco.training import ExportBest, SelfImprovementModule, TrajectoryDataModule
from nco.training.callbacks import KeepLogs, ReleaseMemory
from nco.training.checkpoint_io import AtomicCheckpointIO
from nco.training.progress import LineProgress
from nco.training.references import reference_costs
from nco.training.trajectories import augment_setting


def fixed_instance_set(env: Env) -> Batch:
    """The problem's complete instance set for `training.fixed_instances` (Gomoku: every
    opening), from the env's `all_instances()`."""
    instances = env.all_instances()
    if instances is None:
        raise ValueError(
            f"train config: training.fixed_instances needs an env with a finite instance set "
            f"(Env.all_instances); {type(env).__name__} has none."
        )
    return instances


def validation_set(cfg: DictConfig, env: Env) -> tuple[Batch, torch.Tensor | None]:
    """The fixed validation instances (a file, the fixed training set when
    `training.fixed_instances` is set, or `val_instances` generated from `val_seed` by the env,
    with `training.val_env` overriding its config) and their reference costs where a file or the
    problem's reference solver provides them."""
    tcfg = cfg.training
    if tcfg.get("fixed_instances") and not tcfg.get("val_data"):
        return fixed_instance_set(env), None
    if tcfg.get("val_data"):
        return validation_data(str(tcfg.val_data), env, tcfg.get("val_limit"))
    gen = torch.Generator().manual_seed(int(tcfg.val_seed))
    if tcfg.get("val_env"):  # e.g. JSSP validation on 20x20 only, CVRP at the standard capacity
        env = instantiate(OmegaConf.merge(cfg.problem.env, tcfg.val_env))
    instances = env.generate(int(tcfg.val_instances), gen)
    solver = cfg.problem.get("reference_solver")
    if not tcfg.get("val_gap") or not solver:
        return instances, None
    problem = problem_of_env(env).name
    return instances, reference_costs(
        f"{problem}:{solver}", instances, float(cfg.problem.reference_time_limit)
    )


def validation_data(
    data: str, env: Env, limit: int | None = None
) -> tuple[Batch, torch.Tensor | None]:
    """`training.val_data`: a dataset file or named set (`kool:tsp50_val`), read by the same
    resolver as nco-eval, with its reference costs where it has them; only its first `limit`
    instances when `training.val_limit` is set (a large set's head as a fixed validation set)."""
    if limit is not None and int(limit) < 1:
        raise ValueError(f"training.val_limit={limit}: expected a positive number of instances.")
    problem = problem_of_env(env)
    datasets = load_datasets(data, problem.name)
    if len(datasets) != 1:
        raise ValueError(f"training.val_data={data}: expected one dataset, got {len(datasets)}.")
    # as the file is: references and objectives stay in its scale
    dataset = datasets[0].head(None if limit is None else int(limit))
    refs = dataset.references
    instances = to_instances(env, dataset.arrays, f"training.val_data={data}")
    return instances, None if refs is None else torch.as_tensor(refs, dtype=torch.float64)


def expert_data(path: str, env: Env) -> tuple[Batch, torch.Tensor]:
    """`sl_data`: instances and expert actions, read by the problem's `read_expert` and
    rewritten in `env`'s action form (`Env.expert_actions`: the AM forms differ from BQ's)."""
    problem = problem_of_env(env)
    if problem.read_expert is None:
        raise ValueError(f"sl_data={path}: problem {problem.name} has no expert-data reader.")
    instances, actions = problem.read_expert(Path(path))
    return instances, env.expert_actions(instances, actions)


def initial_policy(cfg: DictConfig) -> tuple[Env, torch.nn.Module]:
    """The run's env and its policy before the first step: seeded with `cfg.seed`, built, and
    loaded from `init_checkpoint` when set. Probes that replay a run start from the same weights."""
    L.seed_everything(int(cfg.seed), verbose=False)
    env = instantiate(cfg.problem.env)
    policy = instantiate(cfg.model)
    if cfg.get("init_checkpoint"):
        policy.load_state_dict(checkpoint.load(cfg.init_checkpoint).policy.state_dict())
    return env, policy


def build(cfg: DictConfig) -> tuple[L.Trainer, SelfImprovementModule, TrajectoryDataModule]:
    """Trainer, module and DataModule (holding the sampler) for a composed train config."""
    out = Path(cfg.out_dir)
    tcfg = cfg.training
    model_cfg = to_dict(cfg.model, "model")
    problem_cfg = to_dict(cfg.problem, "problem")
    registry.check_pair(model_cfg, problem_cfg["env"], "train config")
    search_cfg = to_dict(cfg.search, "search")
    env, policy = initial_policy(cfg)
    val_instances, val_refs = validation_set(cfg, env)
    sampler: Sampler | None = None
    expert = None
    if cfg.mode == "sl":
        if not cfg.get("sl_data"):
            raise ValueError("train config: mode 'sl' needs sl_data (an .npz with expert tours).")
        expert = expert_data(str(cfg.sl_data), env)
    elif cfg.mode == "si":
        sampler = make_sampler(
            cfg.distributed, env, problem_cfg["env"], model_cfg, progress=interactive(cfg)
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
        imitation=str(tcfg.get("imitation", "subtrajectories")),
        augment=augment_setting(tcfg.get("augment", True)),
        greedy_candidate=tcfg.get("greedy_candidate", False),
    )
    stop = tcfg.get("stop_objective")
    module = SelfImprovementModule(
        policy,
        env,
        lr=float(tcfg.lr),
        stop_objective=None if stop is None else float(stop),
        lr_decay=float(tcfg.get("lr_decay", 1.0)),
        ema_decay=None if tcfg.get("ema_decay") is None else float(tcfg.ema_decay),
        warmup_steps=int(tcfg.get("warmup_steps", 0)),
        lr_decay_from=int(tcfg.get("lr_decay_from", 0)),
        imitation=str(tcfg.get("imitation", "subtrajectories")),
        restart_from_best=tcfg.get("restart_from_best", False),
        val_augment=None if tcfg.get("val_augment") is None else int(tcfg.val_augment),
    )
    meta = {
        "mode": cfg.mode,
        "seed": int(cfg.seed),
        "search": search_cfg if cfg.mode == "si" else {},
    }
    callbacks = [
        *named_instances(cfg.get("callbacks")),
        ExportBest(out / "best.pt", model_cfg, problem_cfg, meta),
        KeepLogs(),
        ReleaseMemory(),
    ]
    if bool(cfg.trainer.get("enable_progress_bar", True)) and not interactive(cfg):
        callbacks.append(LineProgress(float(tcfg.get("progress_interval_s", 60))))
    loggers = named_instances(cfg.get("logger"))
    on_cpu = cfg.trainer.get("accelerator") == "cpu" or (
        cfg.trainer.get("accelerator") == "auto" and not torch.cuda.is_available()
    )
    if "bf16" in str(cfg.trainer.get("precision")) and on_cpu:
        warn_slow_bf16("cpu", f"trainer.precision={cfg.trainer.precision}")
    trainer = instantiate(
        cfg.trainer,
        logger=loggers or False,
        callbacks=callbacks,
        default_root_dir=str(out),
        reload_dataloaders_every_n_epochs=1,
        plugins=[AtomicCheckpointIO()],
        use_distributed_sampler=False,  # under DDP the DataModule shares out the work itself
    )
    return trainer, module, datamodule


def named_instances(group: DictConfig | None) -> list[Any]:
    """Instantiate each named `_target_` config of a group such as `logger` or `callbacks`
    (`{csv: {...}, tensorboard: {...}}`); null entries are skipped."""
    if not group:
        return []
    return [instantiate(node) for node in group.values() if node is not None]


def interactive(cfg: DictConfig) -> bool:
    """Progress bars only where someone watches: `training.progress` and stderr a terminal."""
    return bool(cfg.training.progress) and sys.stderr.isatty()


def resume_path(cfg: DictConfig) -> str | None:
    """The checkpoint to resume: `ckpt_path`, else (with `resume`) the run folder's own
    `checkpoints/last.ckpt` when it exists, so rerunning the same command continues."""
    if cfg.get("ckpt_path"):
        return str(cfg.ckpt_path)
    last = Path(cfg.out_dir) / "checkpoints" / "last.ckpt"
    if cfg.get("resume", True) and last.is_file():
        print(f"nco-train: resuming from {last}", file=sys.stderr, flush=True)
        return str(last)
    return None


class Preempted(Exception):
    """The run stopped on SIGTERM; `last.ckpt` (if any) holds its last finished epoch."""


def _stop_sampling(datamodule: TrajectoryDataModule) -> Callable[[int, FrameType | None], None]:
    """A SIGTERM handler that interrupts the epoch's sampling step at once. Lightning's own
    handler (run first) only sets a flag that its loops check between optimizer steps and
    validation batches; sampling, which may take minutes, never looks at it."""

    def handler(signum: int, frame: FrameType | None) -> None:
        if datamodule.sampling:
            raise SIGTERMException()

    return handler


def run(cfg: DictConfig) -> dict[str, Any]:
    """Train as configured; returns the best validation objective, its epoch and best.pt's path.

    On SIGTERM (what schedulers send before they kill a job) training stops at the next step,
    validation batch or sampled chunk, the sampler's workers are released, and `Preempted` is
    raised; the epoch in progress is dropped, so rerunning the same command resumes from the
    last finished epoch's `last.ckpt` and repeats that epoch exactly.
    """
    trainer, module, datamodule = build(cfg)
    params = to_dict(cfg, "train config")
    for logger in trainer.loggers:
        logger.log_hyperparams(params)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if main_thread else None
    if main_thread:
        signal.signal(signal.SIGTERM, _stop_sampling(datamodule))
    try:
        trainer.fit(module, datamodule=datamodule, ckpt_path=resume_path(cfg))
    except SIGTERMException as stop:
        last = Path(cfg.out_dir) / "checkpoints" / "last.ckpt"
        where = "sampling" if datamodule.sampling else "training"
        kept = f"{last} holds the last finished epoch" if last.is_file() else "no epoch finished"
        raise Preempted(
            f"stopped by SIGTERM in epoch {trainer.current_epoch} ({where}); {kept}. "
            "Rerun the same command to resume."
        ) from stop
    finally:
        if main_thread and previous is not None:  # None: a handler not set from Python
            signal.signal(signal.SIGTERM, previous)
        datamodule.sampling = False
        if datamodule.sampler is not None:
            datamodule.sampler.close()
    return {
        "best_objective": module.best_objective,
        "best_epoch": module.best_epoch,
        "best_checkpoint": str(Path(cfg.out_dir) / "best.pt"),
    }
