"""nco-import for TSP (BQ and LEHD): imported networks give the authors' logits and greedy tours;
bad files, shapes and names get one clear line; the console script runs from any folder.

The authors' code in ../shared/reference is the oracle (tests/reference_code.py): each network
is built with seeded random weights, saved in their checkpoint format and imported.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from nco import checkpoint
from nco.importing import import_reference
from nco.problems.tsp import TSPEnv
from nco.problems.tsp.types import TSPState
from nco.search import greedy
from tests.reference_code import randomize, reference_module, requires_reference, save_reference

pytestmark = requires_reference


def reference_tsp(model: str, seed: int = 0) -> torch.nn.Module:
    """The authors' BQ or LEHD TSP network, small (d 32, 4 heads, ff 64), random weights."""
    config = reference_module("tsp.config").TSPConfig()
    config.latent_dimension, config.num_attention_heads, config.feedforward_dimension = 32, 4, 64
    if model == "bq_tsp":
        config.num_transformer_blocks = 3
        return randomize(reference_module("tsp.bq_network").BQPolicyNetwork(config), seed)
    config.num_transformer_blocks = 2
    return randomize(reference_module("tsp.lehd_network").LEHDPolicyNetwork(config), seed)


@pytest.fixture(scope="module", params=["bq_tsp", "lehd_tsp"])
def imported(request, tmp_path_factory) -> tuple[str, torch.nn.Module, Path]:
    """(model name, the reference network, its imported nco checkpoint)."""
    net = reference_tsp(request.param)
    root = tmp_path_factory.mktemp(request.param)
    src = save_reference(net, root / "ref.pt")
    return request.param, net, import_reference(src, request.param, root / "best.pt", 50, 4)


def reference_logits(
    model: str, net: torch.nn.Module, coords: torch.Tensor, tours: list
) -> torch.Tensor:
    """Their network on [start, remaining..., destination] of each row (`tours`: node lists)."""
    with torch.no_grad():
        if model == "bq_tsp":
            return net({"nodes": torch.stack([coords[i, t] for i, t in enumerate(tours)]).float()})
        encoded = net.encode(coords.float())
        return net.decode(torch.stack([encoded[i, t] for i, t in enumerate(tours)]))


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
    model, net, path = imported
    policy = checkpoint.load(path).policy
    state = states(n, 16, remaining, torch.Generator().manual_seed(n + remaining))
    with torch.no_grad():
        ours = policy(state).gather(1, state.remaining)
    ends = zip(state.origin.tolist(), state.remaining.tolist(), state.dest.tolist(), strict=True)
    tours = [[o, *r, d] for o, r, d in ends]
    theirs = reference_logits(model, net, state.coords, tours)
    assert torch.allclose(ours, theirs, atol=1e-5, rtol=1e-5)


def reference_greedy(model: str, net: torch.nn.Module, coords: torch.Tensor) -> list[int]:
    """Their decode loop for one instance: tour from node 0, remaining nodes in index order
    between origin and destination, argmax, the last node added automatically."""
    tour, remaining = [0], list(range(1, coords.shape[0]))
    while len(remaining) > 1:
        logits = reference_logits(model, net, coords[None], [[tour[-1], *remaining, 0]])
        tour.append(remaining.pop(int(logits.argmax(1))))
    return tour + remaining


def test_greedy_tours_equal_the_reference_decode(imported) -> None:
    """nco's greedy decoder with the imported policy gives the authors' tours on 20 TSP50."""
    model, net, path = imported
    loaded = checkpoint.load(path)
    instances = TSPEnv(50).generate(20, torch.Generator().manual_seed(3))
    ours = greedy(loaded.policy, loaded.env, instances).best().actions
    for i in range(20):
        assert [0, *ours[i].tolist()] == reference_greedy(model, net, instances.coords[i])
    assert loaded.meta["epochs_trained"] == 7
    assert loaded.meta["source_field"] == "best_model_weights"
    assert loaded.env.num_nodes == 50 and loaded.problem["name"] == "tsp"


def test_bad_files_get_one_clear_line(tmp_path: Path) -> None:
    """Wrong shape names both shapes; a non-checkpoint and a code-pickling file are refused."""
    net = reference_tsp("bq_tsp")
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
    known = (
        r"\['am_cvrp', 'am_tsp', 'bq_cvrp', 'bq_tsp', 'jssp', 'lehd_tsp', 'pomo_cvrp', 'pomo_tsp'\]"
    )
    with pytest.raises(ValueError, match=rf"unknown model='gpt'; expected one of {known}"):
        import_reference(tmp_path / "other.pt", "gpt", tmp_path / "o.pt")
    assert not (tmp_path / "o.pt").exists()


def test_a_file_of_another_network_names_what_is_missing(tmp_path: Path) -> None:
    """A BQ file imported as LEHD, or with a parameter removed, says which names do not fit."""
    net = reference_tsp("bq_tsp")
    src = save_reference(net, tmp_path / "bq.pt")
    with pytest.raises(ValueError, match=r"expected the parameters of tsp/lehd_network.py"):
        import_reference(src, "lehd_tsp", tmp_path / "o.pt", heads=4)
    weights = dict(net.state_dict())
    del weights["graph_encoder.1.resweight"]
    weights["extra.weight"] = torch.zeros(1)
    torch.save({"model_weights": weights}, tmp_path / "cut.pt")
    with pytest.raises(
        ValueError, match=r"1 missing parameters \['graph_encoder.1.resweight'\], 1 unexpected"
    ):
        import_reference(tmp_path / "cut.pt", "bq_tsp", tmp_path / "o.pt", heads=4)


def test_console_script_from_another_directory(tmp_path: Path) -> None:
    """`nco-import` runs from any folder, writes a checkpoint nco can load, and a bad file ends
    with one line on stderr and a non-zero status."""
    save_reference(reference_tsp("lehd_tsp"), tmp_path / "ref.pt")
    exe = Path(sys.executable).parent / "nco-import"
    args = ["model=lehd_tsp", "out=mine.pt", "heads=4", "num_nodes=20"]
    subprocess.run(
        [str(exe), "src=ref.pt", *args], cwd=tmp_path, check=True, capture_output=True, timeout=120
    )
    loaded = checkpoint.load(tmp_path / "mine.pt")
    assert loaded.env.num_nodes == 20 and loaded.model["activation"] == "gelu"
    (tmp_path / "bad.pt").write_text("nope")
    bad = subprocess.run(
        [str(exe), "src=bad.pt", *args], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert bad.returncode != 0
    assert bad.stderr.strip().splitlines() == [
        "nco-import: bad.pt is not a weights-only torch checkpoint of the Gumbeldore code "
        "(a dict with best_model_weights / model_weights): UnpicklingError."
    ]
