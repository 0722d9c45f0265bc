"""TSP dataset I/O: round trips, TSPLIB parsing, the restricted unpickler, validation errors."""

from __future__ import annotations

import codecs
import os
import pickle
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from nco.problems.tsp import TSPInstances
from nco.problems.tsp.env import tour_length
from nco.problems.tsp.io import (
    load_tsp,
    read_tsplib,
    read_tsplib_tour,
    save_tsp_npz,
    save_tsp_pkl,
)

SHARED = Path(__file__).resolve().parents[3] / ".." / "shared"

FIVE_CITIES = """NAME : five
COMMENT : a small hand-made instance
TYPE : TSP
DIMENSION : 5
EDGE_WEIGHT_TYPE : EUC_2D
NODE_COORD_SECTION
1 0 0
2 30 0
3 30 40
4 15.5 55
5 -2e1 40
EOF
"""

FIVE_CITIES_TOUR = """NAME : five.opt.tour
TYPE : TOUR
DIMENSION : 5
TOUR_SECTION
1
2 3
4
5
-1
EOF
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    """Write `text` to tmp_path/name and return the path."""
    path = tmp_path / name
    path.write_text(text)
    return path


def random_instances(num: int = 3, n: int = 6) -> TSPInstances:
    """Seeded uniform instances."""
    gen = torch.Generator().manual_seed(0)
    return TSPInstances(coords=torch.rand(num, n, 2, generator=gen, dtype=torch.float64))


def test_npz_round_trip_with_references(tmp_path: Path) -> None:
    """Coordinates, reference costs and their source survive a .npz round trip bit for bit."""
    instances = random_instances()
    refs = np.array([3.25, 2.5, 4.125])
    path = tmp_path / "set.npz"
    save_tsp_npz(path, instances, refs, reference_source="exact (OR-Tools MIP)")
    loaded, loaded_refs = load_tsp(path)
    assert loaded.coords.dtype == torch.float64
    assert torch.equal(loaded.coords, instances.coords)
    np.testing.assert_array_equal(loaded_refs, refs)
    with np.load(path, allow_pickle=False) as data:
        assert str(data["reference_source"]) == "exact (OR-Tools MIP)"


def test_npz_without_references(tmp_path: Path) -> None:
    """A .npz holding only coords (float32 here) loads as float64 with no references."""
    coords = np.random.default_rng(0).random((2, 5, 2)).astype(np.float32)
    path = tmp_path / "plain.npz"
    np.savez(path, coords=coords)
    loaded, refs = load_tsp(path)
    assert refs is None
    np.testing.assert_array_equal(loaded.coords.numpy(), coords.astype(np.float64))


def test_npz_tour_lengths_layout(tmp_path: Path) -> None:
    """The shared reference layout (coords, tours, tour_lengths) takes tour_lengths as refs."""
    instances = random_instances(2, 5)
    tours = np.array([[0, 1, 2, 3, 4], [0, 2, 4, 1, 3]], dtype=np.int32)
    lengths = tour_length(instances.coords, torch.from_numpy(tours).long()).numpy()
    path = tmp_path / "ref.npz"
    np.savez(path, coords=instances.coords.numpy(), tours=tours, tour_lengths=lengths)
    _, refs = load_tsp(path)
    np.testing.assert_array_equal(refs, lengths)


def test_pkl_round_trip(tmp_path: Path) -> None:
    """save_tsp_pkl writes Kool's layout (nested lists) and load_tsp reads it back exactly."""
    instances = random_instances()
    path = tmp_path / "kool.pkl"
    save_tsp_pkl(path, instances)
    with path.open("rb") as f:
        assert isinstance(pickle.load(f), list)
    loaded, refs = load_tsp(path)
    assert refs is None
    assert torch.equal(loaded.coords, instances.coords)


@pytest.mark.parametrize(
    ("protocol", "numpy1_names"), [(2, False), (3, False), (4, False), (5, False), (2, True)]
)
def test_pkl_numpy_array(tmp_path: Path, protocol: int, numpy1_names: bool) -> None:
    """A pickled numpy array loads under every protocol, also when written by numpy 1.x
    (module numpy.core instead of numpy._core; protocol 2 names modules in plain text)."""
    coords = random_instances().coords.numpy()
    data = pickle.dumps(coords, protocol=protocol)
    if numpy1_names:
        assert b"numpy._core.multiarray\n_reconstruct" in data
        data = data.replace(b"numpy._core.", b"numpy.core.")
    path = tmp_path / "array.pkl"
    path.write_bytes(data)
    loaded, _ = load_tsp(path)
    np.testing.assert_array_equal(loaded.coords.numpy(), coords)


def test_pkl_with_numpy_scalars_and_arrays_per_instance(tmp_path: Path) -> None:
    """A list of per-instance arrays of numpy scalars (protocol 5) loads through the allowlist."""
    coords = np.random.default_rng(1).random((2, 4, 2))
    data = [coords[0], [[np.float64(x), np.float64(y)] for x, y in coords[1]]]
    path = tmp_path / "mixed.pkl"
    path.write_bytes(pickle.dumps(data, protocol=5))
    loaded, _ = load_tsp(path)
    np.testing.assert_array_equal(loaded.coords.numpy(), coords)


class RunsShell:
    """Pickles into a call of os.system, as a hostile dataset file would."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (os.system, (f"touch {self.marker}",))


def test_pkl_refuses_foreign_globals_without_running_them(tmp_path: Path) -> None:
    """A pickle that calls os.system is refused, naming the file and global, and never runs."""
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pkl"
    path.write_bytes(pickle.dumps([RunsShell(marker)]))
    with pytest.raises(
        pickle.UnpicklingError, match=r"evil\.pkl.*refused global '(posix|os)\.system'"
    ):
        load_tsp(path)
    assert not marker.exists()


def test_pkl_refuses_non_latin1_codecs(tmp_path: Path) -> None:
    """The protocol-2 `_codecs.encode` helper is only allowed with latin-1."""

    class Encodes:
        def __reduce__(self) -> tuple:
            return (codecs.encode, ("eJwDAAAAAAE=", "base64"))

    path = tmp_path / "codec.pkl"
    path.write_bytes(pickle.dumps(Encodes(), protocol=2))
    with pytest.raises(pickle.UnpicklingError, match="base64"):
        load_tsp(path)


def test_tsplib_instance_and_opt_tour(tmp_path: Path) -> None:
    """A 5-city EUC_2D file gives its name, type and coordinates as written; its .opt.tour
    (ids spread over lines) gives the 0-based tour, whose length we compute by hand."""
    path = write(tmp_path, "five.tsp", FIVE_CITIES)
    inst = read_tsplib(path)
    assert inst.name == "five"
    assert inst.edge_weight_type == "EUC_2D"
    expected = np.array([[0, 0], [30, 0], [30, 40], [15.5, 55], [-20, 40]], dtype=np.float64)
    np.testing.assert_array_equal(inst.coords, expected)
    loaded, refs = load_tsp(path)
    assert refs is None
    assert loaded.coords.shape == (1, 5, 2)
    np.testing.assert_array_equal(loaded.coords[0].numpy(), expected)
    tour = read_tsplib_tour(write(tmp_path, "five.opt.tour", FIVE_CITIES_TOUR))
    np.testing.assert_array_equal(tour, [0, 1, 2, 3, 4])
    assert tour.dtype == np.int64
    by_hand = 30 + 40 + np.hypot(14.5, 15) + np.hypot(35.5, 15) + np.hypot(20, 40)
    length = tour_length(loaded.coords, torch.from_numpy(tour)[None])
    assert length.item() == pytest.approx(by_hand, rel=1e-14)


def test_tsplib_name_defaults_to_file_stem_and_accepts_colon_section(tmp_path: Path) -> None:
    """Without NAME the file stem names the instance; 'NODE_COORD_SECTION :' and a missing EOF
    are accepted, and nodes may be listed out of order."""
    text = "TYPE: TSP\nDIMENSION: 3\nEDGE_WEIGHT_TYPE: GEO\nNODE_COORD_SECTION :\n"
    text += "2 1 1\n1 0 0\n3 2 0\n"
    inst = read_tsplib(write(tmp_path, "tri.tsp", text))
    assert inst.name == "tri"
    assert inst.edge_weight_type == "GEO"
    np.testing.assert_array_equal(inst.coords, [[0, 0], [1, 1], [2, 0]])


def replace_line(text: str, old: str, new: str) -> str:
    """`text` with the first `old` replaced by `new`, which must be present."""
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (replace_line(FIVE_CITIES, "DIMENSION : 5", "DIMENSION : 6"), "DIMENSION is 6 but"),
        (replace_line(FIVE_CITIES, "DIMENSION : 5\n", ""), "missing field DIMENSION"),
        (replace_line(FIVE_CITIES, "DIMENSION : 5", "DIMENSION : five"), "DIMENSION expected an"),
        (replace_line(FIVE_CITIES, "TYPE : TSP", "TYPE : ATSP"), "TYPE expected 'TSP'"),
        (replace_line(FIVE_CITIES, "EUC_2D", "EUC_3D"), "EDGE_WEIGHT_TYPE expected one of"),
        (replace_line(FIVE_CITIES, "EUC_2D", "EXPLICIT"), "expected an EDGE_WEIGHT_SECTION"),
        (
            replace_line(FIVE_CITIES, "EOF", "FIXED_EDGES_SECTION\n1 2\n-1\nEOF"),
            "section FIXED_EDGES_SECTION is not supported",
        ),
        (
            replace_line(FIVE_CITIES, "NODE_COORD_SECTION", "DISPLAY_DATA_SECTION"),
            "expected a NODE",
        ),
        (replace_line(FIVE_CITIES, "3 30 40", "3 30"), "line 9 of NODE_COORD_SECTION"),
        (replace_line(FIVE_CITIES, "3 30 40", "3 30 4O"), "line 9 of NODE_COORD_SECTION"),
        (replace_line(FIVE_CITIES, "3 30 40", "2 30 40"), "line 9 of NODE_COORD_SECTION"),
        (replace_line(FIVE_CITIES, "3 30 40", "9 30 40"), "expected node ids 1..5"),
        (replace_line(FIVE_CITIES, "3 30 40", "3 30 nan"), "finite values"),
        ("TYPE : TSP\nDIMENSION : 2\nEDGE_WEIGHT_TYPE : EUC_2D\n", "at least 3 nodes"),
    ],
    ids=[
        "dimension-mismatch",
        "no-dimension",
        "dimension-not-int",
        "atsp",
        "euc-3d",
        "explicit-without-weights",
        "fixed-edges",
        "no-coord-section",
        "short-line",
        "bad-number",
        "repeated-id",
        "id-out-of-range",
        "nan",
        "dimension-2",
    ],
)
def test_tsplib_validation_errors(tmp_path: Path, text: str, match: str) -> None:
    """Each malformed .tsp raises ValueError naming the file and the offending field."""
    path = write(tmp_path, "bad.tsp", text)
    with pytest.raises(ValueError, match=match) as info:
        load_tsp(path)
    assert "bad.tsp" in str(info.value)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (replace_line(FIVE_CITIES_TOUR, "-1\n", ""), "-1 terminator"),
        (replace_line(FIVE_CITIES_TOUR, "2 3", "2 2"), "permutation of nodes 1..5"),
        (
            replace_line(FIVE_CITIES_TOUR, "DIMENSION : 5", "DIMENSION : 6"),
            "permutation of nodes 1..6",
        ),
        (replace_line(FIVE_CITIES_TOUR, "2 3", "2 x"), "expected integer node ids"),
        (replace_line(FIVE_CITIES_TOUR, "TYPE : TOUR", "TYPE : TSP"), "TYPE expected 'TOUR'"),
        (replace_line(FIVE_CITIES_TOUR, "TOUR_SECTION", "EOF"), "expected a TOUR_SECTION"),
    ],
    ids=["no-terminator", "repeat", "dimension-mismatch", "not-int", "type", "no-section"],
)
def test_tsplib_tour_validation_errors(tmp_path: Path, text: str, match: str) -> None:
    """Each malformed tour file raises ValueError naming the file and the field."""
    path = write(tmp_path, "bad.opt.tour", text)
    with pytest.raises(ValueError, match=match) as info:
        read_tsplib_tour(path)
    assert "bad.opt.tour" in str(info.value)


GOOD = np.random.default_rng(0).random((3, 5, 2))
WITH_NAN = GOOD.copy()
WITH_NAN[1, 2, 0] = np.nan
WITH_INF = GOOD.copy()
WITH_INF[0, 0, 1] = np.inf


@pytest.mark.parametrize(
    ("arrays", "match"),
    [
        ({"coords": GOOD[0]}, r"field 'coords' expected shape \[N, n, 2\]"),
        ({"coords": GOOD[..., :1]}, r"field 'coords' expected shape \[N, n, 2\]"),
        ({"coords": GOOD[:0]}, r"field 'coords' expected shape \[N, n, 2\]"),
        ({"coords": GOOD[:, :2]}, "field 'coords' expected at least 3 nodes"),
        ({"coords": WITH_NAN}, "field 'coords' expected finite values"),
        ({"coords": WITH_INF}, "field 'coords' expected finite values"),
        ({"coords": GOOD.astype(str)}, "field 'coords' expected numbers"),
        ({"points": GOOD}, "missing field 'coords'"),
        ({"coords": GOOD, "reference_costs": np.ones(2)}, "field 'reference_costs' expected 3"),
        ({"coords": GOOD, "tour_lengths": np.ones((3, 1))}, "field 'tour_lengths' expected 3"),
        (
            {"coords": GOOD, "reference_costs": np.array([1, np.nan, 2])},
            "'reference_costs' expected finite",
        ),
    ],
    ids=[
        "2d",
        "1-coordinate",
        "no-instances",
        "2-nodes",
        "nan",
        "inf",
        "strings",
        "no-coords",
        "refs-length",
        "refs-2d",
        "refs-nan",
    ],
)
def test_npz_validation_errors(tmp_path: Path, arrays: dict, match: str) -> None:
    """Each malformed .npz raises ValueError naming the file and the field."""
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match=match) as info:
        load_tsp(path)
    assert "bad.npz" in str(info.value)


def test_npz_with_object_array_is_refused(tmp_path: Path) -> None:
    """A .npz whose arrays need pickle to load is refused with a ValueError naming the file."""
    path = tmp_path / "objects.npz"
    np.savez(path, coords=np.array([GOOD[0], None], dtype=object))
    with pytest.raises(ValueError, match=r"objects\.npz: expected plain numeric arrays"):
        load_tsp(path)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ([[[0.0, 0.0], [1.0, 0.0]]], "at least 3 nodes"),
        ([[[0.0, 0.0], [1.0, 0.0], [1.0]]], "field 'instances' expected a list of instances"),
        ([[0.0, 0.0, 1.0]], r"expected shape \[N, n, 2\]"),
        ([[[0.0, 0.0], [1.0, float("inf")], [2.0, 0.0]]], "finite values"),
    ],
    ids=["2-nodes", "ragged", "2d", "inf"],
)
def test_pkl_validation_errors(tmp_path: Path, data: list, match: str) -> None:
    """Each malformed Kool pickle raises ValueError naming the file and what was expected."""
    path = tmp_path / "bad.pkl"
    path.write_bytes(pickle.dumps(data))
    with pytest.raises(ValueError, match=match) as info:
        load_tsp(path)
    assert "bad.pkl" in str(info.value)


@pytest.mark.parametrize("name", ["set.txt", "set", "set.pt"])
def test_unknown_extension(tmp_path: Path, name: str) -> None:
    """Files other than .npz, .pkl and .tsp are rejected before being opened."""
    with pytest.raises(ValueError, match=r"expected \.npz, \.pkl or \.tsp"):
        load_tsp(tmp_path / name)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            lambda p: save_tsp_npz(p / "x.npz", GOOD, np.ones(4)),
            "field 'reference_costs' expected 3",
        ),
        (
            lambda p: save_tsp_npz(p / "x.npz", GOOD, reference_source="LKH"),
            "'reference_source' needs",
        ),
        (lambda p: save_tsp_npz(p / "x.data", GOOD), r"ending in \.npz"),
        (lambda p: save_tsp_npz(p / "x.npz", WITH_NAN), "finite values"),
        (lambda p: save_tsp_pkl(p / "x.npz", GOOD), r"ending in \.pkl"),
        (lambda p: save_tsp_pkl(p / "x.pkl", GOOD[0]), r"expected shape \[N, n, 2\]"),
    ],
    ids=["refs-length", "source-without-refs", "npz-suffix", "nan", "pkl-suffix", "pkl-2d"],
)
def test_save_validation_errors(tmp_path: Path, call: Callable[[Path], None], match: str) -> None:
    """Writers validate what they write and the file name they write to."""
    with pytest.raises(ValueError, match=match):
        call(tmp_path)
    assert not any(tmp_path.iterdir())


@pytest.mark.skipif(not (SHARED / "data").is_dir(), reason="../shared is absent")
def test_shared_reference_set_loads() -> None:
    """The shared TSP200 set loads with its 128 optimal lengths, which match its tours."""
    path = SHARED / "data" / "reference" / "tsp200_bq_128.npz"
    instances, refs = load_tsp(path)
    assert instances.coords.shape == (128, 200, 2)
    assert refs.shape == (128,)
    assert refs.mean() == pytest.approx(10.6935, abs=5e-5)
    with np.load(path, allow_pickle=False) as data:
        tours = torch.from_numpy(data["tours"].astype(np.int64))
    np.testing.assert_allclose(tour_length(instances.coords, tours).numpy(), refs, rtol=1e-9)
