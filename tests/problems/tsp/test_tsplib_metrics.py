"""TSPLIB metrics: hand-computed distances per EDGE_WEIGHT_TYPE, EXPLICIT matrices, tour files
written and read back, the .opt.tour / best-known references, and metric-aware solvers."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from nco.datasets import load_dataset, load_datasets
from nco.problems.tsp.io import (
    edge_lengths,
    read_dataset,
    read_tsplib,
    read_tsplib_tour,
    tsplib_length,
    tsplib_weights,
    write_tsplib_tour,
)
from nco.problems.tsp.solvers import SOLVERS

SQUARE = [[0, 0], [3, 0], [3, 4], [0, 4]]  # rectangle 3 x 4, diagonal 5


def tsp_text(name: str, coords: list, metric: str = "EUC_2D", extra: str = "") -> str:
    lines = "\n".join(f"{i + 1} {x} {y}" for i, (x, y) in enumerate(coords))
    return (
        f"NAME : {name}\nTYPE : TSP\nDIMENSION : {len(coords)}\nEDGE_WEIGHT_TYPE : {metric}\n"
        f"{extra}NODE_COORD_SECTION\n{lines}\nEOF\n"
    )


@pytest.mark.parametrize(
    ("a", "b", "metric", "expected"),
    [
        ([0, 0], [1, 1.2], "EUC_2D", 2),  # sqrt(2.44) = 1.562 -> nint 2
        ([0, 0], [1, 1], "EUC_2D", 1),  # 1.414 -> 1
        ([0, 0], [1, 1], "CEIL_2D", 2),  # 1.414 -> 2
        ([0, 0], [3, 4], "CEIL_2D", 5),  # exact stays
        ([0, 0], [10, 0], "ATT", 4),  # r = sqrt(10) = 3.162, t = 3 < r -> 4
        ([0, 0], [10, 30], "ATT", 10),  # r = sqrt(1000 / 10) = 10 exactly, t = 10 -> 10
        ([0, 0], [1, 0], "GEO", 112),  # one degree of latitude: 6378.388 * 0.017453 + 1 -> 112
        ([0, 0], [0.3, 0], "GEO", 56),  # 0.30 = 30 minutes: half a degree -> 55.6 + 1 -> 56
    ],
)
def test_edge_lengths_by_hand(a, b, metric, expected) -> None:
    """Each TSPLIB rounding rule on one edge computed by hand."""
    assert edge_lengths(np.array(a, float), np.array(b, float), metric) == expected


def test_weights_match_tour_lengths() -> None:
    """The matrix and the per-edge tour length agree; the rectangle's tour is 14 in EUC_2D."""
    coords = np.array(SQUARE, float)
    w = tsplib_weights(coords, "EUC_2D")
    assert w[0, 2] == 5 and w.dtype == np.int64 and (w == w.T).all()
    assert tsplib_length(coords, [0, 1, 2, 3], "EUC_2D") == 14
    assert tsplib_length(coords, [0, 2, 1, 3], "EUC_2D", w) == 5 + 4 + 5 + 4


@pytest.mark.parametrize(
    ("fmt", "numbers"),
    [
        ("FULL_MATRIX", "0 1 9 4\n1 0 2 8\n9 2 0 3\n4 8 3 0"),
        ("UPPER_ROW", "1 9 4\n2 8\n3"),
        ("LOWER_ROW", "1\n9 2\n4 8 3"),
        ("UPPER_DIAG_ROW", "0 1 9 4\n0 2 8\n0 3\n0"),
        ("LOWER_DIAG_ROW", "0\n1 0\n9 2 0\n4 8 3 0"),
    ],
)
def test_explicit_formats_give_one_matrix(tmp_path: Path, fmt: str, numbers: str) -> None:
    """Every supported EDGE_WEIGHT_FORMAT reads to the same matrix; the cost comes from it (the
    tour 1-2-3-4 costs 1 + 2 + 3 + 4 = 10 whatever the display coordinates)."""
    text = (
        "NAME : ex4\nTYPE : TSP\nDIMENSION : 4\nEDGE_WEIGHT_TYPE : EXPLICIT\n"
        f"EDGE_WEIGHT_FORMAT : {fmt}\nEDGE_WEIGHT_SECTION\n{numbers}\n"
        "DISPLAY_DATA_SECTION\n1 0 0\n2 1 0\n3 1 1\n4 0 1\nEOF\n"
    )
    path = tmp_path / "ex4.tsp"
    path.write_text(text)
    lib = read_tsplib(path)
    expected = [[0, 1, 9, 4], [1, 0, 2, 8], [9, 2, 0, 3], [4, 8, 3, 0]]
    np.testing.assert_array_equal(lib.weights, expected)
    data = read_dataset(path)
    assert data.metric == "EXPLICIT" and data.names == ["ex4"]
    assert tsplib_length(lib.coords, [0, 1, 2, 3], "EXPLICIT", lib.weights) == 10


@pytest.mark.parametrize(
    ("fmt", "numbers", "match"),
    [
        ("UPPER_ROW", "1 9 4\n2 8", "expected 6 numbers for UPPER_ROW with DIMENSION 4, got 5"),
        ("FUNCTION", "1", "EDGE_WEIGHT_FORMAT expected one of FULL_MATRIX"),
        ("UPPER_ROW", "1 9 4\n2 x\n3", "EDGE_WEIGHT_SECTION expected numbers"),
    ],
)
def test_explicit_errors_name_file_and_field(tmp_path, fmt, numbers, match) -> None:
    """A wrong count, format or token: one line naming the file, the field and the form."""
    path = tmp_path / "bad.tsp"
    path.write_text(
        "TYPE : TSP\nDIMENSION : 4\nEDGE_WEIGHT_TYPE : EXPLICIT\n"
        f"EDGE_WEIGHT_FORMAT : {fmt}\nEDGE_WEIGHT_SECTION\n{numbers}\n"
        "DISPLAY_DATA_SECTION\n1 0 0\n2 1 0\n3 1 1\n4 0 1\nEOF\n"
    )
    with pytest.raises(ValueError, match=match) as info:
        read_tsplib(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_explicit_without_coordinates_is_refused(tmp_path: Path) -> None:
    """Policies read coordinates: an EXPLICIT file without any is refused in one line."""
    path = tmp_path / "nocoords.tsp"
    path.write_text(
        "TYPE : TSP\nDIMENSION : 3\nEDGE_WEIGHT_TYPE : EXPLICIT\n"
        "EDGE_WEIGHT_FORMAT : UPPER_ROW\nEDGE_WEIGHT_SECTION\n1 2\n3\nEOF\n"
    )
    with pytest.raises(ValueError, match="NODE_COORD_SECTION or DISPLAY_DATA_SECTION"):
        read_tsplib(path)


def test_tour_round_trip(tmp_path: Path) -> None:
    """write_tsplib_tour writes 1-based ids and -1; read_tsplib_tour gives the tour back."""
    tour = [0, 3, 1, 4, 2]
    path = tmp_path / "five.opt.tour"
    write_tsplib_tour(path, tour, "five")
    assert read_tsplib_tour(path).tolist() == tour
    assert "TOUR_SECTION\n1\n4\n2\n5\n3\n-1\nEOF" in path.read_text()


def test_opt_tour_reference_in_the_file_metric(tmp_path: Path) -> None:
    """The .opt.tour beside a file is its reference, in the file's metric (CEIL_2D here:
    ceil(3) + ceil(4) + ... on the rectangle = 14; the crossing tour costs 18)."""
    (tmp_path / "rect.tsp").write_text(tsp_text("rect", SQUARE, "CEIL_2D"))
    write_tsplib_tour(tmp_path / "rect.opt.tour", [0, 1, 2, 3], "rect")
    data = load_dataset(tmp_path / "rect.tsp")
    assert data.metric == "CEIL_2D" and data.references.tolist() == [14.0]
    assert data.reference_source == "rect.opt.tour"
    assert tsplib_length(data.arrays["coords"][0], [0, 2, 1, 3], "CEIL_2D") == 18


def test_best_known_table_is_the_reference_without_a_tour(tmp_path: Path) -> None:
    """A bestSolutions-style table beside the files gives references by instance name."""
    (tmp_path / "a.tsp").write_text(tsp_text("a", SQUARE))
    (tmp_path / "b.tsp").write_text(tsp_text("b", SQUARE, "ATT"))
    (tmp_path / "bestSolutions.txt").write_text("Instance Value\na 14\nb : 5 (opt)\n")
    datasets = load_datasets(tmp_path)
    assert [d.names[0] for d in datasets] == ["a", "b"]
    assert [d.references.tolist() for d in datasets] == [[14.0], [5.0]]
    assert datasets[1].reference_source == "bestSolutions.txt"


def test_opt_tour_of_another_size_is_refused(tmp_path: Path) -> None:
    """A tour with the wrong number of nodes: one line naming the tour file and the field."""
    (tmp_path / "rect.tsp").write_text(tsp_text("rect", SQUARE))
    write_tsplib_tour(tmp_path / "rect.opt.tour", [0, 1, 2], "rect")
    with pytest.raises(ValueError, match=r"rect.opt.tour: field TOUR_SECTION has 3 nodes"):
        load_dataset(tmp_path / "rect.tsp")


@pytest.mark.parametrize("solver", ["exact", "ortools", "lkh"])
def test_solvers_optimise_the_file_metric(solver: str) -> None:
    """With `weights` the solvers minimise those distances, not the Euclidean ones: a matrix
    that makes the Euclidean-optimal tour expensive gives the brute-force matrix optimum."""
    if solver == "lkh":
        pytest.importorskip("elkai")
    rng = np.random.default_rng(0)
    coords = rng.uniform(size=(7, 2))
    weights = rng.integers(1, 100, size=(7, 7))
    weights = np.triu(weights, 1) + np.triu(weights, 1).T
    best = min(
        tsplib_length(coords, [0, *p], "EXPLICIT", weights)
        for p in itertools.permutations(range(1, 7))
    )
    result = SOLVERS[solver]({"coords": coords, "weights": weights}, 2.0, 1)
    assert result.cost == best
    assert tsplib_length(coords, result.solution, "EXPLICIT", weights) == best
