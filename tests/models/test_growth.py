"""nco/models/growth.py and scripts/grow_checkpoint.py: a grown policy computes what the small one
did, its added parts still learn, and a grown checkpoint file round-trips."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from script_loader import load_script

from nco import checkpoint
from nco.models.bq import BQPolicy
from nco.models.bq_cvrp import BQCVRPPolicy
from nco.models.growth import grow_into
from nco.problems.cvrp import CVRPEnv
from nco.problems.tsp import TSPEnv

grow_script = load_script("grow_checkpoint")


def trained_like(policy: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Random weights with nonzero ReZero alphas, so every layer takes part."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, param in policy.named_parameters():
            if "alpha" in name:
                param.uniform_(0.3, 0.8)
    return policy


@pytest.mark.parametrize(
    ("cls", "env"), [(BQPolicy, TSPEnv(12)), (BQCVRPPolicy, CVRPEnv(10, capacity=20))]
)
def test_grown_policy_gives_the_same_logits_and_its_new_parts_get_gradients(cls, env) -> None:
    small = trained_like(cls(dim=16, layers=2, heads=4, ff_dim=32))
    big = cls(dim=16, layers=4, heads=4, ff_dim=48)
    grow_into(small.state_dict(), big)
    state = env.reset(env.generate(6, torch.Generator().manual_seed(1)))
    state = env.step(state, env.action_mask(state).float().argmax(-1))  # one step in
    before, after = small(state), big(state)
    feasible = torch.isfinite(before)
    assert torch.equal(feasible, torch.isfinite(after))
    assert torch.allclose(before[feasible], after[feasible], atol=1e-5)
    after[feasible].square().sum().backward()
    grads = dict(big.named_parameters())
    assert grads["encoder.layers.3.alpha"].grad.abs() > 0  # an added layer starts to learn
    out_cols = grads["encoder.layers.0.ff.2.weight"].grad[:, 32:]
    assert out_cols.abs().sum() > 0  # the added feed-forward units are not dead


def test_growth_refuses_another_width() -> None:
    small = BQPolicy(dim=16, layers=2, heads=4, ff_dim=32)
    with pytest.raises(ValueError, match="only layers and ff_dim may grow"):
        grow_into(small.state_dict(), BQPolicy(dim=32, layers=2, heads=4, ff_dim=32))
    with pytest.raises(ValueError, match="lacks"):
        grow_into(small.state_dict(), BQPolicy(dim=16, layers=1, heads=4, ff_dim=32))


def test_grow_script_writes_a_checkpoint_that_decodes_alike(tmp_path: Path) -> None:
    """The written file loads with the new sizes, names its source and decodes like it."""
    model = {"_target_": "nco.models.bq.BQPolicy", "dim": 16, "layers": 2, "heads": 4, "ff_dim": 32}
    problem = {"name": "tsp", "env": {"_target_": "nco.problems.tsp.TSPEnv", "num_nodes": 10}}
    source = tmp_path / "best.pt"
    checkpoint.save(
        source,
        trained_like(BQPolicy(**{k: v for k, v in model.items() if k != "_target_"})),
        model,
        problem,
    )
    out = tmp_path / "grown" / "best.pt"
    record = grow_script.main([str(source), "--layers", "3", "--ff-dim", "64", "--out", str(out)])
    grown = checkpoint.load(out)
    assert (grown.model["layers"], grown.model["ff_dim"]) == (3, 64)
    assert grown.meta["grown"]["source"] == str(source) and record["after"] == {
        "layers": 3,
        "ff_dim": 64,
    }
    assert record["parameters"][1] > record["parameters"][0]
    again = tmp_path / "again.pt"
    grow_script.main([str(source), "--layers", "3", "--ff-dim", "64", "--out", str(again)])
    same = checkpoint.load(again).policy.state_dict()
    assert all(torch.equal(v, same[k]) for k, v in grown.policy.state_dict().items())
    with pytest.raises(SystemExit, match="smaller than the checkpoint's 2"):
        grow_script.main([str(source), "--layers", "1", "--out", str(tmp_path / "x.pt")])
    with pytest.raises(SystemExit, match="no such checkpoint"):
        grow_script.main([str(tmp_path / "nope.pt"), "--layers", "3", "--out", str(out)])
