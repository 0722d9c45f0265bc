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

Also supported, from other authors (MIT licence; docs/light_models.md): `am_tsp` / `am_cvrp`,
Kool et al.'s Attention Model (attention-learn-to-route, a dict with `model`), and `pomo_tsp`
/ `pomo_cvrp`, POMO networks as yd-kwon/POMO and jieyibi/AMDKD save them (a dict with
`model_state_dict`; AMDKD's distillation-only projections are dropped). They get the AM-form
problem configs (configs/problem/tsp_am.yaml, cvrp_am.yaml); POMO's heads default to 8.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import torch
from omegaconf import OmegaConf

from nco import checkpoint, registry
from nco.config import to_dict
from nco.paths import CONFIG_DIR

WEIGHT_FIELDS = ("best_model_weights", "model_weights")
AM_FIELDS = ("model",)  # attention-learn-to-route's torch.save dict
POMO_FIELDS = ("model_state_dict",)  # POMO's and AMDKD's


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


def _bq(
    weights: dict[str, torch.Tensor],
    heads: int,
    keys: tuple[str, ...],
    source: str,
    marker: str,
    target: str,
    **extra: Any,
) -> tuple[dict, dict[str, str]]:
    """Model config and name map of the authors' BQ networks (`source`: tsp/ or
    cvrp/bq_network.py): node embedding, learned `marker` rows, ReZero encoder layers, a linear
    head. TSP and CVRP differ only in the marker parameter, the policy class and `extra` config."""
    _require(weights, keys, source)
    layers = _count(weights, "graph_encoder")
    names = {
        "node_embedding.weight": "embed.weight",
        "node_embedding.bias": "embed.bias",
        marker: "markers",
        "policy_linear_out.weight": "head.weight",
        "policy_linear_out.bias": "head.bias",
    }
    for i in range(layers):
        names.update(_layer(f"graph_encoder.{i}.", f"encoder.layers.{i}.", rezero=True))
    model = {
        "_target_": target,
        "dim": int(weights["node_embedding.weight"].shape[0]),
        "layers": layers,
        "heads": heads,
        "ff_dim": _ff_dim(weights, "graph_encoder.0."),
        "precision": "fp32",
        "knn": None,
        "activation": "gelu",
        "rezero": "shared",
        **extra,
    }
    return model, names


def _bq_tsp(weights: dict[str, torch.Tensor], heads: int) -> tuple[dict, dict[str, str]]:
    """Model config and name map of the authors' BQ TSP network (tsp/bq_network.py)."""
    keys = ("node_embedding.weight", "graph_encoder.0.linear1.weight")
    marker = "first_last_marker.weight"
    return _bq(weights, heads, keys, "tsp/bq_network.py", marker, "nco.models.bq.BQPolicy")


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
    """Model config and name map of the authors' BQ CVRP network (cvrp/bq_network.py); its
    marker rows are depot and start node (form "paper")."""
    marker = "depot_start_node_marker.weight"
    keys = ("node_embedding.weight", marker, "graph_encoder.0.linear1.weight")
    target = "nco.models.bq_cvrp.BQCVRPPolicy"
    return _bq(weights, heads, keys, "cvrp/bq_network.py", marker, target, form="paper")


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


def _am(weights: dict[str, torch.Tensor], heads: int, cvrp: bool) -> tuple[dict, dict[str, str]]:
    """Model config and name map of Kool et al.'s AttentionModel (nets/attention_model.py)."""
    first = ("init_embed_depot.weight",) if cvrp else ("W_placeholder",)
    keys = (*first, "init_embed.weight", "embedder.layers.0.0.module.W_query")
    _require(weights, keys, "attention-learn-to-route nets/attention_model.py")
    if "embedder.layers.0.1.normalizer.running_mean" not in weights:
        raise ValueError("expected batch normalization (the published models' 'batch').")
    layers = _count(weights, "embedder.layers")
    names = {
        "init_embed.weight": "init_embed.weight",
        "init_embed.bias": "init_embed.bias",
        "project_node_embeddings.weight": "project_nodes.weight",
        "project_fixed_context.weight": "project_fixed.weight",
        "project_step_context.weight": "project_step.weight",
        "project_out.weight": "project_out.weight",
    }
    if cvrp:
        names["init_embed_depot.weight"] = "init_embed_depot.weight"
        names["init_embed_depot.bias"] = "init_embed_depot.bias"
    else:
        names["W_placeholder"] = "placeholder"
    for i in range(layers):
        src, dst = f"embedder.layers.{i}.", f"layers.{i}."
        for ref, own in (("W_query", "w_query"), ("W_key", "w_key"), ("W_val", "w_val")):
            names[f"{src}0.module.{ref}"] = f"{dst}attention.{own}"
        names[f"{src}0.module.W_out"] = f"{dst}attention.w_out"
        for part in ("weight", "bias"):
            names[f"{src}2.module.0.{part}"] = f"{dst}ff.0.{part}"
            names[f"{src}2.module.2.{part}"] = f"{dst}ff.2.{part}"
        for sub, norm in (("1", "norm1"), ("3", "norm2")):
            for part in ("weight", "bias", "running_mean", "running_var"):
                names[f"{src}{sub}.normalizer.{part}"] = f"{dst}{norm}.{part}"
    model = {
        "_target_": f"nco.models.am.{'AMCVRPPolicy' if cvrp else 'AMTSPPolicy'}",
        "embed_dim": int(weights["init_embed.weight"].shape[0]),
        "num_heads": int(weights["embedder.layers.0.0.module.W_query"].shape[0]),
        "num_layers": layers,
        "ff_hidden": int(weights["embedder.layers.0.2.module.0.weight"].shape[0]),
        "tanh_clipping": 10.0,
    }
    return model, names


def _pomo(
    weights: dict[str, torch.Tensor], heads: int, cvrp: bool
) -> tuple[dict, dict[str, str | None]]:
    """Model config and name map of POMO's TSPModel / CVRPModel (yd-kwon/POMO, AMDKD)."""
    embed = ("encoder.embedding_node.weight",) if cvrp else ("encoder.embedding.weight",)
    _require(weights, (*embed, "encoder.layers.0.Wq.weight", "decoder.Wk.weight"), "POMO")
    layers = _count(weights, "encoder.layers")
    names: dict[str, str | None] = {
        "decoder.Wk.weight": "wk.weight",
        "decoder.Wv.weight": "wv.weight",
        "decoder.multi_head_combine.weight": "combine.weight",
        "decoder.multi_head_combine.bias": "combine.bias",
        "decoder.Wq_last.weight": "wq_last.weight",
        "W_hidden.weight": None,  # AMDKD's distillation projections, unused by the policy
        "W_embed.weight": None,
    }
    inputs = ("embedding_depot", "embedding_node") if cvrp else ("embedding",)
    for name in inputs:
        for part in ("weight", "bias"):
            names[f"encoder.{name}.{part}"] = f"{name}.{part}"
    if not cvrp:
        names["decoder.Wq_first.weight"] = "wq_first.weight"
    norm1, ff, norm2 = (
        ("add_n_normalization_1", "feed_forward", "add_n_normalization_2")
        if cvrp
        else ("addAndNormalization1", "feedForward", "addAndNormalization2")
    )
    for i in range(layers):
        src, dst = f"encoder.layers.{i}.", f"layers.{i}."
        for w in ("Wq", "Wk", "Wv"):
            names[f"{src}{w}.weight"] = f"{dst}{w.lower()}.weight"
        for part in ("weight", "bias"):
            names[f"{src}multi_head_combine.{part}"] = f"{dst}combine.{part}"
            names[f"{src}{norm1}.norm.{part}"] = f"{dst}norm1.{part}"
            names[f"{src}{norm2}.norm.{part}"] = f"{dst}norm2.{part}"
            names[f"{src}{ff}.W1.{part}"] = f"{dst}ff.0.{part}"
            names[f"{src}{ff}.W2.{part}"] = f"{dst}ff.2.{part}"
    width = int(weights["decoder.Wk.weight"].shape[0])
    if width % heads:
        raise ValueError(f"decoder width {width} is not divisible by heads={heads}.")
    model = {
        "_target_": f"nco.models.pomo.{'POMOCVRPPolicy' if cvrp else 'POMOTSPPolicy'}",
        "embed_dim": int(weights["encoder.layers.0.Wq.weight"].shape[1]),
        "num_heads": heads,
        "head_dim": width // heads,
        "num_layers": layers,
        "ff_hidden": int(weights[f"encoder.layers.0.{ff}.W1.weight"].shape[0]),
        "logit_clipping": 10.0,
    }
    return model, {k: v for k, v in names.items() if k in weights or v is not None}


class Spec(NamedTuple):
    """How to import one of the authors' networks."""

    convert: Callable[[dict[str, torch.Tensor], int], tuple[dict, Mapping[str, str | None]]]
    problem: str  # configs/problem/<problem>.yaml
    size_key: str | None  # the problem config key that `num_nodes` sets
    heads: int  # the paper's attention heads (not stored in the weights)
    fields: tuple[str, ...] = WEIGHT_FIELDS  # where the file keeps the state dict
    code: str = "the Gumbeldore code"  # whose files these are, for errors


MODELS: dict[str, Spec] = {
    "bq_tsp": Spec(_bq_tsp, "tsp", "num_nodes", 8),
    "lehd_tsp": Spec(_lehd_tsp, "tsp", "num_nodes", 8),
    "bq_cvrp": Spec(_bq_cvrp, "cvrp", "num_customers", 12),
    "jssp": Spec(_jssp, "jssp", None, 8),
    "am_tsp": Spec(
        lambda w, h: _am(w, h, cvrp=False), "tsp_am", "num_nodes", 8, AM_FIELDS, "Kool et al."
    ),
    "am_cvrp": Spec(
        lambda w, h: _am(w, h, cvrp=True), "cvrp_am", "num_customers", 8, AM_FIELDS, "Kool et al."
    ),
    "pomo_tsp": Spec(
        lambda w, h: _pomo(w, h, cvrp=False), "tsp_am", "num_nodes", 8, POMO_FIELDS, "POMO"
    ),
    "pomo_cvrp": Spec(
        lambda w, h: _pomo(w, h, cvrp=True), "cvrp_am", "num_customers", 8, POMO_FIELDS, "POMO"
    ),
}


def problem_config(name: str, size_key: str | None, size: int) -> dict[str, Any]:
    """configs/problem/<name>.yaml resolved, with `size_key` set to `size`."""
    cfg = OmegaConf.create({"problem": OmegaConf.load(CONFIG_DIR / "problem" / f"{name}.yaml")})
    if size_key is not None:
        cfg.problem[size_key] = size
    return to_dict(cfg.problem, "problem")


def reference_weights(
    src: str | os.PathLike,
    fields: tuple[str, ...] = WEIGHT_FIELDS,
    code: str = "the Gumbeldore code",
) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """The best weights of an authors' checkpoint (the first of `fields` it holds) and its
    other scalar fields (epochs, gap); `code` names the authors in errors."""
    path = Path(src)
    if not path.is_file():
        raise ValueError(f"nco-import: src={path} is not a file.")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # not a torch file, or one that needs code to unpickle
        raise ValueError(
            f"nco-import: {path} is not a weights-only torch checkpoint of {code} "
            f"(a dict with {' / '.join(fields)}): {type(err).__name__}."
        ) from err
    field = next((f for f in fields if isinstance(payload, dict) and f in payload), None)
    if field is None or not isinstance(payload[field], dict):
        saved_by = "the Gumbeldore authors' code" if fields == WEIGHT_FIELDS else f"{code}'s code"
        raise ValueError(
            f"nco-import: {path} has no {' or '.join(fields)} state dict; expected a "
            f"checkpoint saved by {saved_by}."
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
    weights, meta = reference_weights(src, spec.fields, spec.code)
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
        if nco_name is None:  # a parameter the policy does not use (training-only)
            continue
        value = weights[ref_name]
        if tuple(value.shape) != tuple(target[nco_name].shape):
            raise ValueError(
                f"nco-import: parameter {ref_name} has shape {tuple(value.shape)}, but {nco_name} "
                f"needs {tuple(target[nco_name].shape)}."
            )
        state[nco_name] = value.to(target[nco_name].dtype)
    for name, value in target.items():  # buffers older files lack (BatchNorm's batch count)
        if name.endswith("num_batches_tracked") and name not in state:
            state[name] = value
    policy.load_state_dict(state)
    problem = problem_config(spec.problem, spec.size_key, num_nodes)
    out = Path(out)
    meta = {**meta, "imported_from": str(src), "reference_model": model}
    checkpoint.save(out, policy, model_cfg, problem, meta)
    return out
