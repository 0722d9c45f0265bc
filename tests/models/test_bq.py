"""Tests for the BQ policy (nco/models/bq.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import hydra.utils
import pytest
import torch
from omegaconf import OmegaConf

from nco.models.bq import BQPolicy
from nco.problems.tsp.env import TSPEnv
from nco.problems.tsp.types import TSPState

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "model"


def tiny_policy(seed: int = 0, **kwargs: Any) -> BQPolicy:
    """A tiny policy whose ReZero alphas are nonzero, so the attention layers take part."""
    torch.manual_seed(seed)
    policy = BQPolicy(dim=32, layers=2, heads=4, ff_dim=64, **kwargs)
    with torch.no_grad():
        for name, param in policy.named_parameters():
            if "alpha" in name:
                param.uniform_(0.3, 0.8)
    return policy


def make_state(
    coords: torch.Tensor, origin: int, dest: int, visited: tuple[int, ...] = ()
) -> TSPState:
    """A one-row state on `coords` (n, 2) with the given origin, destination and visited nodes."""
    n = coords.shape[0]
    excluded = {origin, dest, *visited}
    remaining = torch.tensor([[i for i in range(n) if i not in excluded]])
    return TSPState(
        coords=coords.unsqueeze(0),
        origin=torch.tensor([origin]),
        dest=torch.tensor([dest]),
        remaining=remaining,
        length=torch.zeros(1, dtype=torch.float64),
    )


def random_coords(n: int, seed: int) -> torch.Tensor:
    """Uniform (n, 2) float64 coordinates from a fixed seed."""
    return torch.rand(n, 2, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_permutation_equivariance() -> None:
    """Relabelling the nodes relabels the logits the same way."""
    policy = tiny_policy()
    coords = random_coords(12, seed=1)
    state = make_state(coords, origin=3, dest=7, visited=(0, 5))
    perm = torch.randperm(12, generator=torch.Generator().manual_seed(2))
    inv = perm.argsort()  # old node i sits at new index inv[i]
    permuted = make_state(
        coords[perm], int(inv[3]), int(inv[7]), tuple(int(inv[i]) for i in (0, 5))
    )
    logits = policy(state)[0]
    logits_perm = policy(permuted)[0]
    torch.testing.assert_close(logits_perm, logits[perm], atol=1e-5, rtol=0)


def test_masked_entries_are_minus_inf() -> None:
    """Origin, destination and visited nodes get -inf; remaining nodes get finite logits."""
    policy = tiny_policy()
    logits = policy(make_state(random_coords(9, seed=3), origin=2, dest=0, visited=(4, 8)))[0]
    assert logits.dtype == torch.float32
    assert torch.isneginf(logits[[0, 2, 4, 8]]).all()
    assert torch.isfinite(logits[[1, 3, 5, 6, 7]]).all()


def test_root_state_origin_equals_dest() -> None:
    """At the root (origin = dest = 0) every node but 0 has a finite logit."""
    env = TSPEnv(6)
    state = env.reset(env.generate(3, torch.Generator().manual_seed(4)))
    logits = tiny_policy()(state)
    assert torch.isneginf(logits[:, 0]).all()
    assert torch.isfinite(logits[:, 1:]).all()


def test_markers_matter() -> None:
    """Swapping origin and destination changes the logits, and only because of the markers."""
    policy = tiny_policy()
    coords = random_coords(8, seed=5)
    forward, backward = make_state(coords, origin=1, dest=6), make_state(coords, origin=6, dest=1)
    rest = [0, 2, 3, 4, 5, 7]
    gap = (policy(forward)[0, rest] - policy(backward)[0, rest]).abs().max()
    assert gap > 1e-4
    with torch.no_grad():
        policy.markers[1] = policy.markers[0]
    same = (policy(forward)[0, rest] - policy(backward)[0, rest]).abs().max()
    assert same < 1e-6


def test_rows_are_independent() -> None:
    """A row's logits do not depend on the other rows of the batch."""
    policy = tiny_policy()
    env = TSPEnv(10)
    state = env.reset(env.generate(5, torch.Generator().manual_seed(6)))
    state = env.step(state, torch.tensor([3, 1, 9, 4, 2]))
    full = policy(state)
    for i in range(5):
        alone = policy(state.index(torch.tensor([i])))[0]
        torch.testing.assert_close(alone, full[i], atol=1e-5, rtol=0)
    shuffled = policy(state.index(torch.tensor([4, 4, 0, 2])))
    torch.testing.assert_close(shuffled, full[[4, 4, 0, 2]], atol=1e-5, rtol=0)


@pytest.mark.parametrize(
    ("name", "dim", "layers"), [("bq_tsp.yaml", 128, 9), ("bq_tsp_tiny.yaml", 32, 2)]
)
def test_hydra_configs_instantiate(name: str, dim: int, layers: int) -> None:
    """Both model configs build a BQPolicy of the stated size that runs on a TSP state."""
    policy = hydra.utils.instantiate(OmegaConf.load(CONFIGS / name))
    assert isinstance(policy, BQPolicy)
    assert policy.head.in_features == dim
    assert len(policy.encoder.layers) == layers
    env = TSPEnv(5)
    logits = policy(env.reset(env.generate(2, torch.Generator().manual_seed(0))))
    assert torch.isfinite(logits[:, 1:]).all()


def test_bf16_close_to_fp32() -> None:
    """bf16 logits are float32 and within 0.01 of fp32 logits (measured gap 0.002)."""
    env = TSPEnv(20)
    state = env.reset(env.generate(4, torch.Generator().manual_seed(7)))
    state = env.step(state, torch.tensor([5, 6, 7, 8]))
    fp32 = tiny_policy(seed=1)
    bf16 = tiny_policy(seed=1, precision="bf16")
    a, b = fp32(state), bf16(state)
    assert b.dtype == torch.float32
    assert torch.equal(torch.isneginf(a), torch.isneginf(b))
    finite = torch.isfinite(a)
    assert (a[finite] - b[finite]).abs().max() < 0.01


def test_training_reduces_loss() -> None:
    """Adam steps of cross-entropy towards the origin's nearest neighbour lower the loss by a
    third and move the ReZero alphas off zero."""
    env = TSPEnv(10)
    instances = env.generate(16, torch.Generator().manual_seed(8))
    state, coords = env.reset(instances), instances.coords
    dist = (coords - coords[:, :1]).norm(dim=-1)
    dist[:, 0] = float("inf")
    target = dist.argmin(1)
    torch.manual_seed(0)
    policy = BQPolicy(dim=32, layers=2, heads=4, ff_dim=64)
    opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
    losses = []
    for _ in range(20):
        loss = torch.nn.functional.cross_entropy(policy(state), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.67 * losses[0]
    alphas = [p for n, p in policy.named_parameters() if "alpha" in n]
    assert all(abs(a.item()) > 1e-2 for a in alphas)


def test_knn_at_least_remaining_is_identity() -> None:
    """With knn >= the number of remaining nodes the logits equal those without knn."""
    state = make_state(random_coords(10, seed=9), origin=4, dest=0, visited=(2,))  # r = 7
    plain = tiny_policy()(state)
    for k in (7, 20):
        torch.testing.assert_close(tiny_policy(knn=k)(state), plain, atol=0, rtol=0)


def test_knn_keeps_only_nearest() -> None:
    """With small knn only the knn remaining nodes nearest the origin are finite, scored as if
    the others were not there."""
    coords = random_coords(15, seed=10)
    origin, dest = 6, 0
    state = make_state(coords, origin, dest)
    k = 4
    dist = {i: float((coords[i] - coords[origin]).norm()) for i in range(15) if i not in (0, 6)}
    nearest = sorted(sorted(dist, key=dist.get)[:k])
    logits = tiny_policy(knn=k)(state)[0]
    assert torch.isfinite(logits).nonzero().flatten().tolist() == nearest
    others = tuple(i for i in dist if i not in nearest)
    reference = tiny_policy()(make_state(coords, origin, dest, visited=others))[0]
    torch.testing.assert_close(logits, reference, atol=1e-5, rtol=0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"dim": 0},
        {"layers": 0},
        {"heads": 0},
        {"ff_dim": 0},
        {"dim": 30, "heads": 4},
        {"precision": "fp16"},
        {"knn": 0},
    ],
)
def test_bad_arguments_raise(kwargs: dict) -> None:
    """Invalid constructor arguments raise ValueError."""
    with pytest.raises(ValueError, match="BQPolicy"):
        BQPolicy(**kwargs)
