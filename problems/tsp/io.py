"""TSP dataset files: the project's .npz, Kool et al. pickles, and TSPLIB .tsp / .opt.tour.

Every reader validates what it returns (shape [N, n, 2], at least 3 nodes, finite values) and
raises ValueError naming the file and the field. Pickles go through a restricted unpickler that
only rebuilds lists, numbers and numpy arrays, so a hostile file cannot run code.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
from pathlib import Path

import numpy as np
import torch

from nco.safe_io import RestrictedUnpickler, check_refs
from problems.tsp.types import TSPInstances

EDGE_WEIGHT_TYPES = ("EUC_2D", "CEIL_2D", "GEO", "ATT")


@dataclasses.dataclass(frozen=True)
class TSPLIBInstance:
    """One TSPLIB instance: its NAME, EDGE_WEIGHT_TYPE and coordinates exactly as given.

    Coordinates are not converted: GEO stays in DDD.MM degrees, ATT in its pseudo-Euclidean units.
    """

    name: str
    edge_weight_type: str
    coords: np.ndarray  # (n, 2) float64, node i of the file is row i - 1


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
    np.savez(path, **arrays)


def save_tsp_pkl(path: str | os.PathLike, instances: TSPInstances | np.ndarray) -> None:
    """Write instances as a Kool et al. pickle: a list of instances, each a list of [x, y]."""
    path = _require_suffix(path, ".pkl")
    coords = _check_coords(_as_array(instances), path, "instances")
    with path.open("wb") as f:
        pickle.dump(coords.tolist(), f, protocol=pickle.HIGHEST_PROTOCOL)


def read_tsplib(path: str | os.PathLike) -> TSPLIBInstance:
    """Parse a TSPLIB .tsp file with TYPE TSP and a NODE_COORD_SECTION."""
    path = Path(path)
    header, section, body = _split_tsplib(path)
    kind = header.get("TYPE", "").split()
    if kind[:1] != ["TSP"]:
        raise ValueError(f"{path}: field TYPE expected 'TSP', got {header.get('TYPE')!r}.")
    weight_type = header.get("EDGE_WEIGHT_TYPE", "")
    if weight_type not in EDGE_WEIGHT_TYPES:
        raise ValueError(
            f"{path}: field EDGE_WEIGHT_TYPE expected one of {', '.join(EDGE_WEIGHT_TYPES)}, "
            f"got {weight_type!r}."
        )
    dimension = _dimension(header, path)
    if dimension is None:
        raise ValueError(f"{path}: missing field DIMENSION (expected a node count).")
    if dimension < 3:
        raise ValueError(f"{path}: field DIMENSION expected at least 3 nodes, got {dimension}.")
    if section != "NODE_COORD_SECTION":
        raise ValueError(f"{path}: expected a NODE_COORD_SECTION, found {section or 'none'}.")
    nodes: dict[int, tuple[float, float]] = {}
    for lineno, line in body:
        tokens = line.split()
        if tokens[0][0].isalpha():  # EOF or the next section
            break
        try:
            node, x, y = int(tokens[0]), float(tokens[1]), float(tokens[2])
        except (ValueError, IndexError) as e:
            raise ValueError(
                f"{path}: line {lineno} of NODE_COORD_SECTION expected 'id x y', got {line!r}."
            ) from e
        if len(tokens) != 3 or node in nodes:
            raise ValueError(
                f"{path}: line {lineno} of NODE_COORD_SECTION expected one new 'id x y', "
                f"got {line!r}."
            )
        nodes[node] = (x, y)
    if len(nodes) != dimension:
        raise ValueError(
            f"{path}: field DIMENSION is {dimension} but NODE_COORD_SECTION has {len(nodes)} nodes."
        )
    if set(nodes) != set(range(1, dimension + 1)):
        raise ValueError(f"{path}: field NODE_COORD_SECTION expected node ids 1..{dimension}.")
    coords = np.array([nodes[i] for i in range(1, dimension + 1)], dtype=np.float64)
    coords = _check_coords(coords[None], path, "NODE_COORD_SECTION")[0]
    name = header.get("NAME", path.name.split(".")[0])
    return TSPLIBInstance(name=name, edge_weight_type=weight_type, coords=coords)


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
