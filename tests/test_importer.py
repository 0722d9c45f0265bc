"""nco-import: the authors' BQ-TSP network, imported, gives their logits and their greedy tours.

The reference code in ../shared/reference/gumbeldore is the oracle (skipped when absent): its
network is built with seeded random weights, saved in the authors' checkpoint format, imported,
and compared on random states and full greedy decodes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from nco import checkpoint
from nco.importer import import_reference
from nco.search import greedy
from problems.tsp import TSPEnv
from problems.tsp.types import TSPState

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "gumbeldore"
pytestmark = pytest.mark.skipif(not REFERENCE.is_dir(), reason="../shared/reference is absent")


def reference_bq(seed: int = 0) -> torch.nn.Module:
    """The authors' BQ TSP network (small), every parameter random, ReZero weights included."""
    sys.path.insert(0, str(REFERENCE))
    try:
        from tsp.bq_network import BQPolicyNetwork
        from tsp.config import TSPConfig
    finally:
        sys.path.remove(str(REFERENCE))
    config = TSPConfig()
    config.latent_dimension, config.num_transformer_blocks = 32, 3
    config.num_attention_heads, config.feedforward_dimension = 4, 64
    torch.manual_seed(seed)
    net = BQPolicyNetwork(config)
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn_like(p) * 0.15)
    return net.eval()


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> tuple[torch.nn.Module, Path]:
    """The reference network and its import, saved in the authors' format first."""
    net = reference_bq()
    root = tmp_path_factory.mktemp("import")
    src = root / "ref.pt"
    weights = {k: v.clone() for k, v in net.state_dict().items()}
    torch.save(
        {"model_weights": {k: torch.zeros_like(v) for k, v in weights.items()},
         "best_model_weights": weights, "optimizer_state": {}, "epochs_trained": 7,
         "validation_opt_gap": 0.41},
        src,
    )  # fmt: skip
    out = import_reference(src, "bq_tsp", root / "best.pt", num_nodes=50, heads=4)
    return net, out


def states(n: int, batch: int, remaining: int, gen: torch.Generator) -> TSPState:
    """Random states with `remaining` nodes left; remaining = n - 1 is the first step."""
    coords = torch.rand(batch, n, 2, generator=gen, dtype=torch.float64)
    order = torch.stack([torch.randperm(n, generator=gen) for _ in range(batch)])
    first = remaining == n - 1
    origin, dest = order[:, 0], order[:, 0] if first else order[:, 1]
    rest = order[:, 1:] if first else order[:, 2 : 2 + remaining]
    return TSPState(
        coords, origin, dest, rest.sort(1).values, torch.zeros(batch, dtype=torch.float64)
    )


@pytest.mark.parametrize(("n", "remaining"), [(5, 4), (12, 7), (50, 49), (50, 1), (20, 2)])
def test_logits_equal_the_reference_network(imported, n: int, remaining: int) -> None:
    """Same logits (1e-5, fp32) on random states: the first step, the middle, one node left."""
    net, path = imported
    policy = checkpoint.load(path).policy
    state = states(n, 16, remaining, torch.Generator().manual_seed(n + remaining))
    ours = policy(state).gather(1, state.remaining)
    pts = lambda idx: state.coords.gather(1, idx.unsqueeze(-1).expand(-1, -1, 2))  # noqa: E731
    seq = torch.cat(
        [pts(state.origin.view(-1, 1)), pts(state.remaining), pts(state.dest.view(-1, 1))], 1
    )
    with torch.no_grad():
        theirs = net({"nodes": seq.float()})
    assert torch.allclose(ours, theirs, atol=1e-5, rtol=1e-5)


def reference_greedy(net: torch.nn.Module, coords: torch.Tensor) -> list[int]:
    """The authors' decode loop for one instance: tour from node 0, remaining nodes in index
    order between origin and destination, argmax, the last node added automatically."""
    tour, remaining = [0], list(range(1, coords.shape[0]))
    while len(remaining) > 1:
        seq = coords[[tour[-1], *remaining, 0]].float().unsqueeze(0)
        with torch.no_grad():
            pick = int(net({"nodes": seq}).argmax(1))
        tour.append(remaining.pop(pick))
    return tour + remaining


def test_greedy_tours_equal_the_reference_decode(imported) -> None:
    """nco's greedy decoder with the imported policy gives the authors' tours on 20 TSP50."""
    net, path = imported
    loaded = checkpoint.load(path)
    instances = TSPEnv(50).generate(20, torch.Generator().manual_seed(3))
    ours = greedy(loaded.policy, loaded.env, instances).best().actions
    for i in range(20):
        assert [0, *ours[i].tolist()] == reference_greedy(net, instances.coords[i])
    assert (
        loaded.meta["epochs_trained"] == 7 and loaded.meta["source_field"] == "best_model_weights"
    )


def test_bad_files_get_one_clear_line(tmp_path: Path) -> None:
    """Wrong shape names both shapes; a non-checkpoint and a code-pickling file are refused."""
    net = reference_bq()
    weights = dict(net.state_dict())
    weights["policy_linear_out.weight"] = torch.zeros(2, 32)
    torch.save({"model_weights": weights}, tmp_path / "shape.pt")
    with pytest.raises(
        ValueError, match=r"policy_linear_out.weight has shape \(2, 32\).*\(1, 32\)"
    ):
        import_reference(tmp_path / "shape.pt", "bq_tsp", tmp_path / "o.pt", heads=4)
    (tmp_path / "text.pt").write_text("not a checkpoint")
    with pytest.raises(ValueError, match="not a weights-only torch checkpoint"):
        import_reference(tmp_path / "text.pt", "bq_tsp", tmp_path / "o.pt")
    torch.save({"model_weights": net}, tmp_path / "module.pt")  # needs unpickling code
    with pytest.raises(ValueError, match="not a weights-only torch checkpoint"):
        import_reference(tmp_path / "module.pt", "bq_tsp", tmp_path / "o.pt")
    torch.save({"weights": {}}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="has no best_model_weights or model_weights"):
        import_reference(tmp_path / "other.pt", "bq_tsp", tmp_path / "o.pt")
    with pytest.raises(ValueError, match="unknown model"):
        import_reference(tmp_path / "other.pt", "gpt", tmp_path / "o.pt")
    assert not (tmp_path / "o.pt").exists()


def test_console_script_from_another_directory(imported, tmp_path: Path) -> None:
    """`nco-import` runs from any folder and writes a checkpoint nco-eval can use."""
    net, _ = imported
    torch.save({"best_model_weights": net.state_dict()}, tmp_path / "ref.pt")
    exe = Path(sys.executable).parent / "nco-import"
    subprocess.run(
        [str(exe), "src=ref.pt", "model=bq_tsp", "out=mine.pt", "heads=4", "num_nodes=20"],
        cwd=tmp_path, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    loaded = checkpoint.load(tmp_path / "mine.pt")
    assert loaded.env.num_nodes == 20 and loaded.model["rezero"] == "shared"
