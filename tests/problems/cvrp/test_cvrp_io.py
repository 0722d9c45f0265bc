"""Tests for CVRP dataset files (nco/problems/cvrp/io.py): round trips, references, rejections."""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from nco.problems.cvrp import CVRPEnv, CVRPInstances
from nco.problems.cvrp.io import load_cvrp, load_cvrp_expert, load_cvrp_solutions, save_cvrp_npz
from nco.testing import check_env_protocol

SHARED = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "reference"

TINY_VRP = """NAME : tiny
TYPE : CVRP
DIMENSION : 4
EDGE_WEIGHT_TYPE : EUC_2D
CAPACITY : {capacity}
NODE_COORD_SECTION
1 10 10
2 13 14
3 16 10
4 10 18
DEMAND_SECTION
1 0
2 4
3 5
4 3
DEPOT_SECTION
1
-1
EOF
"""

# depot (0, 0); customers (0.3, 0.4), (0.6, 0), (0, 0.8); routes [1, 2] and [3]
LEHD_LINE = (
    "depot,0.0,0.0,customer,0.3,0.4,0.6,0.0,0.0,0.8,capacity,10.0,demand,4,5,3,"
    "cost,2.6,node_flag,1,2,3,1,0,1"
)


def same_instances(a: CVRPInstances, b: CVRPInstances) -> bool:
    """Field-wise equality including dtypes."""
    return all(
        getattr(a, f).dtype == getattr(b, f).dtype and torch.equal(getattr(a, f), getattr(b, f))
        for f in ("depot", "locs", "demands", "capacity")
    )


def test_npz_round_trip(tmp_path: Path) -> None:
    """save_cvrp_npz then load_cvrp gives the same instances, references and integer demands."""
    inst = CVRPEnv(7, capacity=20).generate(3, torch.Generator().manual_seed(0))
    refs = np.array([1.5, 2.5, 3.5])
    save_cvrp_npz(tmp_path / "d.npz", inst, refs, "hand")
    loaded, got = load_cvrp(tmp_path / "d.npz")
    assert same_instances(inst, loaded) and loaded.demands.dtype == torch.long
    assert np.array_equal(got, refs)
    with np.load(tmp_path / "d.npz") as data:
        assert str(data["reference_source"]) == "hand"
        assert data["demands"].dtype == np.int64


def test_npz_expert_round_trip(tmp_path: Path) -> None:
    """Solutions saved with the instances come back as the same env actions."""
    env = CVRPEnv(9, capacity=15)
    g = torch.Generator().manual_seed(4)
    inst = env.generate(5, g)
    _, actions = check_env_protocol(env, inst, g)
    save_cvrp_npz(tmp_path / "e.npz", inst, solutions=actions)
    loaded, got = load_cvrp_expert(tmp_path / "e.npz")
    assert same_instances(inst, loaded) and torch.equal(got, actions)
    with pytest.raises(ValueError, match="solutions"):
        save_cvrp_npz(tmp_path / "f.npz", inst, solutions=actions[:, :4])
    with pytest.raises(ValueError, match="solutions"):
        save_cvrp_npz(tmp_path / "f.npz", inst, solutions=actions.flip(1) % 4)


def test_save_rejects_bad_arguments(tmp_path: Path) -> None:
    """Writers refuse a wrong suffix, a source without references and misshapen references."""
    inst = CVRPEnv(5, capacity=20).generate(2, torch.Generator().manual_seed(0))
    with pytest.raises(ValueError):
        save_cvrp_npz(tmp_path / "d.pkl", inst)
    with pytest.raises(ValueError):
        save_cvrp_npz(tmp_path / "d.npz", inst, reference_source="x")
    with pytest.raises(ValueError):
        save_cvrp_npz(tmp_path / "d.npz", inst, np.ones(3))


@pytest.mark.parametrize("as_numpy", [False, True])
def test_kool_pickle(tmp_path: Path, as_numpy: bool) -> None:
    """Kool et al. pickles of lists (or numpy arrays) load with integer demands."""
    inst = CVRPEnv(6, capacity=20).generate(2, torch.Generator().manual_seed(1))
    rows = []
    for i in range(2):
        row = (inst.depot[i], inst.locs[i], inst.demands[i], inst.capacity[i])
        rows.append(tuple(x.numpy() for x in row) if as_numpy else tuple(x.tolist() for x in row))
    with (tmp_path / "d.pkl").open("wb") as f:
        pickle.dump(rows, f)
    loaded, refs = load_cvrp(tmp_path / "d.pkl")
    assert same_instances(inst, loaded) and refs is None


class _Evil:
    """Pickles to a call of os.system."""

    def __reduce__(self) -> tuple:
        return (os.system, ("echo pwned",))


def test_pickle_refuses_foreign_globals(tmp_path: Path) -> None:
    """A pickle that would call os.system is refused, naming the global."""
    with (tmp_path / "evil.pkl").open("wb") as f:
        pickle.dump([_Evil()], f)
    with pytest.raises(pickle.UnpicklingError, match="system"):
        load_cvrp(tmp_path / "evil.pkl")


@pytest.mark.parametrize("leading_zero", [False, True])
def test_lehd_text(tmp_path: Path, leading_zero: bool) -> None:
    """A hand-written LEHD line: instance, cost reference and tour (with or without depot 0)."""
    line = LEHD_LINE.replace("demand,", "demand,0,") if leading_zero else LEHD_LINE
    (tmp_path / "d.txt").write_text(line + "\n" + line + "\n")
    inst, refs = load_cvrp(tmp_path / "d.txt")
    assert inst.demands.tolist() == [[4, 5, 3]] * 2 and inst.capacity.tolist() == [10, 10]
    assert inst.locs[0].tolist() == [[0.3, 0.4], [0.6, 0.0], [0.0, 0.8]]
    assert refs.tolist() == [2.6, 2.6]
    actions = load_cvrp_solutions(tmp_path / "d.txt")
    assert actions.tolist() == [[1, 2, 5]] * 2
    env = CVRPEnv(3, capacity=10)
    state = env.reset(inst)
    for t in range(3):
        state = env.step(state, actions[:, t])
    expected = 0.5 + np.hypot(0.3, 0.4) + 0.6 + 0.8 + 0.8  # route [1, 2], then route [3]
    torch.testing.assert_close(state.length, torch.full((2,), expected, dtype=torch.float64))


def test_cvrplib(tmp_path: Path) -> None:
    """A CVRPLIB file loads with the depot split off and raw coordinates kept."""
    (tmp_path / "t.vrp").write_text(TINY_VRP.format(capacity=10))
    inst, refs = load_cvrp(tmp_path / "t.vrp")
    assert inst.depot.tolist() == [[10.0, 10.0]]
    assert inst.locs.tolist() == [[[13.0, 14.0], [16.0, 10.0], [10.0, 18.0]]]
    assert inst.demands.tolist() == [[4, 5, 3]] and inst.capacity.tolist() == [10]
    assert refs is None
    with pytest.raises(ValueError, match="solutions"):
        load_cvrp_solutions(tmp_path / "t.vrp")


def npz(**overrides: np.ndarray | None) -> Callable[[Path], Path]:
    """Writer of a valid project-layout npz with some fields replaced (None drops a field)."""

    def write(tmp: Path) -> Path:
        arrays = {
            "depot": np.zeros((2, 2)),
            "locs": np.full((2, 3, 2), 0.5),
            "demands": np.array([[1, 2, 3], [4, 5, 6]]),
            "capacity": np.array([10, 10]),
        }
        arrays.update(overrides)
        np.savez(tmp / "bad.npz", **{k: v for k, v in arrays.items() if v is not None})
        return tmp / "bad.npz"

    return write


def text(name: str, content: str) -> Callable[[Path], Path]:
    """Writer of a text file `name` holding `content`."""

    def write(tmp: Path) -> Path:
        (tmp / name).write_text(content)
        return tmp / name

    return write


def kool(rows: list) -> Callable[[Path], Path]:
    """Writer of a pickle of `rows`."""

    def write(tmp: Path) -> Path:
        with (tmp / "bad.pkl").open("wb") as f:
            pickle.dump(rows, f)
        return tmp / "bad.pkl"

    return write


NAN_LOCS = np.full((2, 3, 2), 0.5)
NAN_LOCS[1, 2, 0] = np.nan

BAD_FILES = {
    "npz-nan": (npz(locs=NAN_LOCS), "locs"),
    "npz-over-capacity": (npz(capacity=np.array([10, 5])), "demands"),
    "npz-fractional-demand": (npz(demands=np.array([[1, 2.5, 3], [4, 5, 6]])), "demands"),
    "npz-negative-demand": (npz(demands=np.array([[1, -2, 3], [4, 5, 6]])), "demands"),
    "npz-no-customers": (npz(locs=np.zeros((2, 0, 2)), demands=np.zeros((2, 0))), "locs"),
    "npz-depot-shape": (npz(depot=np.zeros((2, 3))), "depot"),
    "npz-demand-shape": (npz(demands=np.ones((2, 4))), "demands"),
    "npz-missing-capacity": (npz(capacity=None), "capacity"),
    "npz-zero-capacity": (npz(capacity=np.array([0, 10])), "capacity"),
    "npz-fractional-capacity": (npz(capacity=np.array([10.5, 10])), "capacity"),
    "npz-text-field": (npz(capacity=np.array(["a", "b"])), "capacity"),
    "npz-refs-shape": (npz(reference_costs=np.ones(3)), "reference_costs"),
    "npz-shared-depot-demand": (
        npz(nodes=np.zeros((2, 4, 2)), demands=np.ones((2, 4)), depot=None, locs=None),
        "demands",
    ),
    "pkl-over-capacity": (kool([([0, 0], [[0.1, 0.2]], [12], 10)]), "demands"),
    "pkl-ragged": (kool([([0, 0], [[0.1, 0.2]], [1], 10), ([0, 0], [], [], 10)]), "loc"),
    "pkl-not-tuples": (kool([[0.1, 0.2]]), "depot"),
    "pkl-empty": (kool([]), "depot"),
    "txt-missing-capacity": (text("bad.txt", "depot,0,0,customer,0.1,0.2,demand,1"), "capacity"),
    "txt-not-a-number": (text("bad.txt", LEHD_LINE.replace("0.6", "x")), "customer"),
    "txt-odd-coords": (text("bad.txt", LEHD_LINE.replace("0.0,0.8,", "0.0,")), "customer"),
    "txt-demand-count": (text("bad.txt", LEHD_LINE.replace("4,5,3", "4,5")), "demand"),
    "txt-fractional-demand": (text("bad.txt", LEHD_LINE.replace("4,5,3", "4,5.5,3")), "demands"),
    "txt-mixed-sizes": (
        text("bad.txt", LEHD_LINE + "\n" + LEHD_LINE.replace("0.0,0.8,", "0.0,0.8,0.1,0.1,")),
        "customer",
    ),
    "txt-empty": (text("bad.txt", "\n"), "instance"),
    "vrp-garbage": (text("bad.vrp", "this is not a CVRPLIB file\n"), "CVRPLIB"),
    "vrp-over-capacity": (text("bad.vrp", TINY_VRP.format(capacity=4)), "demands"),
    "unknown-extension": (text("bad.csv", "1,2,3"), "extension"),
}


@pytest.mark.parametrize("case", list(BAD_FILES), ids=list(BAD_FILES))
def test_rejects_bad_files(tmp_path: Path, case: str) -> None:
    """Each malformed file raises ValueError naming the file and the offending field."""
    write, field = BAD_FILES[case]
    path = write(tmp_path)
    with pytest.raises(ValueError, match=field) as info:
        load_cvrp(path)
    assert path.name in str(info.value)


def test_solutions_must_be_permutations(tmp_path: Path) -> None:
    """A stored tour that repeats a customer is refused."""
    (tmp_path / "d.txt").write_text(LEHD_LINE.replace("node_flag,1,2,3", "node_flag,1,2,2"))
    with pytest.raises(ValueError, match="permutation"):
        load_cvrp_solutions(tmp_path / "d.txt")


@pytest.mark.parametrize("name", ["cvrp200_128.npz", "cvrp500_128.npz"])
def test_shared_reference_tours_reproduce_lengths(name: str) -> None:
    """The shared LKH-3 tours, replayed as env actions, give the stored tour_lengths (1e-6)."""
    path = SHARED / name
    if not path.exists():
        pytest.skip("shared reference data not available")
    inst, refs = load_cvrp(path)
    actions = load_cvrp_solutions(path)
    assert len(inst) == 128 and int(inst.capacity[0]) in (80, 100)
    assert int(inst.demands.min()) >= 1 and int(inst.demands.max()) <= 9
    idx = torch.arange(4)
    sub, acts = inst.index(idx), actions[idx]
    env = CVRPEnv(sub.num_customers, capacity=int(sub.capacity[0]))
    state = env.reset(sub)
    for t in range(acts.shape[1]):
        state = env.step(state, acts[:, t])
    assert env.is_done(state).all()
    np.testing.assert_allclose(-env.objective(state).numpy(), refs[:4], rtol=0, atol=1e-6)
