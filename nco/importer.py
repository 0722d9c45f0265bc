"""`nco-import`: the Gumbeldore authors' published checkpoints as ordinary nco checkpoints.

    nco-import src=tsp_bq_gumbeldore.pt model=bq_tsp out=best.pt
    python -m nco.importer src=... model=bq_tsp out=best.pt num_nodes=100

The authors' files are `torch.save` dicts with `model_weights` and `best_model_weights` (state
dicts of their network classes), `optimizer_state`, `epochs_trained` and `validation_opt_gap`.
They are read with `torch.load(weights_only=True)`, so nothing in them can run code; the best
weights are renamed to nco's parameters, every shape is checked, and the result is written with
`nco.checkpoint.save`, for `nco-eval`, `nco-solve` and `nco.checkpoint.load` as they are.

Supported: `bq_tsp` (tsp/bq_network.py, the paper's BQ for TSP: GELU, one ReZero weight per
layer). The attention heads cannot be read from weights; `heads` defaults to the paper's 8.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hydra
import torch
from omegaconf import DictConfig

from nco import checkpoint, registry
from nco.paths import CONFIG_DIR

WEIGHT_FIELDS = ("best_model_weights", "model_weights")


def _bq_tsp_names(layer: int) -> dict[str, str]:
    """Reference parameter name -> nco name within one transformer block."""
    src, dst = f"graph_encoder.{layer}.", f"encoder.layers.{layer}."
    return {
        src + "self_attn.in_proj_weight": dst + "attn.qkv.weight",
        src + "self_attn.in_proj_bias": dst + "attn.qkv.bias",
        src + "self_attn.out_proj.weight": dst + "attn.out.weight",
        src + "self_attn.out_proj.bias": dst + "attn.out.bias",
        src + "linear1.weight": dst + "ff.0.weight",
        src + "linear1.bias": dst + "ff.0.bias",
        src + "linear2.weight": dst + "ff.2.weight",
        src + "linear2.bias": dst + "ff.2.bias",
        src + "resweight": dst + "alpha",
    }


def _bq_tsp(weights: dict[str, torch.Tensor], heads: int) -> tuple[dict, dict[str, str]]:
    """Model config and name map of the reference BQ TSP network."""
    layers = 1 + max(
        (int(m.group(1)) for k in weights if (m := re.match(r"graph_encoder\.(\d+)\.", k))),
        default=-1,
    )
    if layers == 0 or "node_embedding.weight" not in weights:
        raise ValueError("expected the parameters of tsp/bq_network.py (graph_encoder.*).")
    names = {
        "node_embedding.weight": "embed.weight",
        "node_embedding.bias": "embed.bias",
        "first_last_marker.weight": "markers",
        "policy_linear_out.weight": "head.weight",
        "policy_linear_out.bias": "head.bias",
    }
    for i in range(layers):
        names.update(_bq_tsp_names(i))
    model = {
        "_target_": "models.bq.BQPolicy",
        "dim": int(weights["node_embedding.weight"].shape[0]),
        "layers": layers,
        "heads": heads,
        "ff_dim": int(weights["graph_encoder.0.linear1.weight"].shape[0]),
        "precision": "fp32",
        "knn": None,
        "activation": "gelu",
        "rezero": "shared",
    }
    return model, names


# model name -> (config and name map from the weights, the problem's env target, default heads)
MODELS: dict[str, tuple[Callable[..., tuple[dict, dict[str, str]]], str, int]] = {
    "bq_tsp": (_bq_tsp, "problems.tsp.TSPEnv", 8),
}


def reference_weights(src: str | os.PathLike) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """The best weights of an authors' checkpoint and its other scalar fields (epochs, gap)."""
    path = Path(src)
    if not path.is_file():
        raise ValueError(f"nco-import: src={path} is not a file.")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # not a torch file, or one that needs code to unpickle
        raise ValueError(
            f"nco-import: {path} is not a weights-only torch checkpoint of the Gumbeldore code "
            f"(a dict with {' / '.join(WEIGHT_FIELDS)}): {type(err).__name__}."
        ) from err
    field = next((f for f in WEIGHT_FIELDS if isinstance(payload, dict) and f in payload), None)
    if field is None or not isinstance(payload[field], dict):
        raise ValueError(
            f"nco-import: {path} has no {' or '.join(WEIGHT_FIELDS)} state dict; expected a "
            "checkpoint saved by the Gumbeldore authors' code."
        )
    weights = payload[field]
    bad = [k for k, v in weights.items() if not isinstance(v, torch.Tensor)]
    if bad:
        raise ValueError(f"nco-import: {path}: {field} entries {bad[:3]} are not tensors.")
    meta = {
        k: payload[k]
        for k in ("epochs_trained", "validation_opt_gap")
        if isinstance(payload.get(k), (int, float))
    }
    return weights, {"source_field": field, **meta}


def import_reference(
    src: str | os.PathLike,
    model: str,
    out: str | os.PathLike,
    num_nodes: int = 100,
    heads: int | None = None,
) -> Path:
    """Convert an authors' checkpoint of `model` into an nco checkpoint at `out`."""
    if model not in MODELS:
        raise ValueError(f"nco-import: unknown model={model!r}; expected one of {sorted(MODELS)}.")
    build_config, env_target, default_heads = MODELS[model]
    weights, meta = reference_weights(src)
    try:
        model_cfg, names = build_config(weights, heads or default_heads)
    except ValueError as err:
        raise ValueError(f"nco-import: {src} for model={model}: {err}") from err
    policy = registry.build("policy", model_cfg, "nco-import model")
    target = policy.state_dict()
    missing = sorted(set(names) - set(weights))
    unexpected = sorted(set(weights) - set(names))
    if missing or unexpected:
        raise ValueError(
            f"nco-import: {src} does not fit model={model}: missing {missing[:5]}, "
            f"unexpected {unexpected[:5]}."
        )
    state = {}
    for ref_name, nco_name in names.items():
        value = weights[ref_name]
        if tuple(value.shape) != tuple(target[nco_name].shape):
            raise ValueError(
                f"nco-import: parameter {ref_name} has shape {tuple(value.shape)}, but {nco_name} "
                f"needs {tuple(target[nco_name].shape)}."
            )
        state[nco_name] = value.to(target[nco_name].dtype)
    policy.load_state_dict(state)
    problem = {"name": env_target.split(".")[1], "env": {"_target_": env_target}}
    problem["env"]["num_nodes" if model.endswith("tsp") else "num_customers"] = num_nodes
    out = Path(out)
    meta = {**meta, "imported_from": str(src), "reference_model": model}
    checkpoint.save(out, policy, model_cfg, problem, meta)
    return out


@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR / "importer"), config_name="import")
def main(cfg: DictConfig) -> None:
    """Console entry point `nco-import` (Hydra key=value arguments)."""
    for key in ("src", "model", "out"):
        if not cfg.get(key):
            raise SystemExit(f"nco-import: {key}= is required (see configs/importer/import.yaml).")
    try:
        path = import_reference(
            cfg.src, str(cfg.model), cfg.out, int(cfg.num_nodes), cfg.get("heads")
        )
    except ValueError as err:  # a bad file or argument: one line, no traceback
        raise SystemExit(str(err)) from None
    print(f"nco-import: wrote {path} ({cfg.model} from {cfg.src})")


if __name__ == "__main__":
    main()
