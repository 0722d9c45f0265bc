"""Inference helpers shared by the commands that decode with a checkpoint (`nco-eval`,
`nco-solve`) and by Python users: checkpoint and device checks, search configs, the policy's
precision and kNN settings, dataset arrays to an env's instances, and best-of decoding."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from nco.decode import decode, decoder_kwargs
from nco.env import Batch, Env
from nco.paths import DATA_DIR
from nco.policy import HasKnn, HasPrecision
from nco.problem import Problem
from nco.progress import progress_bar
from nco.registry import get_problem

PRECISIONS = ("fp32", "bf16")
KNN_OFF = ("none", "off", "false", "0")
SHIPPED_PREFIX = "shipped:"


def shipped_checkpoints() -> list[str]:
    """Names of the checkpoints shipped with nco (`data/checkpoints/<name>/best.pt`)."""
    folder = DATA_DIR / "checkpoints"
    return sorted(p.parent.name for p in folder.glob("*/best.pt")) if folder.is_dir() else []


def check_checkpoint(path: str | None, command: str) -> Path:
    """The checkpoint path as a Path (`shipped:<name>` names one shipped with nco, wherever it
    is installed); ValueError when it is not given or not a file."""
    if not path:
        raise ValueError(f"{command}: checkpoint= is required (a file written by nco-train).")
    if str(path).startswith(SHIPPED_PREFIX):
        name = str(path)[len(SHIPPED_PREFIX) :]
        if name not in shipped_checkpoints():
            names = ", ".join(SHIPPED_PREFIX + n for n in shipped_checkpoints())
            raise ValueError(
                f"{command}: checkpoint={path} is not shipped; expected one of {names}."
            )
        return DATA_DIR / "checkpoints" / name / "best.pt"
    file = Path(str(path))
    if not file.is_file():
        raise ValueError(f"{command}: checkpoint file {file} not found.")
    return file


def check_device(device: str, command: str) -> torch.device:
    """`device` as a torch.device; ValueError for CUDA on a machine without it."""
    try:
        dev = torch.device(device)
    except RuntimeError as err:
        raise ValueError(f"{command}: device={device!r} is not a torch device ({err}).") from err
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{command}: device={device!r} but CUDA is not available here.")
    return dev


def search_config(search: Mapping[str, Any]) -> dict[str, Any]:
    """The search config as a plain dict, checked against its decoder's signature.

    Raises ValueError for an unknown method (listing the valid ones) or unknown parameters.
    """
    cfg = dict(search)
    decoder_kwargs(cfg)
    return cfg


def describe_search(search: Mapping[str, Any]) -> str:
    """A short method label such as `gumbeldore(beam_width=32, rounds=4, ...)`; augment and
    starts are named only where they are on (every search config holds them, at 1 and null)."""
    off = {"augment": 1, "starts": None}
    params = [
        f"{k}={v}"
        for k, v in search.items()
        if k not in ("method", "batch_size") and not (k in off and v == off[k])
    ]
    return f"{search['method']}({', '.join(params)})" if params else str(search["method"])


def parse_knn(knn: Any, command: str = "nco-eval") -> int | None:
    """`knn=` as given: None (automatic), 0 (off: `knn=0`, `none`, `off`, `false`) or k >= 1."""
    if knn is None:
        return None
    if isinstance(knn, bool) or str(knn).strip().lower() in KNN_OFF:
        if knn is True:
            raise ValueError(f"{command}: expected knn = null, 0 / none / off or k >= 1, got true.")
        return 0
    try:
        value = int(str(knn))
    except ValueError:
        value = -1
    if value < 1:
        raise ValueError(f"{command}: expected knn = null, 0 / none / off or k >= 1, got {knn!r}.")
    return value


def configure_policy(
    policy: nn.Module,
    problem: Problem | str,
    size: int,
    precision: str | None,
    knn: Any,
    command: str = "nco-eval",
    saved_knn: Any = None,
) -> dict[str, Any]:
    """Apply the `precision` and `knn` overrides to `policy` where it has those attributes.

    `knn`: null = automatic, i.e. the checkpoint's own setting (`saved_knn`) when it has one,
    else the problem descriptor's `auto_knn(size)` (CVRP: 250 beyond 250 customers; TSP: none);
    0 / none / off = no restriction; k >= 1 = the k nearest nodes. Returns the settings in
    effect (None = absent or off).
    """
    if precision is not None:
        if precision not in PRECISIONS:
            raise ValueError(f"{command}: expected precision in {PRECISIONS}, got {precision!r}.")
        if isinstance(policy, HasPrecision):
            policy.precision = precision
        else:
            warnings.warn(
                f"{command}: {type(policy).__name__} has no precision setting; "
                f"precision={precision} is ignored.",
                stacklevel=2,
            )
    if isinstance(problem, str):
        problem = get_problem(problem)
    value = parse_knn(knn, command)
    if isinstance(policy, HasKnn):
        if value is None:
            policy.knn = saved_knn if saved_knn is not None else problem.auto_knn(size)
        else:
            policy.knn = value or None
    elif value:
        warnings.warn(
            f"{command}: {type(policy).__name__} has no knn setting; knn={knn} is ignored.",
            stacklevel=2,
        )
    return {
        "precision": policy.precision if isinstance(policy, HasPrecision) else None,
        "knn": policy.knn if isinstance(policy, HasKnn) else None,
    }


def to_instances(env: Env, arrays: Mapping[str, np.ndarray], source: str) -> Batch:
    """Arrays with a leading instance dim as the env's instance batch.

    Field names and dtypes are those of `env.generate`'s batches; `source` names the data in
    errors.
    """
    like = env.generate(1, torch.Generator().manual_seed(0))
    fields = {}
    for field in dataclasses.fields(like):
        if field.name not in arrays:
            raise ValueError(f"{source}: missing field {field.name!r} for {type(like).__name__}.")
        dtype = getattr(like, field.name).dtype
        fields[field.name] = torch.as_tensor(np.asarray(arrays[field.name])).to(dtype)
    return type(like)(**fields)


def decode_best(
    policy: nn.Module,
    env: Env,
    instances: Batch,
    search: Mapping[str, Any],
    batch_size: int,
    seed: int,
    progress: bool = True,
) -> tuple[list[list[int]], torch.Tensor]:
    """Best action sequence (padding removed) and objective per instance, in batches.

    One CPU generator seeded with `seed` drives every batch, so a run is reproducible for a
    given batch size.
    """
    if batch_size < 1:
        raise ValueError(f"nco-eval: expected batch_size >= 1, got {batch_size}.")
    generator = torch.Generator().manual_seed(int(seed))
    cfg = {**dict(search), "batch_size": None}
    sequences: list[list[int]] = []
    objectives = []
    starts = range(0, instances.batch_size, batch_size)
    for start in progress_bar(starts, progress, desc=str(search["method"]), unit="batch"):
        idx = torch.arange(start, min(start + batch_size, instances.batch_size))
        best = decode(policy, env, instances.index(idx), cfg, generator).best()
        sequences.extend([a for a in row if a >= 0] for row in best.actions.tolist())
        objectives.append(best.objective.to(torch.float64))
    return sequences, torch.cat(objectives)
