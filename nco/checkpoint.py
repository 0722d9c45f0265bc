"""Inference checkpoints: one file with weights, the model and problem configs, and metadata.

The file holds only tensors, strings, numbers, lists and dicts, so `load` can use
`torch.load(weights_only=True)`; its `_target_` configs rebuild policy and env through
`nco.registry`, which builds only nco's registered classes (never `hydra.utils.instantiate`).
A training run's Lightning `last.ckpt` loads the same way, with the configs of its `best.pt`.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import inspect
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import torch
from torch import nn

from nco import registry
from nco.env import Env

FORMAT = "nco-checkpoint-3"
# What a key missing from an older file's model config meant, per policy class ("*": any class
# that takes the key). Format 1 predates the paper's layer form (GELU, one ReZero weight per
# layer); format 2 predates the authors' exact inputs (`form`) and GELU in LEHD.
LEGACY: dict[str, dict[str, dict[str, Any]]] = {
    "nco-checkpoint-1": {"*": {"activation": "relu", "rezero": "separate", "form": "nco1"}},
    "nco-checkpoint-2": {
        "*": {"form": "nco1"},
        "LEHDTSPPolicy": {"activation": "relu"},
        "LEHDCVRPPolicy": {"activation": "relu"},
    },
}
FIELDS: dict[str, type] = {
    "format": str,
    "weights": dict,
    "model": dict,
    "problem": dict,
    "meta": dict,
}


class Loaded(NamedTuple):
    """A checkpoint turned back into a ready policy (eval mode) and its env."""

    policy: nn.Module
    env: Env
    model: dict[str, Any]  # the model's Hydra config
    problem: dict[str, Any]  # the problem config, with `env` a `_target_` config
    meta: dict[str, Any]  # training metadata: epoch, validation objective, date, version


def save(
    path: str | os.PathLike,
    policy: nn.Module,
    model: Mapping[str, Any],
    problem: Mapping[str, Any],
    meta: Mapping[str, Any] | None = None,
) -> None:
    """Write `policy`'s weights with plain-dict configs; adds date and nco version to `meta`.

    The file is written next to `path` and renamed into place, so a reader never sees half a file.
    """
    if "env" not in problem:
        raise ValueError("checkpoint: field 'problem.env' is missing; expected a _target_ config.")
    info = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "nco_version": _version(),
        "torch_version": str(torch.__version__),
        **dict(meta or {}),
    }
    payload = {
        "format": FORMAT,
        "weights": {k: v.detach().cpu() for k, v in policy.state_dict().items()},
        "model": dict(model),
        "problem": dict(problem),
        "meta": info,
    }
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(payload, tmp)
    tmp.replace(path)


def load(path: str | os.PathLike, device: str | torch.device = "cpu") -> Loaded:
    """Rebuild policy (eval mode, on `device`) and env from a checkpoint written by `save`, or
    from a run's Lightning checkpoint (`*.ckpt`, see `load_training`)."""
    if Path(path).suffix == ".ckpt":
        return load_training(path, device)
    payload = torch.load(path, map_location=device, weights_only=True)
    if not isinstance(payload, dict):
        raise ValueError(f"{path}: expected a checkpoint dict, got {type(payload).__name__}.")
    for field, kind in FIELDS.items():
        if field not in payload:
            raise ValueError(f"{path}: checkpoint field {field!r} is missing.")
        if not isinstance(payload[field], kind):
            raise ValueError(f"{path}: checkpoint field {field!r} must be a {kind.__name__}.")
    if payload["format"] != FORMAT and payload["format"] not in LEGACY:
        raise ValueError(
            f"{path}: field 'format' is {payload['format']!r}; expected one of {[FORMAT, *LEGACY]}."
        )
    if "_target_" not in payload["model"]:
        raise ValueError(f"{path}: checkpoint field 'model._target_' is missing.")
    if "env" not in payload["problem"]:
        raise ValueError(f"{path}: checkpoint field 'problem.env' is missing.")
    registry.check_pair(payload["model"], payload["problem"]["env"], str(path))
    payload["model"] = _upgrade(payload["format"], payload["model"])
    policy = registry.build("policy", payload["model"], f"{path}: field 'model'")
    try:
        policy.load_state_dict(payload["weights"])
    except RuntimeError as err:
        raise ValueError(f"{path}: field 'weights' does not fit field 'model': {err}") from err
    policy = policy.to(device).eval()
    env = registry.build("env", payload["problem"]["env"], f"{path}: field 'problem.env'")
    return Loaded(policy, env, payload["model"], payload["problem"], payload["meta"])


def load_training(path: str | os.PathLike, device: str | torch.device = "cpu") -> Loaded:
    """The policy being trained in a run's Lightning checkpoint (`<run>/checkpoints/last.ckpt`),
    at the end of the epoch it was saved after, rebuilt with the configs of the run's `best.pt`.

    `best.pt` holds the best policy by validation; this reads where the run is now, e.g. to
    decode a run's last epoch. `meta` is best.pt's run facts with `epoch` the checkpoint's and no
    validation results (that epoch's are in the run's metrics).
    """
    path = Path(path)
    template = path.parent.parent / "best.pt"
    if not template.is_file():
        raise ValueError(
            f"{path}: a Lightning checkpoint is read with the configs of its run's best.pt, "
            f"expected at {template}, which is missing."
        )
    best = load(template, device)
    payload = torch.load(path, map_location=device, weights_only=True)
    state = payload.get("state_dict") if isinstance(payload, dict) else None
    if not isinstance(state, dict) or not isinstance(payload.get("epoch"), int):
        raise ValueError(f"{path}: expected a Lightning checkpoint with 'state_dict' and 'epoch'.")
    prefix = "policy."
    weights = {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}
    try:
        best.policy.load_state_dict(weights)
    except RuntimeError as err:
        raise ValueError(f"{path}: 'state_dict' does not fit {template}'s model: {err}") from err
    skip = {"epoch", "val_objective", "val", "date"}
    meta = {
        **{k: v for k, v in best.meta.items() if k not in skip},
        "epoch": payload["epoch"],
        "source": "lightning",
    }
    return best._replace(meta=meta)


def _upgrade(fmt: str, model: dict[str, Any]) -> dict[str, Any]:
    """The model config with the meaning its format gave to missing keys made explicit."""
    cls = registry.resolve("policy", model["_target_"], "model._target_")
    accepted = inspect.signature(cls).parameters
    meant = {**LEGACY.get(fmt, {}).get("*", {}), **LEGACY.get(fmt, {}).get(cls.__name__, {})}
    legacy = {k: v for k, v in meant.items() if k in accepted and k not in model}
    return {**model, **legacy}


def _version() -> str:
    try:
        return importlib.metadata.version("nco")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
