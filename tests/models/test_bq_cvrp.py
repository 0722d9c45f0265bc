"""Tests for the BQ CVRP policy (nco/models/bq_cvrp.py)."""

from __future__ import annotations

from pathlib import Path

import hydra.utils
import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from nco import search
from nco.models.bq_cvrp import BQCVRPPolicy
from nco.problems.cvrp import CVRPEnv, CVRPInstances, CVRPState
from nco.testing import check_env_protocol

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "model"


def tiny_policy(seed: int = 0, **kwargs: object) -> BQCVRPPolicy:
    """A tiny policy whose ReZero alphas are nonzero, so the attention layers take part."""
    torch.manual_seed(seed)
    policy = BQCVRPPolicy(dim=32, layers=2, heads=4, ff_dim=64, **kwargs)
    with torch.no_grad():
        for name, param in policy.named_parameters():
            if "alpha" in name:
                param.uniform_(0.3, 0.8)
    return policy


def midway(inst: CVRPInstances, actions: list[int]) -> CVRPState:
    """The state after stepping one instance through `actions` (CVRPEnv semantics)."""
    env = CVRPEnv(inst.num_customers, capacity=20)
    state = env.reset(inst)
    for a in actions:
        state = env.step(state, torch.tensor([a]))
    return state


def instance(n: int = 10, seed: int = 0) -> CVRPInstances:
    """One random instance with capacity 12, so capacity binds early."""
    return CVRPEnv(n, capacity=12).generate(1, torch.Generator().manual_seed(seed))


def permuted(inst: CVRPInstances, perm: torch.Tensor) -> CVRPInstances:
    """The instance with customers reordered: new customer j is old customer perm[j]."""
    return CVRPInstances(inst.depot, inst.locs[:, perm], inst.demands[:, perm], inst.capacity)


def test_permutation_equivariance() -> None:
    """Relabelling customers relabels both logits of each customer the same way."""
    policy = tiny_policy()
    inst = instance()
    perm = torch.randperm(10, generator=torch.Generator().manual_seed(1))
    inv = perm.argsort()  # old customer c (0-based) is new customer inv[c]
    old_actions = [2 * 3 + 1, 2 * 7, 2 * 0 + 1]
    new_actions = [2 * int(inv[a // 2]) + a % 2 for a in old_actions]
    logits = policy(midway(inst, old_actions))[0].view(10, 2)
    logits_perm = policy(midway(permuted(inst, perm), new_actions))[0].view(10, 2)
    torch.testing.assert_close(logits_perm, logits[perm], atol=1e-5, rtol=0)


@pytest.mark.parametrize("prefix", [[], [1], [1, 2], [1, 2, 15, 18]])
def test_finite_exactly_on_feasible_actions(prefix: list[int]) -> None:
    """Logits are finite exactly where the env allows the action (visited, depot, capacity)."""
    state = midway(instance(), prefix)
    logits = tiny_policy()(state)
    assert logits.dtype == torch.float32
    assert torch.equal(torch.isfinite(logits), CVRPEnv(10, capacity=12).action_mask(state))


def test_knn_keeps_the_nearest_customers() -> None:
    """knn=k scores only the k remaining customers nearest the origin; knn >= r changes nothing."""
    inst = instance(12, seed=3)
    state = midway(inst, [1, 4])  # origin is customer 3
    full = tiny_policy()(state)
    mask = CVRPEnv(12, capacity=12).action_mask(state)[0].view(12, 2)
    pts = state.coords[0].numpy()
    remaining = state.remaining[0].numpy()
    dist = np.linalg.norm(pts[remaining] - pts[3], axis=1)
    nearest = set(remaining[np.argsort(dist)[:4]].tolist())
    knn = tiny_policy(knn=4)(state)[0].view(12, 2)
    expected = torch.tensor([[c + 1 in nearest] * 2 for c in range(12)]) & mask
    assert torch.equal(torch.isfinite(knn), expected)
    torch.testing.assert_close(tiny_policy(knn=10)(state), full)


def test_rows_do_not_interact() -> None:
    """A row's logits do not depend on the other rows in the batch."""
    env = CVRPEnv(8, capacity=12)
    g = torch.Generator().manual_seed(5)
    inst = env.generate(6, g)
    state = env.reset(inst)
    for _ in range(3):
        state = env.step(
            state, torch.multinomial(env.action_mask(state).double(), 1, generator=g)[:, 0]
        )
    policy = tiny_policy()
    batch = policy(state)
    for i in (0, 4):
        torch.testing.assert_close(policy(state.index(torch.tensor([i])))[0], batch[i])


def test_bf16_matches_fp32_roughly() -> None:
    """bf16 autocast returns float32 logits close to the fp32 ones, with the same -inf pattern."""
    state = midway(instance(), [3, 8])
    fp32 = tiny_policy()(state)
    bf16 = tiny_policy(precision="bf16")(state)
    assert bf16.dtype == torch.float32
    assert torch.equal(torch.isfinite(bf16), torch.isfinite(fp32))
    finite = torch.isfinite(fp32)
    torch.testing.assert_close(bf16[finite], fp32[finite], atol=0.1, rtol=0.05)


def test_training_steps_reduce_loss() -> None:
    """A few Adam steps on a fixed supervised batch lower its cross-entropy."""
    env = CVRPEnv(10, capacity=15)
    g = torch.Generator().manual_seed(0)
    inst = env.generate(32, g)
    _, actions = check_env_protocol(env, inst, g)
    state, target = env.training_batch(inst, actions, g)
    policy = tiny_policy()
    opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
    losses = []
    for _ in range(25):
        loss = torch.nn.functional.cross_entropy(policy(state), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.75 * losses[0]


def test_greedy_decoding_gives_feasible_solutions() -> None:
    """nco.search.greedy with the policy returns complete solutions costing what numpy says."""
    env = CVRPEnv(8, capacity=12)
    inst = env.generate(3, torch.Generator().manual_seed(2))
    best = search.greedy(tiny_policy(), env, inst).best()
    for i in range(3):
        routes: list[list[int]] = []
        for a in best.actions[i].tolist():
            if a % 2:
                routes.append([])
            routes[-1].append(a // 2 + 1)
        assert sorted(c for r in routes for c in r) == list(range(1, 9))
        pts = np.vstack([inst.depot[i].numpy(), inst.locs[i].numpy()])
        cost = sum(np.linalg.norm(np.diff(pts[[0, *r, 0]], axis=0), axis=1).sum() for r in routes)
        assert -float(best.objective[i]) == pytest.approx(cost, abs=1e-9)


@pytest.mark.parametrize(
    ("name", "dim", "layers", "heads"), [("bq_cvrp", 192, 9, 12), ("bq_cvrp_tiny", 32, 2, 4)]
)
def test_configs_instantiate(name: str, dim: int, layers: int, heads: int) -> None:
    """The Hydra model configs build the policy at the stated sizes (paper: 192, 9, 12)."""
    policy = hydra.utils.instantiate(OmegaConf.load(CONFIGS / f"{name}.yaml"))
    assert isinstance(policy, BQCVRPPolicy)
    assert policy.embed.out_features == dim and len(policy.encoder.layers) == layers
    assert policy.encoder.layers[0].attn.heads == heads


@pytest.mark.parametrize(
    "kwargs",
    [{"dim": 0}, {"dim": 30, "heads": 4}, {"precision": "fp16"}, {"knn": 0}, {"layers": 0}],
)
def test_bad_arguments(kwargs: dict) -> None:
    """Invalid sizes, precisions and knn raise ValueError."""
    base = {"dim": 32, "layers": 2, "heads": 4, "ff_dim": 64}
    with pytest.raises(ValueError):
        BQCVRPPolicy(**{**base, **kwargs})


def test_shipped_checkpoint_keeps_its_form_and_routes() -> None:
    """data/checkpoints/cvrp20_quick (format 1) loads as form nco1 and gives the greedy lengths
    measured before the authors' tokens became the default."""
    from nco import checkpoint
    from nco.search import greedy

    root = Path(__file__).resolve().parents[2] / "data" / "checkpoints" / "cvrp20_quick"
    loaded = checkpoint.load(root / "best.pt")
    assert loaded.model["form"] == "nco1"
    instances = loaded.env.generate(8, torch.Generator().manual_seed(5))
    lengths = -greedy(loaded.policy, loaded.env, instances).best().objective
    expected = [5.889945, 6.331769, 8.460695, 6.771849, 6.616146, 6.344466, 7.321996, 6.330154]
    assert lengths.tolist() == pytest.approx(expected, abs=1e-6)
