"""`nco-import`'s work: the Gumbeldore authors' published checkpoints as nco checkpoints.

    nco-import src=tsp_bq_gumbeldore.pt model=bq_tsp out=best.pt
    python -m nco.cli.importer src=... model=bq_tsp out=best.pt num_nodes=100

The authors' files are `torch.save` dicts with `model_weights` and `best_model_weights` (state
dicts of their network classes), `optimizer_state`, `epochs_trained` and `validation_opt_gap`.
They are read with `torch.load(weights_only=True)`, so nothing in them can run code; the best
weights are renamed to nco's parameters, every shape is checked, and the result is written with
`nco.checkpoint.save`, for `nco-eval`, `nco-solve` and `nco.checkpoint.load` as they are.

Supported (`model=`): `bq_tsp` (tsp/bq_network.py), `lehd_tsp` (tsp/lehd_network.py), `bq_cvrp`
(cvrp/bq_network.py) and `jssp` (jssp/network.py), each into the nco policy built in the
authors' exact form (GELU, one ReZero weight per layer, `form: paper`). The attention heads
cannot be read from weights; `heads` defaults to the paper's value for the model (12 for
`bq_cvrp`, else 8). `num_nodes` sets the problem size recorded for TSP / CVRP; a JSSP file gets
the problem config of configs/problem/jssp.yaml (decoding works on any size).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import torch
from omegaconf import OmegaConf

from nco import checkpoint, registry
from nco.paths import CONFIG_DIR

WEIGHT_FIELDS = ("best_model_weights", "model_weights")


def _layer(src: str, dst: str, rezero: bool) -> dict[str, str]:
    """Reference -> nco names of one layer (nn.MultiheadAttention, feed-forward, ReZero weight)."""
    names = {
        src + "self_attn.in_proj_weight": dst + "attn.qkv.weight",
        src + "self_attn.in_proj_bias": dst + "attn.qkv.bias",
        src + "self_attn.out_proj.weight": dst + "attn.out.weight",
        src + "self_attn.out_proj.bias": dst + "attn.out.bias",
        src + "linear1.weight": dst + "ff.0.weight",
        src + "linear1.bias": dst + "ff.0.bias",
        src + "linear2.weight": dst + "ff.2.weight",
        src + "linear2.bias": dst + "ff.2.bias",
    }
    if rezero:
        names[src + "resweight"] = dst + "alpha"
    return names


def _count(weights: dict[str, torch.Tensor], prefix: str) -> int:
    """Number of indexed layers `prefix.<i>.` in the weights."""
    found = (re.match(rf"{re.escape(prefix)}\.(\d+)\.", k) for k in weights)
    return 1 + max((int(m.group(1)) for m in found if m), default=-1)


def _require(weights: dict[str, torch.Tensor], keys: tuple[str, ...], source: str) -> None:
    """ValueError unless the weights hold `keys` and come from ReZero (not pre-norm) layers."""
    if any(k not in weights for k in keys):
        raise ValueError(f"expected the parameters of {source} ({', '.join(keys)}).")
    if any(".norm1." in k for k in weights):
        raise ValueError(
            f"the file has LayerNorm layers (use_rezero_transformer=False in {source}); "
            "only the paper's ReZero layers are supported."
        )


def _ff_dim(weights: dict[str, torch.Tensor], layer: str) -> int:
    return int(weights[layer + "linear1.weight"].shape[0])


def _bq_tsp(weights: dict[str, torch.Tensor], heads: int) -> tuple[dict, dict[str, str]]:
    """Model config and name map of the authors' BQ TSP network (tsp/bq_network.py)."""
    _require(
        weights, ("node_embedding.weight", "graph_encoder.0.linear1.weight"), "tsp/bq_network.py"
    )
    layers = _count(weights, "graph_encoder")
    names = {
        "node_embedding.weight": "embed.weight",
        "node_embedding.bias": "embed.bias",
        "first_last_marker.weight": "markers",
        "policy_linear_out.weight": "head.weight",
        "policy_linear_out.bias": "head.bias",
    }
    for i in range(layers):
        names.update(_layer(f"graph_encoder.{i}.", f"encoder.layers.{i}.", rezero=True))
    model = {
        "_target_": "nco.models.bq.BQPolicy",
        "dim": int(weights["node_embedding.weight"].shape[0]),
        "layers": layers,
        "heads": heads,
        "ff_dim": _ff_dim(weights, "graph_encoder.0."),
        "precision": "fp32",
        "knn": None,
        "activation": "gelu",
        "rezero": "shared",
    }
    return model, names


def _lehd_tsp(weights: dict[str, torch.Tensor], heads: int) -> tuple[dict, dict[str, str]]:
    """Model config and name map of the authors' LEHD TSP network (tsp/lehd_network.py): one
    encoder layer on all nodes, decoder layers on [start, remaining, destination]."""
    keys = ("node_embedding.weight", "graph_encoder.linear1.weight", "start_projection.weight")
    _require(weights, keys, "tsp/lehd_network.py")
    layers = _count(weights, "graph_decoder")
    names = {
        "node_embedding.weight": "embed.weight",
        "node_embedding.bias": "embed.bias",
        "start_projection.weight": "origin_map.weight",
        "start_projection.bias": "origin_map.bias",
        "dest_projection.weight": "dest_map.weight",
        "dest_projection.bias": "dest_map.bias",
        "policy_linear_out.weight": "head.weight",
        "policy_linear_out.bias": "head.bias",
        **_layer("graph_encoder.", "encoder.0.", rezero=False),
    }
    for i in range(layers):
        names.update(_layer(f"graph_decoder.{i}.", f"decoder.{i}.", rezero=False))
    model = {
        "_target_": "nco.models.lehd.LEHDTSPPolicy",
        "dim": int(weights["node_embedding.weight"].shape[0]),
        "heads": heads,
        "ff_dim": _ff_dim(weights, "graph_encoder."),
        "encoder_layers": 1,
        "decoder_layers": layers,
        "precision": "fp32",
        "knn": None,
        "activation": "gelu",
    }
    return model, names


def _bq_cvrp(weights: dict[str, torch.Tensor], heads: int) -> tuple[dict, dict[str, str]]:
    """Model config and name map of the authors' BQ CVRP network (cvrp/bq_network.py)."""
    keys = (
        "node_embedding.weight",
        "depot_start_node_marker.weight",
        "graph_encoder.0.linear1.weight",
    )
    _require(weights, keys, "cvrp/bq_network.py")
    layers = _count(weights, "graph_encoder")
    names = {
        "node_embedding.weight": "embed.weight",
        "node_embedding.bias": "embed.bias",
        "depot_start_node_marker.weight": "markers",  # rows: depot, start node (form "paper")
        "policy_linear_out.weight": "head.weight",
        "policy_linear_out.bias": "head.bias",
    }
    for i in range(layers):
        names.update(_layer(f"graph_encoder.{i}.", f"encoder.layers.{i}.", rezero=True))
    model = {
        "_target_": "nco.models.bq_cvrp.BQCVRPPolicy",
        "dim": int(weights["node_embedding.weight"].shape[0]),
        "layers": layers,
        "heads": heads,
        "ff_dim": _ff_dim(weights, "graph_encoder.0."),
        "precision": "fp32",
        "knn": None,
        "activation": "gelu",
        "rezero": "shared",
        "form": "paper",
    }
    return model, names


def _jssp(weights: dict[str, torch.Tensor], heads: int) -> tuple[dict, dict[str, str]]:
    """Model config and name map of the authors' JSSP network (jssp/network.py): encoder layers
    alternate job-wise (even) and machine-wise (odd), then one layer over the next operations."""
    keys = ("operation_embedding.weight", "encoder.0.linear1.weight", "final_trf_block.resweight")
    _require(weights, keys, "jssp/network.py")
    layers = _count(weights, "encoder")
    if layers % 2:
        raise ValueError(
            f"expected an even number of encoder layers (job/machine pairs), got {layers}."
        )
    names = {
        "operation_embedding.weight": "embed.weight",
        "operation_embedding.bias": "embed.bias",
        "policy_linear_out.weight": "head.weight",
        "policy_linear_out.bias": "head.bias",
        **_layer("final_trf_block.", "final.", rezero=True),
    }
    for i in range(layers):
        kind = "job_layers" if i % 2 == 0 else "machine_layers"
        names.update(_layer(f"encoder.{i}.", f"{kind}.{i // 2}.", rezero=True))
    model = {
        "_target_": "nco.models.jssp_transformer.JSSPTransformer",
        "dim": int(weights["operation_embedding.weight"].shape[0]),
        "pairs": layers // 2,
        "heads": heads,
        "ff_dim": _ff_dim(weights, "encoder.0."),
        "precision": "fp32",
        "activation": "gelu",
        "rezero": "shared",
        "form": "paper",
    }
    return model, names


class Spec(NamedTuple):
    """How to import one of the authors' networks."""

    convert: Callable[[dict[str, torch.Tensor], int], tuple[dict, dict[str, str]]]
    problem: str  # configs/problem/<problem>.yaml
    size_key: str | None  # the problem config key that `num_nodes` sets
    heads: int  # the paper's attention heads (not stored in the weights)


MODELS: dict[str, Spec] = {
    "bq_tsp": Spec(_bq_tsp, "tsp", "num_nodes", 8),
    "lehd_tsp": Spec(_lehd_tsp, "tsp", "num_nodes", 8),
    "bq_cvrp": Spec(_bq_cvrp, "cvrp", "num_customers", 12),
    "jssp": Spec(_jssp, "jssp", None, 8),
}


def problem_config(name: str, size_key: str | None, size: int) -> dict[str, Any]:
    """configs/problem/<name>.yaml resolved, with `size_key` set to `size`."""
    cfg = OmegaConf.create({"problem": OmegaConf.load(CONFIG_DIR / "problem" / f"{name}.yaml")})
    if size_key is not None:
        cfg.problem[size_key] = size
    return OmegaConf.to_container(cfg, resolve=True)["problem"]


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
    spec = MODELS[model]
    weights, meta = reference_weights(src)
    try:
        model_cfg, names = spec.convert(weights, heads or spec.heads)
    except ValueError as err:
        raise ValueError(f"nco-import: {src} for model={model}: {err}") from err
    policy = registry.build("policy", model_cfg, "nco-import model")
    target = policy.state_dict()
    missing = sorted(set(names) - set(weights))
    unexpected = sorted(set(weights) - set(names))
    if missing or unexpected:
        raise ValueError(
            f"nco-import: {src} does not fit model={model}: {len(missing)} missing "
            f"parameters {missing[:5]}, {len(unexpected)} unexpected {unexpected[:5]}."
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
    problem = problem_config(spec.problem, spec.size_key, num_nodes)
    out = Path(out)
    meta = {**meta, "imported_from": str(src), "reference_model": model}
    checkpoint.save(out, policy, model_cfg, problem, meta)
    return out
