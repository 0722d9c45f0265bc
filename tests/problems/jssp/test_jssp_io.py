"""JSSP files: Taillard text, OR-Library text and `.npz`, checked by hand and by round trips."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from job_shop_lib import JobShopInstance

from nco.problems.jssp import JSSPEnv, make_instances
from nco.problems.jssp.io import (
    load_jssp,
    load_jssp_expert,
    read_npz,
    read_orlib,
    read_taillard,
    write_npz,
    write_orlib,
    write_taillard,
)

TAILLARD_TEXT = """\
Nb of jobs, Nb of Machines, Time seed, Machine seed, Upper bound, Lower bound
 2 3 1 2 10 9
Times
 3 2 2
 2 1 4
Machines
 1 2 3
 1 3 2
"""

ORLIB_TEXT = """\
 instance tiny
 +++++++++++++++++++++++++++++
 a 2 x 3 instance written by hand
 2 3
 0 3 1 2 2 2
 0 2 2 1 1 4
"""


def test_read_taillard_by_hand(tmp_path: Path) -> None:
    """A hand-written Taillard file gives its durations and 0-based machines."""
    path = tmp_path / "tiny.txt"
    path.write_text(TAILLARD_TEXT)
    inst = read_taillard(path)
    assert inst.durations.tolist() == [[[3, 2, 2], [2, 1, 4]]]
    assert inst.machines.tolist() == [[[0, 1, 2], [0, 2, 1]]]


def test_read_orlib_by_hand(tmp_path: Path) -> None:
    """A hand-written OR-Library file (with comment lines) gives the same instance."""
    path = tmp_path / "tiny.jss"
    path.write_text(ORLIB_TEXT)
    inst = read_orlib(path)
    assert inst.durations.tolist() == [[[3, 2, 2], [2, 1, 4]]]
    assert inst.machines.tolist() == [[[0, 1, 2], [0, 2, 1]]]


def test_text_round_trips(tmp_path: Path) -> None:
    """Several instances survive Taillard write/read; one survives OR-Library write/read, and
    job-shop-lib's independent reader sees the same matrices in our OR-Library file."""
    instances = JSSPEnv(4, 3).generate(3, torch.Generator().manual_seed(0))
    write_taillard(tmp_path / "t.txt", instances)
    back = read_taillard(tmp_path / "t.txt")
    assert torch.equal(back.durations, instances.durations)
    assert torch.equal(back.machines, instances.machines)
    one = instances.index(torch.tensor([1]))
    write_orlib(tmp_path / "o.jss", one)
    again = read_orlib(tmp_path / "o.jss")
    assert torch.equal(again.durations, one.durations) and torch.equal(again.machines, one.machines)
    jsl = JobShopInstance.from_taillard_file(tmp_path / "o.jss")
    assert np.array_equal(jsl.duration_matrix_array, one.durations[0].numpy())
    assert np.array_equal(jsl.machines_matrix_array, one.machines[0].numpy())


def test_npz_round_trip_with_references(tmp_path: Path) -> None:
    """Instances, reference makespans and their source survive `.npz`; integers stay integers."""
    instances = JSSPEnv(3, 4).generate(5, torch.Generator().manual_seed(1))
    refs = torch.arange(5, dtype=torch.float64) + 100
    write_npz(tmp_path / "d.npz", instances, refs, "hand-made")
    with np.load(tmp_path / "d.npz") as raw:
        assert raw["durations"].dtype == np.int64 and raw["machines"].shape == (5, 3, 4)
    back, back_refs, source = read_npz(tmp_path / "d.npz")
    assert torch.equal(back.durations, instances.durations)
    assert torch.equal(back.machines, instances.machines)
    assert torch.equal(back_refs, refs) and source == "hand-made"
    write_npz(tmp_path / "bare.npz", instances)
    assert read_npz(tmp_path / "bare.npz")[1:] == (None, None)


def test_load_jssp_dispatches_on_format(tmp_path: Path) -> None:
    """`load_jssp` reads .npz with references, Taillard and OR-Library text without."""
    (tmp_path / "t.txt").write_text(TAILLARD_TEXT)
    (tmp_path / "o.jss").write_text(ORLIB_TEXT)
    for name in ("t.txt", "o.jss"):
        inst, refs = load_jssp(tmp_path / name)
        assert inst.durations.tolist() == [[[3, 2, 2], [2, 1, 4]]] and refs is None
    write_npz(tmp_path / "d.npz", inst, np.array([10.0]))
    assert load_jssp(tmp_path / "d.npz")[1].tolist() == [10.0]
    with pytest.raises(ValueError, match="not found"):
        load_jssp(tmp_path / "missing.npz")


def test_load_jssp_expert_from_actions_and_starts(tmp_path: Path) -> None:
    """Expert files give sequences directly or from checked start times; the hand schedule
    [[0, 3, 6], [3, 5, 6]] becomes the sequence 0 0 1 1 0 1 with makespan 10."""
    arrays = {"durations": np.array([[[3, 2, 2], [2, 1, 4]]]), "machines": [[[0, 1, 2], [0, 2, 1]]]}
    np.savez(tmp_path / "s.npz", starts=np.array([[[0, 3, 6], [3, 5, 6]]]), **arrays)
    inst, actions = load_jssp_expert(tmp_path / "s.npz")
    assert actions.tolist() == [[0, 0, 1, 1, 0, 1]]
    assert JSSPEnv(2, 3).objective(JSSPEnv(2, 3).replay(inst, actions)).item() == -10.0
    np.savez(tmp_path / "a.npz", actions=np.array([[1, 0, 1, 1, 0, 0]]), **arrays)
    assert load_jssp_expert(tmp_path / "a.npz")[1].tolist() == [[1, 0, 1, 1, 0, 0]]
    np.savez(tmp_path / "bad_a.npz", actions=np.array([[1, 1, 1, 1, 0, 0]]), **arrays)
    with pytest.raises(ValueError, match="each job index 3 times"):
        load_jssp_expert(tmp_path / "bad_a.npz")
    np.savez(tmp_path / "bad_s.npz", starts=np.array([[[0, 2, 6], [3, 5, 6]]]), **arrays)
    with pytest.raises(ValueError, match="instance 0: check_schedule: precedence"):
        load_jssp_expert(tmp_path / "bad_s.npz")
    np.savez(tmp_path / "none.npz", **arrays)
    with pytest.raises(ValueError, match="'actions'"):
        load_jssp_expert(tmp_path / "none.npz")


def test_bad_files_raise(tmp_path: Path) -> None:
    """Missing fields, machine orders that are not permutations, bad reference shapes and
    truncated text raise ValueError naming the file."""
    np.savez(tmp_path / "a.npz", durations=np.ones((1, 2, 2)))
    with pytest.raises(ValueError, match=r"a\.npz: missing field"):
        read_npz(tmp_path / "a.npz")
    np.savez(tmp_path / "b.npz", durations=np.ones((1, 2, 2)), machines=np.zeros((1, 2, 2)))
    with pytest.raises(ValueError, match=r"b\.npz: field machines"):
        read_npz(tmp_path / "b.npz")
    good = {"durations": np.ones((1, 2, 2)), "machines": np.array([[[0, 1], [1, 0]]])}
    np.savez(tmp_path / "c.npz", reference_costs=np.ones(3), **good)
    with pytest.raises(ValueError, match=r"c\.npz: field reference_costs"):
        read_npz(tmp_path / "c.npz")
    (tmp_path / "d.txt").write_text(TAILLARD_TEXT.split("\nMachines")[0])
    with pytest.raises(ValueError, match=r"d\.txt: expected matching"):
        read_taillard(tmp_path / "d.txt")
    other = "Nb of jobs, Nb of Machines\n1 2\nTimes\n4 5\nMachines\n2 1\n"
    (tmp_path / "f.txt").write_text(TAILLARD_TEXT + other)
    with pytest.raises(ValueError, match=r"f\.txt: expected instances of one size"):
        read_taillard(tmp_path / "f.txt")
    (tmp_path / "e.jss").write_text("2 3\n0 3 1 2 2 2\n")
    with pytest.raises(ValueError, match=r"e\.jss: expected 2 rows"):
        read_orlib(tmp_path / "e.jss")


@pytest.mark.parametrize(
    ("durations", "machines", "message"),
    [
        ([[1, 0], [2, 3]], [[0, 1], [1, 0]], "durations must hold finite values > 0"),
        ([[1, 2], [2, 3]], [[0, 1], [1, 1]], "exactly once per job"),
        ([[1, 2], [2, 3]], [[0, 1]], "equal shape"),
        ([[1, 2], [2, 3]], [[0, 1.5], [1, 0]], "must hold integers"),
    ],
)
def test_make_instances_validation(durations: list, machines: list, message: str) -> None:
    """Non-positive durations, repeated machines, shape mismatch and fractional machines raise."""
    with pytest.raises(ValueError, match=message):
        make_instances(durations, machines)
