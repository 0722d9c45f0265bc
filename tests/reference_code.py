"""The Gumbeldore authors' code in ../shared/reference as a test oracle (tests skip without it).

Their modules are imported by path, never copied: `reference_module("tsp.bq_network")`.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

from nco.importing import import_reference

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "gumbeldore"
requires_reference = pytest.mark.skipif(
    not REFERENCE.is_dir(), reason=f"the authors' reference code is absent ({REFERENCE})"
)


def reference_module(name: str) -> ModuleType:
    """Import `name` (e.g. "cvrp.bq_network") from the reference code's root."""
    sys.path.insert(0, str(REFERENCE))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(REFERENCE))


def randomize(net: torch.nn.Module, seed: int, scale: float = 0.15) -> torch.nn.Module:
    """`net` in eval mode with every parameter (ReZero weights included) seeded random."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * scale)
    return net.eval()


def save_reference(net: torch.nn.Module, path: Path) -> Path:
    """`net`'s weights in the authors' checkpoint format (best weights differ from the last)."""
    best = {k: v.clone() for k, v in net.state_dict().items()}
    torch.save(
        {
            "model_weights": {k: torch.zeros_like(v) for k, v in best.items()},
            "best_model_weights": best,
            "optimizer_state": {},
            "epochs_trained": 7,
            "validation_opt_gap": 0.41,
        },
        path,
    )
    return path


def small_reference(
    config: str, network: str, seed: int, *, dim: int, blocks: int, heads: int, ff: int
) -> torch.nn.Module:
    """The authors' `network` class (e.g. "cvrp.bq_network.BQPolicyNetwork") built from their
    `config` class (e.g. "cvrp.config.CVRPConfig") at a test size (latent dimension, transformer
    blocks, attention heads, feed-forward width), with seeded random weights (`randomize`)."""
    config_module, config_class = config.rsplit(".", 1)
    cfg = getattr(reference_module(config_module), config_class)()
    cfg.latent_dimension, cfg.num_transformer_blocks = dim, blocks
    cfg.num_attention_heads, cfg.feedforward_dimension = heads, ff
    network_module, network_class = network.rsplit(".", 1)
    return randomize(getattr(reference_module(network_module), network_class)(cfg), seed)


def import_saved(net: torch.nn.Module, model: str, root: Path, **kwargs: Any) -> Path:
    """`net` saved in the authors' format (root/ref.pt) and imported by `nco-import` as `model`
    into root/best.pt (`kwargs`: num_nodes, heads)."""
    return import_reference(save_reference(net, root / "ref.pt"), model, root / "best.pt", **kwargs)
