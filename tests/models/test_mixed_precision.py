"""An fp32 policy follows an enclosing autocast (Lightning's bf16-mixed); a bf16 one always casts.

A policy of precision "fp32" used to wrap its body in `torch.autocast(enabled=False)`, which
switched off the trainer's `bf16-mixed` inside the network: training on a GPU ran in float32.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import nn

from nco.env import Env
from nco.models.bq import BQPolicy
from nco.models.bq_cvrp import BQCVRPPolicy
from nco.models.jssp_transformer import JSSPTransformer
from nco.models.lehd import LEHDCVRPPolicy, LEHDTSPPolicy
from nco.problems.cvrp import CVRPEnv
from nco.problems.jssp import JSSPEnv
from nco.problems.tsp import TSPEnv

CASES: dict[str, tuple[Callable[..., nn.Module], Callable[[], Env]]] = {
    "bq_tsp": (
        lambda **kw: BQPolicy(dim=32, layers=2, heads=4, ff_dim=64, **kw),
        lambda: TSPEnv(8),
    ),
    "bq_cvrp": (
        lambda **kw: BQCVRPPolicy(dim=32, layers=2, heads=4, ff_dim=64, **kw),
        lambda: CVRPEnv(8, capacity=20),
    ),
    "lehd_tsp": (
        lambda **kw: LEHDTSPPolicy(dim=32, heads=4, ff_dim=64, decoder_layers=2, **kw),
        lambda: TSPEnv(8),
    ),
    "lehd_cvrp": (
        lambda **kw: LEHDCVRPPolicy(dim=32, heads=4, ff_dim=64, decoder_layers=2, **kw),
        lambda: CVRPEnv(8, capacity=20),
    ),
    "jssp": (
        lambda **kw: JSSPTransformer(dim=16, pairs=2, heads=2, ff_dim=32, **kw),
        lambda: JSSPEnv(4, 3),
    ),
}


def linear_output_dtypes(policy: nn.Module, env: Env, outer: bool) -> set[torch.dtype]:
    """Dtypes of every nn.Linear output in one forward pass, with or without an outer autocast."""
    seen: set[torch.dtype] = set()
    hooks = [
        m.register_forward_hook(lambda _m, _i, out: seen.add(out.dtype))
        for m in policy.modules()
        if isinstance(m, nn.Linear)
    ]
    state = env.reset(env.generate(3, torch.Generator().manual_seed(0)))
    with torch.autocast("cpu", torch.bfloat16, enabled=outer):
        logits = policy(state)
    for h in hooks:
        h.remove()
    assert logits.dtype == torch.float32
    return seen


@pytest.mark.parametrize("name", list(CASES))
def test_fp32_policy_follows_an_enclosing_autocast(name: str) -> None:
    make, env = CASES[name]
    torch.manual_seed(0)
    policy = make(precision="fp32")
    assert linear_output_dtypes(policy, env(), outer=False) == {torch.float32}
    assert linear_output_dtypes(policy, env(), outer=True) == {torch.bfloat16}


@pytest.mark.parametrize("name", list(CASES))
def test_bf16_policy_casts_without_an_enclosing_autocast(name: str) -> None:
    make, env = CASES[name]
    torch.manual_seed(0)
    assert linear_output_dtypes(make(precision="bf16"), env(), outer=False) == {torch.bfloat16}


def test_bf16_warns_once_where_it_is_emulated(monkeypatch) -> None:
    """Without bf16 matrix units, a bf16 policy warns (once) that fp32 is faster there."""
    from nco import hardware

    monkeypatch.setattr(hardware, "bf16_fast", lambda device_type: False)
    monkeypatch.setattr(hardware, "_warned", set())
    make, env = CASES["bq_tsp"]
    policy, state = make(precision="bf16"), env().reset(env().generate(2))
    with pytest.warns(UserWarning, match="emulated"):
        policy(state)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        policy(state)  # once per process
