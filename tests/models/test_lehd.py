"""Tests for the LEHD policies (nco/models/lehd.py) on TSP and CVRP states."""

from __future__ import annotations

from pathlib import Path

import hydra.utils
import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from nco import search
from nco.models.lehd import LEHDCVRPPolicy, LEHDTSPPolicy
from nco.problems.cvrp import CVRPEnv, CVRPInstances, CVRPState
from nco.problems.tsp import TSPEnv, TSPState
from nco.testing import check_env_protocol

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "model"
TINY = {"dim": 32, "heads": 4, "ff_dim": 64, "decoder_layers": 2}


def tsp_policy(seed: int = 0, **kwargs: object) -> LEHDTSPPolicy:
    """A tiny LEHD TSP policy with fixed weights."""
    torch.manual_seed(seed)
    return LEHDTSPPolicy(**{**TINY, **kwargs})


def cvrp_policy(seed: int = 0, **kwargs: object) -> LEHDCVRPPolicy:
    """A tiny LEHD CVRP policy with fixed weights."""
    torch.manual_seed(seed)
    return LEHDCVRPPolicy(**{**TINY, **kwargs})


def tsp_state(coords: torch.Tensor, origin: int, dest: int, visited: tuple[int, ...]) -> TSPState:
    """A one-row TSP state on `coords` (n, 2)."""
    excluded = {origin, dest, *visited}
    remaining = [i for i in range(coords.shape[0]) if i not in excluded]
    return TSPState(
        coords=coords.unsqueeze(0),
        origin=torch.tensor([origin]),
        dest=torch.tensor([dest]),
        remaining=torch.tensor([remaining]),
        length=torch.zeros(1, dtype=torch.float64),
    )


def cvrp_midway(inst: CVRPInstances, actions: list[int]) -> CVRPState:
    """The state after stepping one CVRP instance through `actions`."""
    env = CVRPEnv(inst.num_customers, capacity=20)
    state = env.reset(inst)
    for a in actions:
        state = env.step(state, torch.tensor([a]))
    return state


def test_tsp_permutation_equivariance() -> None:
    """Relabelling TSP nodes (visited ones included) relabels the logits the same way."""
    coords = torch.rand(11, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    perm = torch.randperm(11, generator=torch.Generator().manual_seed(2))
    inv = perm.argsort()
    policy = tsp_policy()
    logits = policy(tsp_state(coords, 3, 7, (0, 5)))[0]
    moved = tsp_state(coords[perm], int(inv[3]), int(inv[7]), (int(inv[0]), int(inv[5])))
    torch.testing.assert_close(policy(moved)[0], logits[perm], atol=1e-5, rtol=0)


def test_tsp_mask_and_visited_nodes_matter() -> None:
    """Origin, destination and visited nodes get -inf; visited nodes still shape the encoding."""
    coords = torch.rand(9, 2, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    policy = tsp_policy()
    logits = policy(tsp_state(coords, 2, 0, (4, 8)))[0]
    assert logits.dtype == torch.float32
    assert torch.isneginf(logits[[0, 2, 4, 8]]).all()
    assert torch.isfinite(logits[[1, 3, 5, 6, 7]]).all()
    shifted = coords.clone()
    shifted[4] = torch.tensor([0.9, 0.1], dtype=torch.float64)  # move a visited node
    other = policy(tsp_state(shifted, 2, 0, (4, 8)))[0]
    assert not torch.allclose(other[[1, 3, 5, 6, 7]], logits[[1, 3, 5, 6, 7]])


def test_tsp_knn() -> None:
    """knn=k scores exactly the k remaining nodes nearest the origin."""
    coords = torch.rand(12, 2, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    state = tsp_state(coords, 5, 0, (1,))
    remaining = state.remaining[0].numpy()
    dist = np.linalg.norm(coords.numpy()[remaining] - coords.numpy()[5], axis=1)
    nearest = sorted(remaining[np.argsort(dist)[:3]].tolist())
    logits = tsp_policy(knn=3)(state)[0]
    assert torch.isfinite(logits).nonzero().squeeze(1).tolist() == nearest
    torch.testing.assert_close(tsp_policy(knn=20)(state), tsp_policy()(state))


def test_cvrp_permutation_equivariance() -> None:
    """Relabelling CVRP customers relabels both logits of each customer the same way."""
    inst = CVRPEnv(10, capacity=12).generate(1, torch.Generator().manual_seed(0))
    perm = torch.randperm(10, generator=torch.Generator().manual_seed(1))
    inv = perm.argsort()
    moved = CVRPInstances(inst.depot, inst.locs[:, perm], inst.demands[:, perm], inst.capacity)
    old_actions = [7, 14, 1]
    new_actions = [2 * int(inv[a // 2]) + a % 2 for a in old_actions]
    policy = cvrp_policy()
    logits = policy(cvrp_midway(inst, old_actions))[0].view(10, 2)
    logits_perm = policy(cvrp_midway(moved, new_actions))[0].view(10, 2)
    torch.testing.assert_close(logits_perm, logits[perm], atol=1e-5, rtol=0)


@pytest.mark.parametrize("prefix", [[], [1], [1, 2], [1, 2, 15, 18]])
def test_cvrp_finite_exactly_on_feasible_actions(prefix: list[int]) -> None:
    """CVRP logits are finite exactly where the env allows the action."""
    inst = CVRPEnv(10, capacity=12).generate(1, torch.Generator().manual_seed(0))
    state = cvrp_midway(inst, prefix)
    logits = cvrp_policy()(state)
    assert torch.equal(torch.isfinite(logits), CVRPEnv(10, capacity=12).action_mask(state))


def test_cvrp_knn_and_bf16() -> None:
    """CVRP knn keeps the nearest customers' actions; bf16 gives float32 logits near fp32."""
    inst = CVRPEnv(12, capacity=12).generate(1, torch.Generator().manual_seed(3))
    state = cvrp_midway(inst, [1, 4])
    pts = state.coords[0].numpy()
    remaining = state.remaining[0].numpy()
    nearest = remaining[np.argsort(np.linalg.norm(pts[remaining] - pts[3], axis=1))[:4]]
    finite = torch.isfinite(cvrp_policy(knn=4)(state)[0].view(12, 2)).any(1)
    assert sorted((finite.nonzero().squeeze(1) + 1).tolist()) == sorted(nearest.tolist())
    fp32, bf16 = cvrp_policy()(state), cvrp_policy(precision="bf16")(state)
    assert bf16.dtype == torch.float32
    ok = torch.isfinite(fp32)
    assert torch.equal(torch.isfinite(bf16), ok)
    torch.testing.assert_close(bf16[ok], fp32[ok], atol=0.15, rtol=0.05)


@pytest.mark.parametrize("problem", ["tsp", "cvrp"])
def test_training_steps_reduce_loss(problem: str) -> None:
    """A few Adam steps on a fixed supervised batch lower its cross-entropy."""
    g = torch.Generator().manual_seed(0)
    env = TSPEnv(10) if problem == "tsp" else CVRPEnv(10, capacity=15)
    inst = env.generate(32, g)
    _, actions = check_env_protocol(env, inst, g)
    state, target = env.training_batch(inst, actions, g)
    policy = tsp_policy() if problem == "tsp" else cvrp_policy()
    opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        loss = torch.nn.functional.cross_entropy(policy(state), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0]


def test_greedy_decoding_runs_on_both_problems() -> None:
    """nco.search.greedy completes TSP and CVRP episodes with the LEHD policies."""
    tsp = TSPEnv(8)
    best = search.greedy(tsp_policy(), tsp, tsp.generate(2, torch.Generator().manual_seed(1)))
    assert torch.equal(best.best().actions.sort(1).values, torch.arange(1, 8).expand(2, 7))
    cvrp = CVRPEnv(8, capacity=12)
    best = search.greedy(cvrp_policy(), cvrp, cvrp.generate(2, torch.Generator().manual_seed(1)))
    customers = (best.best().actions // 2 + 1).sort(1).values
    assert torch.equal(customers, torch.arange(1, 9).expand(2, 8))


@pytest.mark.parametrize(
    ("name", "cls", "dim", "decoder_layers"),
    [
        ("lehd_tsp", LEHDTSPPolicy, 128, 6),
        ("lehd_tsp_tiny", LEHDTSPPolicy, 32, 2),
        ("lehd_cvrp", LEHDCVRPPolicy, 128, 6),
        ("lehd_cvrp_tiny", LEHDCVRPPolicy, 32, 2),
    ],
)
def test_configs_instantiate(name: str, cls: type, dim: int, decoder_layers: int) -> None:
    """The Hydra configs build LEHD with one encoder layer and the stated decoder depth."""
    policy = hydra.utils.instantiate(OmegaConf.load(CONFIGS / f"{name}.yaml"))
    assert isinstance(policy, cls) and policy.embed.out_features == dim
    assert len(policy.encoder) == 1 and len(policy.decoder) == decoder_layers


@pytest.mark.parametrize(
    "kwargs", [{"dim": 0}, {"dim": 30}, {"precision": "half"}, {"knn": 0}, {"decoder_layers": 0}]
)
def test_bad_arguments(kwargs: dict) -> None:
    """Invalid sizes, precisions and knn raise ValueError for both policies."""
    for cls in (LEHDTSPPolicy, LEHDCVRPPolicy):
        with pytest.raises(ValueError):
            cls(**{**TINY, **kwargs})


def test_format_2_files_keep_relu(tmp_path) -> None:
    """A format-2 LEHD file (no `activation` key: ReLU then) loads with ReLU and its logits."""
    from nco import checkpoint
    from nco.problems.tsp import TSPEnv

    torch.manual_seed(0)
    policy = LEHDTSPPolicy(dim=16, heads=2, ff_dim=32, decoder_layers=1, activation="relu").eval()
    model = {"_target_": "nco.models.lehd.LEHDTSPPolicy", "dim": 16, "heads": 2, "ff_dim": 32,
             "decoder_layers": 1}  # fmt: skip
    problem = {"name": "tsp", "env": {"_target_": "nco.problems.tsp.TSPEnv", "num_nodes": 10}}
    checkpoint.save(tmp_path / "old.pt", policy, model, problem)
    payload = torch.load(tmp_path / "old.pt", weights_only=True)
    torch.save({**payload, "format": "nco-checkpoint-2"}, tmp_path / "old.pt")
    loaded = checkpoint.load(tmp_path / "old.pt")
    assert loaded.model["activation"] == "relu"
    state = TSPEnv(10).reset(TSPEnv(10).generate(3, torch.Generator().manual_seed(1)))
    with torch.no_grad():
        assert torch.equal(loaded.policy(state), policy(state))
