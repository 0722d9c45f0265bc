"""TSP dataset files: the project's .npz, Kool et al. pickles, and TSPLIB .tsp / .opt.tour.

TSPLIB files keep their own metric: EUC_2D (nint of the Euclidean distance), CEIL_2D, ATT
(pseudo-Euclidean), GEO (geographical, DDD.MM coordinates) and EXPLICIT matrices (FULL_MATRIX,
UPPER_ROW, LOWER_ROW, UPPER_DIAG_ROW, LOWER_DIAG_ROW) with coordinates for the policy in a
NODE_COORD_SECTION or DISPLAY_DATA_SECTION. `read_dataset` gives such a file as a one-instance
`Dataset` with `metric`, the integer `weights` matrix for the solvers and, when a
`<name>.opt.tour` lies beside it, the optimum in that metric as reference.

Every reader validates what it returns (shape [N, n, 2], at least 3 nodes, finite values) and
raises ValueError naming the file and the field. Pickles go through a restricted unpickler that
only rebuilds lists, numbers and numpy arrays, so a hostile file cannot run code.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch

from nco.dataset import Dataset, best_known, npz_reference_source
from nco.problems.tsp.types import TSPInstances
from nco.safe_io import RestrictedUnpickler, check_refs

EDGE_WEIGHT_TYPES = ("EUC_2D", "CEIL_2D", "GEO", "ATT", "EXPLICIT")
COORD_METRICS = ("EUC_2D", "CEIL_2D", "GEO", "ATT")
EXPLICIT_FORMATS = ("FULL_MATRIX", "UPPER_ROW", "LOWER_ROW", "UPPER_DIAG_ROW", "LOWER_DIAG_ROW")
SUPPORTED_SECTIONS = ("NODE_COORD_SECTION", "EDGE_WEIGHT_SECTION", "DISPLAY_DATA_SECTION")
MAX_WEIGHT_NODES = 3000  # coordinate metrics: no (n, n) matrix beyond this (solvers go Euclidean)


@dataclasses.dataclass(frozen=True)
class TSPLIBInstance:
    """One TSPLIB instance: its NAME, EDGE_WEIGHT_TYPE and coordinates exactly as given.

    Coordinates are not converted: GEO stays in DDD.MM degrees, ATT in its pseudo-Euclidean units.
    """

    name: str
    edge_weight_type: str
    coords: np.ndarray  # (n, 2) float64, node i of the file is row i - 1
    weights: np.ndarray | None = None  # (n, n) EXPLICIT distances as given, else None


def load_tsp(path: str | os.PathLike) -> tuple[TSPInstances, np.ndarray | None]:
    """TSP instances and optional per-instance reference costs from a .npz, .pkl or .tsp file.

    .npz takes `reference_costs`, else `tour_lengths` (the shared reference layout), as
    references; .pkl (Kool et al.) and .tsp (TSPLIB, one instance) carry none. `read_tsplib`
    also gives a .tsp file's NAME and EDGE_WEIGHT_TYPE.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npz":
        coords, refs = _load_npz(path)
    elif suffix == ".pkl":
        coords, refs = _load_pkl(path), None
    elif suffix == ".tsp":
        coords, refs = read_tsplib(path).coords[None], None
    else:
        raise ValueError(f"{path}: unknown extension {suffix!r}; expected .npz, .pkl or .tsp.")
    return TSPInstances(coords=torch.from_numpy(coords)), refs


def save_tsp_npz(
    path: str | os.PathLike,
    instances: TSPInstances | np.ndarray,
    reference_costs: np.ndarray | None = None,
    reference_source: str | None = None,
) -> None:
    """Write instances (and optional references with their source) as the project's .npz."""
    path = _require_suffix(path, ".npz")
    arrays: dict[str, np.ndarray] = {"coords": _check_coords(_as_array(instances), path, "coords")}
    if reference_costs is not None:
        arrays["reference_costs"] = check_refs(
            np.asarray(reference_costs), len(arrays["coords"]), path, "reference_costs"
        )
    if reference_source is not None:
        if reference_costs is None:
            raise ValueError(
                f"{path}: field 'reference_source' needs 'reference_costs' to describe."
            )
        arrays["reference_source"] = np.array(str(reference_source))
    np.savez(path, allow_pickle=False, **arrays)


def save_tsp_pkl(path: str | os.PathLike, instances: TSPInstances | np.ndarray) -> None:
    """Write instances as a Kool et al. pickle: a list of instances, each a list of [x, y]."""
    path = _require_suffix(path, ".pkl")
    coords = _check_coords(_as_array(instances), path, "instances")
    with path.open("wb") as f:
        pickle.dump(coords.tolist(), f, protocol=pickle.HIGHEST_PROTOCOL)


def read_tsplib(path: str | os.PathLike) -> TSPLIBInstance:
    """Parse a TSPLIB .tsp file of TYPE TSP with coordinates (EUC_2D, CEIL_2D, ATT, GEO) or an
    EXPLICIT matrix plus coordinates (NODE_COORD_SECTION or DISPLAY_DATA_SECTION)."""
    path = Path(path)
    header, sections = _tsplib_sections(path)
    kind = header.get("TYPE", "").split()
    if kind[:1] != ["TSP"]:
        raise ValueError(f"{path}: field TYPE expected 'TSP', got {header.get('TYPE')!r}.")
    weight_type = header.get("EDGE_WEIGHT_TYPE", "")
    if weight_type not in EDGE_WEIGHT_TYPES:
        raise ValueError(
            f"{path}: field EDGE_WEIGHT_TYPE expected one of {', '.join(EDGE_WEIGHT_TYPES)}, "
            f"got {weight_type!r}."
        )
    unsupported = [k for k in sections if k not in SUPPORTED_SECTIONS]
    if unsupported:
        raise ValueError(
            f"{path}: section {unsupported[0]} is not supported; expected only "
            f"{', '.join(SUPPORTED_SECTIONS)}."
        )
    dimension = _dimension(header, path)
    if dimension is None:
        raise ValueError(f"{path}: missing field DIMENSION (expected a node count).")
    if dimension < 3:
        raise ValueError(f"{path}: field DIMENSION expected at least 3 nodes, got {dimension}.")
    weights = None
    if weight_type == "EXPLICIT":
        coord_section = next(
            (k for k in ("NODE_COORD_SECTION", "DISPLAY_DATA_SECTION") if k in sections), None
        )
        if coord_section is None:
            raise ValueError(
                f"{path}: EDGE_WEIGHT_TYPE EXPLICIT expected a NODE_COORD_SECTION or "
                "DISPLAY_DATA_SECTION too (policies read coordinates)."
            )
        if "EDGE_WEIGHT_SECTION" not in sections:
            raise ValueError(f"{path}: EDGE_WEIGHT_TYPE EXPLICIT expected an EDGE_WEIGHT_SECTION.")
        weights = _explicit_weights(
            header.get("EDGE_WEIGHT_FORMAT", ""), sections["EDGE_WEIGHT_SECTION"], dimension, path
        )
    else:
        coord_section = "NODE_COORD_SECTION"
        if coord_section not in sections:
            raise ValueError(f"{path}: expected a NODE_COORD_SECTION, found {list(sections)}.")
    nodes: dict[int, tuple[float, float]] = {}
    for lineno, line in sections[coord_section]:
        tokens = line.split()
        try:
            node, x, y = int(tokens[0]), float(tokens[1]), float(tokens[2])
        except (ValueError, IndexError) as e:
            raise ValueError(
                f"{path}: line {lineno} of {coord_section} expected 'id x y', got {line!r}."
            ) from e
        if len(tokens) != 3 or node in nodes:
            raise ValueError(
                f"{path}: line {lineno} of {coord_section} expected one new 'id x y', got {line!r}."
            )
        nodes[node] = (x, y)
    if len(nodes) != dimension:
        raise ValueError(
            f"{path}: field DIMENSION is {dimension} but {coord_section} has {len(nodes)} nodes."
        )
    if set(nodes) != set(range(1, dimension + 1)):
        raise ValueError(f"{path}: field {coord_section} expected node ids 1..{dimension}.")
    coords = np.array([nodes[i] for i in range(1, dimension + 1)], dtype=np.float64)
    coords = _check_coords(coords[None], path, coord_section)[0]
    name = header.get("NAME", path.name.split(".")[0])
    return TSPLIBInstance(name=name, edge_weight_type=weight_type, coords=coords, weights=weights)


def edge_lengths(a: np.ndarray, b: np.ndarray, metric: str) -> np.ndarray:
    """TSPLIB distances between the points `a` and `b` (..., 2) under a coordinate metric.

    EUC_2D: nint(d); CEIL_2D: ceil(d); ATT: r = sqrt(d^2 / 10), t = nint(r), t + 1 if t < r;
    GEO: TSPLIB's geographical distance (PI = 3.141592, RRR = 6378.388, DDD.MM coordinates).
    """
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if metric == "EUC_2D":
        return np.floor(np.linalg.norm(a - b, axis=-1) + 0.5)
    if metric == "CEIL_2D":
        return np.ceil(np.linalg.norm(a - b, axis=-1))
    if metric == "ATT":
        r = np.sqrt(((a - b) ** 2).sum(-1) / 10.0)
        t = np.floor(r + 0.5)
        return np.where(t < r, t + 1, t)
    if metric == "GEO":
        lat_a, lon_a = _geo_radians(a[..., 0]), _geo_radians(a[..., 1])
        lat_b, lon_b = _geo_radians(b[..., 0]), _geo_radians(b[..., 1])
        q1, q2, q3 = np.cos(lon_a - lon_b), np.cos(lat_a - lat_b), np.cos(lat_a + lat_b)
        arg = np.clip(0.5 * ((1 + q1) * q2 - (1 - q1) * q3), -1.0, 1.0)
        return np.trunc(6378.388 * np.arccos(arg) + 1.0)
    raise ValueError(f"TSPLIB metric: expected one of {', '.join(COORD_METRICS)}, got {metric!r}.")


def _geo_radians(x: np.ndarray) -> np.ndarray:
    deg = np.trunc(x)
    return 3.141592 * (deg + 5.0 * (x - deg) / 3.0) / 180.0


def tsplib_weights(coords: np.ndarray, metric: str) -> np.ndarray:
    """The (n, n) int64 distance matrix of a coordinate metric (0 on the diagonal)."""
    pts = np.asarray(coords, np.float64)
    weights = edge_lengths(pts[:, None, :], pts[None, :, :], metric).astype(np.int64)
    np.fill_diagonal(weights, 0)
    return weights


def tsplib_length(
    coords: np.ndarray, tour: list[int] | np.ndarray, metric: str, weights: np.ndarray | None = None
) -> int | float:
    """Closed tour length in a TSPLIB metric: from `weights` when given (EXPLICIT), else from
    the coordinates. Raises ValueError unless `tour` is a permutation."""
    order = np.asarray(tour, dtype=np.int64)
    n = len(coords)
    if order.shape != (n,) or not np.array_equal(np.sort(order), np.arange(n)):
        raise ValueError(f"TSP tour: expected a permutation of 0..{n - 1}, got {order.tolist()}.")
    nxt = np.roll(order, -1)
    if weights is not None:
        total = np.asarray(weights)[order, nxt].sum()
    else:
        pts = np.asarray(coords, np.float64)
        total = edge_lengths(pts[order], pts[nxt], metric).sum()
    return int(total) if float(total).is_integer() else float(total)


def _explicit_weights(fmt: str, lines: list[tuple[int, str]], n: int, path: Path) -> np.ndarray:
    """The full (n, n) matrix of an EDGE_WEIGHT_SECTION in one of `EXPLICIT_FORMATS`."""
    if fmt not in EXPLICIT_FORMATS:
        raise ValueError(
            f"{path}: field EDGE_WEIGHT_FORMAT expected one of {', '.join(EXPLICIT_FORMATS)}, "
            f"got {fmt!r}."
        )
    try:
        values = np.array([float(t) for _, line in lines for t in line.split()])
    except ValueError as e:
        raise ValueError(f"{path}: field EDGE_WEIGHT_SECTION expected numbers.") from e
    if fmt == "FULL_MATRIX":
        cells = [(i, j) for i in range(n) for j in range(n)]
    else:
        diag = "DIAG" in fmt
        upper = fmt.startswith("UPPER")
        cells = [
            (i, j)
            for i in range(n)
            for j in (range(i if diag else i + 1, n) if upper else range(i + 1 if diag else i))
        ]
    if len(values) != len(cells):
        raise ValueError(
            f"{path}: field EDGE_WEIGHT_SECTION expected {len(cells)} numbers for {fmt} with "
            f"DIMENSION {n}, got {len(values)}."
        )
    weights = np.zeros((n, n))
    rows, cols = np.array(cells).T
    weights[rows, cols] = values
    if fmt != "FULL_MATRIX":
        weights[cols, rows] = values
    if (weights < 0).any() or not np.isfinite(weights).all():
        raise ValueError(f"{path}: field EDGE_WEIGHT_SECTION expected finite distances >= 0.")
    return weights.astype(np.int64) if (weights == np.round(weights)).all() else weights


def read_tsplib_tour(path: str | os.PathLike) -> np.ndarray:
    """The 0-based node order (int64) of a TSPLIB .tour / .opt.tour file's TOUR_SECTION."""
    path = Path(path)
    header, section, body = _split_tsplib(path)
    if "TYPE" in header and header["TYPE"].split()[:1] != ["TOUR"]:
        raise ValueError(f"{path}: field TYPE expected 'TOUR', got {header['TYPE']!r}.")
    if section != "TOUR_SECTION":
        raise ValueError(f"{path}: expected a TOUR_SECTION, found {section or 'none'}.")
    tour: list[int] = []
    terminated = False
    for lineno, line in body:
        if line.upper() == "EOF":
            break
        for token in line.split():
            try:
                node = int(token)
            except ValueError as e:
                raise ValueError(
                    f"{path}: line {lineno} of TOUR_SECTION expected integer node ids, "
                    f"got {token!r}."
                ) from e
            if node == -1:
                terminated = True
                break
            tour.append(node - 1)
        if terminated:
            break
    if not terminated:
        raise ValueError(f"{path}: field TOUR_SECTION expected a -1 terminator.")
    n = _dimension(header, path)
    n = len(tour) if n is None else n
    if len(tour) != n or sorted(tour) != list(range(n)):
        raise ValueError(
            f"{path}: field TOUR_SECTION expected a permutation of nodes 1..{n}, "
            f"got {len(tour)} ids."
        )
    return np.array(tour, dtype=np.int64)


def _load_npz(path: Path) -> tuple[np.ndarray, np.ndarray | None]:
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
    except ValueError as e:
        raise ValueError(f"{path}: expected plain numeric arrays without pickled objects.") from e
    field = "coords" if "coords" in arrays else "locs"  # locs: rl4co's TSP files
    if field not in arrays:
        raise ValueError(
            f"{path}: missing field 'coords' (or rl4co's 'locs'; expected an array [N, n, 2])."
        )
    coords = _check_coords(arrays[field], path, field)
    for field in ("reference_costs", "tour_lengths"):
        if field in arrays:
            return coords, check_refs(arrays[field], len(coords), path, field)
    return coords, None


def _load_pkl(path: Path) -> np.ndarray:
    with path.open("rb") as f:
        data = RestrictedUnpickler(f, path).load()
    try:
        coords = np.asarray(data, dtype=np.float64)
    except (ValueError, TypeError) as e:
        raise ValueError(
            f"{path}: field 'instances' expected a list of instances of [x, y] pairs "
            "or an array [N, n, 2]."
        ) from e
    return _check_coords(coords, path, "instances")


def _split_tsplib(path: Path) -> tuple[dict[str, str], str, list[tuple[int, str]]]:
    """Header `KEY : VALUE` pairs, the first section keyword, and the numbered lines after it."""
    lines = [(i + 1, line.strip()) for i, line in enumerate(path.read_text().splitlines())]
    lines = [(i, line) for i, line in lines if line]
    header: dict[str, str] = {}
    for k, (_, line) in enumerate(lines):
        key, _, value = (part.strip() for part in line.partition(":"))
        key = key.upper()
        if not value and (key == "EOF" or key.endswith("_SECTION")):
            return header, ("" if key == "EOF" else key), lines[k + 1 :]
        header[key] = value
    return header, "", []


def _tsplib_sections(path: Path) -> tuple[dict[str, str], dict[str, list[tuple[int, str]]]]:
    """Header `KEY : VALUE` pairs and every `*_SECTION`'s numbered lines, up to EOF."""
    lines = [(i + 1, line.strip()) for i, line in enumerate(path.read_text().splitlines())]
    header: dict[str, str] = {}
    sections: dict[str, list[tuple[int, str]]] = {}
    current: list[tuple[int, str]] | None = None
    for lineno, line in lines:
        if not line:
            continue
        key, _, value = (part.strip() for part in line.partition(":"))
        word = key.upper()
        if word == "EOF":
            break
        if word.endswith("_SECTION") and not value:
            current = sections.setdefault(word, [])
        elif current is not None and not word[:1].isalpha():
            current.append((lineno, line))
        elif current is None or ":" in line:
            header[word] = value
            current = None
        else:
            raise ValueError(f"{path}: line {lineno} expected a section keyword, got {line!r}.")
    return header, sections


def _dimension(header: dict[str, str], path: Path) -> int | None:
    """The header's DIMENSION as an int, None when absent."""
    if "DIMENSION" not in header:
        return None
    try:
        return int(header["DIMENSION"])
    except ValueError as e:
        raise ValueError(
            f"{path}: field DIMENSION expected an integer, got {header['DIMENSION']!r}."
        ) from e


def _as_array(instances: TSPInstances | np.ndarray) -> np.ndarray:
    if isinstance(instances, TSPInstances):
        return instances.coords.detach().cpu().numpy()
    return np.asarray(instances)


def _require_suffix(path: str | os.PathLike, suffix: str) -> Path:
    path = Path(path)
    if path.suffix.lower() != suffix:
        raise ValueError(f"{path}: expected a file name ending in {suffix}.")
    return path


def _check_coords(coords: np.ndarray, path: Path, field: str) -> np.ndarray:
    """`coords` as float64 [N, n, 2] with N >= 1, n >= 3 and finite values, else ValueError."""
    if coords.dtype.kind not in "iuf":
        raise ValueError(f"{path}: field '{field}' expected numbers, got dtype {coords.dtype}.")
    if coords.ndim != 3 or coords.shape[2] != 2 or coords.shape[0] == 0:
        raise ValueError(
            f"{path}: field '{field}' expected shape [N, n, 2] with N >= 1, got {coords.shape}."
        )
    if coords.shape[1] < 3:
        raise ValueError(
            f"{path}: field '{field}' expected at least 3 nodes per instance, "
            f"got {coords.shape[1]}."
        )
    if not np.isfinite(coords).all():
        raise ValueError(f"{path}: field '{field}' expected finite values, found NaN or inf.")
    return coords.astype(np.float64)


def read_dataset(path: str | os.PathLike) -> Dataset:
    """Any TSP file as a `Dataset`: .npz / .pkl sets, or a TSPLIB .tsp file in its own metric.

    A .tsp file gives one instance named by its NAME, with `metric` its EDGE_WEIGHT_TYPE,
    `weights` the (n, n) distances (coordinate metrics up to `MAX_WEIGHT_NODES` nodes) and as
    reference the length of `<name>.opt.tour` beside it in that metric, else a best-known
    table entry (`nco.datasets.best_known`).
    """
    path = Path(path)
    if path.suffix.lower() != ".tsp":
        instances, refs = load_tsp(path)
        source = None
        if refs is not None:
            source = path.name
            if path.suffix.lower() == ".npz":
                source = npz_reference_source(path) or source
        arrays = {"coords": instances.coords.numpy()}
        return Dataset("tsp", str(path), arrays, refs, source)
    lib = read_tsplib(path)
    arrays = {"coords": lib.coords[None]}
    if lib.weights is not None:
        arrays["weights"] = lib.weights[None]
    elif len(lib.coords) <= MAX_WEIGHT_NODES:
        arrays["weights"] = tsplib_weights(lib.coords, lib.edge_weight_type)[None]
    ref, source = None, None
    tour_file = path.with_name(path.name[: -len(path.suffix)] + ".opt.tour")
    if tour_file.is_file():
        tour = read_tsplib_tour(tour_file)
        if len(tour) != len(lib.coords):
            raise ValueError(
                f"{tour_file}: field TOUR_SECTION has {len(tour)} nodes, expected "
                f"{len(lib.coords)} (DIMENSION of {path.name})."
            )
        ref = tsplib_length(lib.coords, tour, lib.edge_weight_type, lib.weights)
        source = tour_file.name
    elif (known := best_known(path, lib.name)) is not None:
        ref, source = known
    refs = None if ref is None else np.array([float(ref)])
    return Dataset(
        "tsp", str(path), arrays, refs, source, names=[lib.name], metric=lib.edge_weight_type
    )


def metric_cost(instance: Mapping[str, np.ndarray], tour: list[int], metric: str) -> int | float:
    """The tour's length in a library metric (the file's `weights` when it has them)."""
    return tsplib_length(instance["coords"], tour, metric, instance.get("weights"))


def write_tsplib_tour(path: str | os.PathLike, tour: list[int] | np.ndarray, name: str) -> None:
    """Write a 0-based tour as a TSPLIB .tour file (1-based ids, -1 terminator)."""
    ids = "\n".join(str(int(i) + 1) for i in tour)
    Path(path).write_text(
        f"NAME : {name}\nTYPE : TOUR\nDIMENSION : {len(tour)}\nTOUR_SECTION\n{ids}\n-1\nEOF\n"
    )
