"""CVRP dataset files: the project's .npz, the shared reference .npz, Kool et al. pickles, LEHD
text files and CVRPLIB .vrp files.

Every reader validates what it returns (shapes, finite coordinates, integer demands in
0..capacity, at least one customer) and raises ValueError naming the file and the field.

Accepted layouts:

- `.npz`, project layout: `depot [N, 2]`, `locs [N, n, 2]`, `demands [N, n]` (integers),
  `capacity [N]`, optional `reference_costs [N]`, `reference_source` (str) and a solution per
  instance as `tour_node_idcs` / `tour_node_flags` (as below).
- `.npz`, shared reference layout: `nodes [N, n+1, 2]` (row 0 = depot), `demands [N, n+1]`
  (depot 0), `capacity [N]`, optional `tour_lengths [N]` (references), `tour_node_idcs [N, n]`
  (1-based customer order) and `tour_node_flags [N, n]` (1 = reached via the depot).
- `.pkl` / `.pickle`: Kool et al.'s list of `(depot, loc, demand, capacity)` tuples, read by a
  restricted unpickler (lists, numbers and numpy arrays only).
- `.txt`: LEHD's files, one instance per line of comma-separated tokens
  `depot,x,y,customer,x1,y1,...,capacity,C,demand,d1,...,dn[,cost,c][,node_flag,p1..pn,f1..fn]`.
  The demand list may start with the depot's 0 (n + 1 entries); `cost` gives the reference and
  `node_flag` the reference tour (customer order, then the via-depot flags).
- `.vrp`: CVRPLIB (via `vrplib.read_instance`), one instance with NODE_COORD_SECTION and a single
  depot; coordinates are kept as given (commands scale them into the unit square for policies).
  `read_dataset` gives it with its own metric (EDGE_WEIGHT_TYPE EUC_2D: nint, as PyVRP's
  `round_func="round"`; CEIL_2D, ATT, GEO; EXPLICIT matrices with coordinates), the integer
  `weights` for the solvers, and as reference the cost of `<name>.sol` beside it in that metric
  (else a best-known table entry, `nco.datasets.best_known`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
import vrplib

from nco.dataset import Dataset, best_known, npz_reference_source
from nco.problems.cvrp.generator import default_capacity
from nco.problems.cvrp.routes import tour_to_actions
from nco.problems.cvrp.types import CVRPInstances
from nco.safe_io import RestrictedUnpickler, check_refs

FIELDS = ("depot", "locs", "demands", "capacity")
MAX_WEIGHT_NODES = 3000  # coordinate metrics: no (n, n) matrix beyond this (solvers go Euclidean)
LEHD_MARKERS = ("depot", "customer", "capacity", "demand", "cost", "node_flag")


@dataclasses.dataclass
class _Raw:
    """Arrays read from a file, before validation."""

    depot: Any
    locs: Any
    demands: Any
    capacity: Any
    references: Any = None
    reference_field: str = "reference_costs"
    tour_nodes: Any = None
    tour_flags: Any = None
    name: str | None = None  # CVRPLIB NAME
    metric: str | None = None  # CVRPLIB EDGE_WEIGHT_TYPE
    weights: Any = None  # (n + 1, n + 1) distances, depot first


def load_cvrp(path: str | os.PathLike) -> tuple[CVRPInstances, np.ndarray | None]:
    """CVRP instances and optional per-instance reference costs from any supported file."""
    path = Path(path)
    raw = _read(path)
    instances = _check_instances(path, raw)
    refs = None
    if raw.references is not None:
        refs = check_refs(np.asarray(raw.references), len(instances), path, raw.reference_field)
    return instances, refs


def load_cvrp_solutions(path: str | os.PathLike) -> torch.Tensor:
    """The reference solutions stored in a file as env actions, Long (N, n).

    Only .npz files with `tour_node_idcs` and `tour_node_flags` and LEHD .txt files with
    `node_flag` store solutions; other files raise ValueError.
    """
    return load_cvrp_expert(path)[1]


def load_cvrp_expert(path: str | os.PathLike) -> tuple[CVRPInstances, torch.Tensor]:
    """Instances and their stored solutions as env actions (expert data for supervised training)."""
    path = Path(path)
    raw = _read(path)
    instances = _check_instances(path, raw)
    if raw.tour_nodes is None:
        raise ValueError(f"{path}: missing field 'tour_node_idcs' / 'node_flag' (no solutions).")
    b, n = instances.demands.shape
    nodes, flags = np.asarray(raw.tour_nodes), np.asarray(raw.tour_flags)
    for field, arr in (("tour_node_idcs", nodes), ("tour_node_flags", flags)):
        if arr.shape != (b, n) or arr.dtype.kind not in "iu":
            raise ValueError(
                f"{path}: field '{field}' expected integers of shape {(b, n)}, "
                f"got {arr.shape} of dtype {arr.dtype}."
            )
    if not (np.sort(nodes, axis=1) == np.arange(1, n + 1)).all():
        raise ValueError(
            f"{path}: field 'tour_node_idcs' expected a permutation of 1..{n} per row."
        )
    if not np.isin(flags, (0, 1)).all():
        raise ValueError(f"{path}: field 'tour_node_flags' expected values 0 or 1.")
    return instances, tour_to_actions(
        torch.from_numpy(nodes.astype(np.int64)), torch.from_numpy(flags.astype(np.int64))
    )


def save_cvrp_npz(
    path: str | os.PathLike,
    instances: CVRPInstances,
    reference_costs: np.ndarray | None = None,
    reference_source: str | None = None,
    solutions: torch.Tensor | None = None,
) -> None:
    """Write instances in the project's layout, with optional references (and their source)
    and optional complete solutions, given as env actions (N, n) and stored as
    `tour_node_idcs` / `tour_node_flags` like the shared reference files."""
    path = Path(path)
    if path.suffix.lower() != ".npz":
        raise ValueError(f"{path}: expected a file name ending in .npz.")
    arrays: dict[str, np.ndarray] = {
        "depot": instances.depot.detach().cpu().numpy().astype(np.float64),
        "locs": instances.locs.detach().cpu().numpy().astype(np.float64),
        "demands": instances.demands.detach().cpu().numpy().astype(np.int64),
        "capacity": instances.capacity.detach().cpu().numpy().astype(np.int64),
    }
    _check_instances(
        path, _Raw(arrays["depot"], arrays["locs"], arrays["demands"], arrays["capacity"])
    )
    if reference_costs is not None:
        arrays["reference_costs"] = check_refs(
            np.asarray(reference_costs), len(instances), path, "reference_costs"
        )
    if reference_source is not None:
        if reference_costs is None:
            raise ValueError(f"{path}: field 'reference_source' needs 'reference_costs'.")
        arrays["reference_source"] = np.array(str(reference_source))
    if solutions is not None:
        actions = solutions.detach().cpu().numpy()
        n = arrays["demands"].shape[1]
        if (
            actions.shape != arrays["demands"].shape
            or not (np.sort(actions // 2 + 1, axis=1) == np.arange(1, n + 1)).all()
        ):
            raise ValueError(
                f"{path}: field 'solutions' expected complete solutions, actions of shape "
                f"{arrays['demands'].shape} visiting every customer once."
            )
        arrays["tour_node_idcs"] = actions // 2 + 1
        arrays["tour_node_flags"] = (actions % 2).astype(np.int8)
        arrays["tour_node_flags"][:, 0] = 1
    np.savez(path, allow_pickle=False, **arrays)


def _read(path: Path) -> _Raw:
    """Dispatch on the file extension."""
    suffix = path.suffix.lower()
    readers = {
        ".npz": _read_npz,
        ".pkl": _read_pickle,
        ".pickle": _read_pickle,
        ".txt": _read_lehd,
        ".vrp": _read_cvrplib,
    }
    if suffix not in readers:
        raise ValueError(
            f"{path}: unknown extension {suffix!r}; expected one of {', '.join(readers)}."
        )
    return readers[suffix](path)


def _read_npz(path: Path) -> _Raw:
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
    except ValueError as e:
        raise ValueError(f"{path}: expected plain numeric arrays without pickled objects.") from e
    if "nodes" in arrays:
        _require(arrays, ("nodes", "demands", "capacity"), path)
        nodes, demands = arrays["nodes"], arrays["demands"]
        if nodes.ndim != 3 or nodes.shape[1] < 2 or demands.shape != nodes.shape[:2]:
            raise ValueError(
                f"{path}: fields 'nodes' [N, n+1, 2] and 'demands' [N, n+1] disagree or have "
                f"the wrong rank, got {nodes.shape} and {demands.shape}."
            )
        if (demands[:, 0] != 0).any():
            raise ValueError(f"{path}: field 'demands' expected 0 for the depot (column 0).")
        return _Raw(
            depot=nodes[:, 0],
            locs=nodes[:, 1:],
            demands=demands[:, 1:],
            capacity=arrays["capacity"],
            references=arrays.get("tour_lengths"),
            reference_field="tour_lengths",
            tour_nodes=arrays.get("tour_node_idcs"),
            tour_flags=arrays.get("tour_node_flags"),
        )
    if "demand" in arrays and "demands" not in arrays:
        arrays = _from_rl4co(arrays, path)
    _require(arrays, ("depot", "locs", "demands", "capacity"), path)
    return _Raw(
        depot=arrays["depot"],
        locs=arrays["locs"],
        demands=arrays["demands"],
        capacity=arrays["capacity"],
        references=arrays.get("reference_costs"),
        tour_nodes=arrays.get("tour_node_idcs"),
        tour_flags=arrays.get("tour_node_flags"),
    )


def _from_rl4co(arrays: dict[str, np.ndarray], path: Path) -> dict[str, np.ndarray]:
    """rl4co's CVRP fields (`demand`, `capacity` [N] / [N, 1] / absent) in this layout.

    rl4co stores integer demands with the absolute capacity, or demands divided by it (then
    the capacity is 1 or absent, and the standard Kool capacity of the size is used to restore
    the integers 1..9).
    """
    demand = np.asarray(arrays["demand"], dtype=np.float64)
    n = demand.shape[-1]
    cap = arrays.get("capacity")
    cap = (
        np.ones(len(demand))
        if cap is None
        else np.asarray(cap, np.float64).reshape(len(demand), -1)[:, 0]
    )
    if demand.max(initial=0) <= 1 and (cap <= 1).all():  # normalized by the capacity
        cap = np.full(len(demand), float(default_capacity(n)))
        demand = demand * cap[:, None]
    rounded = np.rint(demand)
    if not np.allclose(demand, rounded, atol=1e-4):
        raise ValueError(f"{path}: field 'demand' does not give integer demands (rl4co layout).")
    return {
        **{k: v for k, v in arrays.items() if k not in ("demand", "capacity")},
        "demands": rounded.astype(np.int64),
        "capacity": np.rint(cap).astype(np.int64),
    }


def _read_pickle(path: Path) -> _Raw:
    with path.open("rb") as f:
        data = RestrictedUnpickler(f, path).load()
    if not isinstance(data, (list, tuple)) or not data:
        raise ValueError(f"{path}: expected a non-empty list of (depot, loc, demand, capacity).")
    if not all(isinstance(item, (list, tuple)) and len(item) == 4 for item in data):
        raise ValueError(f"{path}: expected every entry to be (depot, loc, demand, capacity).")
    columns = list(zip(*data, strict=True))
    try:
        depot, locs, demands, capacity = (np.asarray(col, dtype=np.float64) for col in columns)
    except (ValueError, TypeError) as e:
        raise ValueError(
            f"{path}: expected numeric (depot, loc, demand, capacity) of one size per file."
        ) from e
    return _Raw(depot=depot, locs=locs, demands=demands, capacity=capacity)


def _read_lehd(path: Path) -> _Raw:
    rows: list[dict[str, list[float]]] = []
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        if line.strip():
            rows.append(_parse_lehd_line(line, lineno, path))
    if not rows:
        raise ValueError(f"{path}: expected at least one instance line.")
    for key in ("cost", "node_flag"):
        if len({key in row for row in rows}) > 1:
            raise ValueError(f"{path}: field '{key}' present on some lines but not all.")
    sizes = {len(row["customer"]) // 2 for row in rows}
    if len(sizes) > 1:
        raise ValueError(f"{path}: field 'customer' expected one size per file, got {sizes}.")
    n = sizes.pop()
    demands = []
    for lineno, row in enumerate(rows, start=1):
        dem = row["demand"]
        if len(dem) == n + 1 and dem[0] == 0:
            dem = dem[1:]
        if len(dem) != n:
            raise ValueError(
                f"{path}: field 'demand' on instance {lineno} expected {n} values, got {len(dem)}."
            )
        demands.append(dem)
    raw = _Raw(
        depot=np.array([row["depot"] for row in rows]),
        locs=np.array([row["customer"] for row in rows]).reshape(len(rows), n, 2),
        demands=np.array(demands),
        capacity=np.array([row["capacity"][0] for row in rows]),
        references=np.array([row["cost"][0] for row in rows]) if "cost" in rows[0] else None,
        reference_field="cost",
    )
    if "node_flag" in rows[0]:
        flags = np.array([row["node_flag"] for row in rows])
        if flags.shape != (len(rows), 2 * n) or not (flags == np.round(flags)).all():
            raise ValueError(f"{path}: field 'node_flag' expected {2 * n} integers per line.")
        flags = flags.astype(np.int64)
        raw.tour_nodes, raw.tour_flags = flags[:, :n], flags[:, n:]
    return raw


def _parse_lehd_line(line: str, lineno: int, path: Path) -> dict[str, list[float]]:
    """The numeric values after each marker of one LEHD line."""
    tokens = [t.strip() for t in line.strip().split(",")]
    marks = [i for i, t in enumerate(tokens) if t in LEHD_MARKERS]
    if not marks or marks[0] != 0:
        raise ValueError(f"{path}: line {lineno} expected to start with a marker such as 'depot'.")
    row: dict[str, list[float]] = {}
    for i, j in zip(marks, [*marks[1:], len(tokens)], strict=True):
        try:
            row[tokens[i]] = [float(t) for t in tokens[i + 1 : j]]
        except ValueError as e:
            raise ValueError(
                f"{path}: line {lineno} field '{tokens[i]}' expected numbers after it."
            ) from e
    expected = {"depot": 2, "capacity": 1, "cost": 1}
    for key in ("depot", "customer", "capacity", "demand"):
        if key not in row:
            raise ValueError(f"{path}: line {lineno} missing field '{key}'.")
    for key, size in expected.items():
        if key in row and len(row[key]) != size:
            raise ValueError(
                f"{path}: line {lineno} field '{key}' expected {size} values, got {len(row[key])}."
            )
    if len(row["customer"]) % 2 or not row["customer"]:
        raise ValueError(f"{path}: line {lineno} field 'customer' expected x, y pairs.")
    return row


def _read_cvrplib(path: Path) -> _Raw:
    from nco.problems.tsp.io import COORD_METRICS, tsplib_weights

    try:
        text = path.read_text()
    except OSError as e:
        raise ValueError(f"{path}: cannot read the file ({e}).") from e
    for line in text.splitlines():
        word = line.strip().split(":")[0].strip().upper()
        if word.endswith("_SECTION") and word not in CVRPLIB_SECTIONS:
            raise ValueError(
                f"{path}: section {word} is not supported; expected only "
                f"{', '.join(CVRPLIB_SECTIONS)}."
            )
    try:
        data = vrplib.read_instance(path, compute_edge_weights=False)
    except Exception as e:  # vrplib raises assorted errors on malformed files
        raise ValueError(f"{path}: not a readable CVRPLIB instance ({e}).") from e
    for key in ("node_coord", "demand", "capacity"):
        if key not in data:
            raise ValueError(f"{path}: missing field '{key.upper()}' (CVRPLIB section).")
    metric = str(data.get("edge_weight_type", "EUC_2D"))
    if metric not in (*COORD_METRICS, "EXPLICIT"):
        raise ValueError(
            f"{path}: field EDGE_WEIGHT_TYPE expected one of {', '.join(COORD_METRICS)}, "
            f"EXPLICIT; got {metric!r}."
        )
    depots = np.atleast_1d(np.asarray(data.get("depot", [0])))
    if depots.size != 1:
        raise ValueError(f"{path}: field 'DEPOT_SECTION' expected one depot, got {depots.size}.")
    coords = np.asarray(data["node_coord"], dtype=np.float64)
    demand = np.asarray(data["demand"], dtype=np.float64)
    if coords.ndim != 2 or demand.shape != coords.shape[:1]:
        raise ValueError(
            f"{path}: fields 'NODE_COORD_SECTION' and 'DEMAND_SECTION' disagree, "
            f"got {coords.shape} and {demand.shape}."
        )
    d = int(depots[0])
    if not 0 <= d < len(coords):
        raise ValueError(f"{path}: field 'DEPOT_SECTION' names node {d + 1}, not in the file.")
    customers = np.delete(np.arange(len(coords)), d)
    order = np.concatenate([[d], customers])  # depot first, as the env numbers nodes
    weights = None
    if metric == "EXPLICIT":
        if "edge_weight" not in data:
            raise ValueError(f"{path}: EDGE_WEIGHT_TYPE EXPLICIT expected an EDGE_WEIGHT_SECTION.")
        full = np.asarray(data["edge_weight"], dtype=np.float64)
        if full.shape != (len(coords), len(coords)):
            raise ValueError(
                f"{path}: field EDGE_WEIGHT_SECTION expected a {len(coords)}x{len(coords)} "
                f"matrix (vrplib reads FULL_MATRIX and LOWER_ROW), got {full.shape}."
            )
        weights = full[np.ix_(order, order)]
        if (weights == np.round(weights)).all():
            weights = weights.astype(np.int64)
    elif len(coords) <= MAX_WEIGHT_NODES:
        weights = tsplib_weights(coords[order], metric)
    return _Raw(
        depot=coords[d][None],
        locs=coords[customers][None],
        demands=demand[customers][None],
        capacity=np.array([float(data["capacity"])]),
        name=str(data.get("name", path.stem)),
        metric=metric,
        weights=None if weights is None else weights[None],
    )


CVRPLIB_SECTIONS = (
    "NODE_COORD_SECTION",
    "DEMAND_SECTION",
    "DEPOT_SECTION",
    "EDGE_WEIGHT_SECTION",
    "DISPLAY_DATA_SECTION",
)


def read_dataset(path: str | os.PathLike) -> Dataset:
    """Any CVRP file as a `Dataset`; a CVRPLIB .vrp file in its own metric (module docstring)."""
    path = Path(path)
    raw = _read(path)
    instances = _check_instances(path, raw)
    arrays = {f: getattr(instances, f).numpy() for f in FIELDS}
    refs, source = None, None
    if raw.references is not None:
        refs = check_refs(np.asarray(raw.references), len(instances), path, raw.reference_field)
        source = path.name
        if path.suffix.lower() == ".npz":
            source = npz_reference_source(path) or source
    if raw.metric is None:
        return Dataset("cvrp", str(path), arrays, refs, source)
    if raw.weights is not None:
        arrays["weights"] = raw.weights
    instance = {k: v[0] for k, v in arrays.items()}
    sol_file = path.with_suffix(".sol")
    if sol_file.is_file():
        refs, source = np.array([_solution_cost(sol_file, instance, raw.metric)]), sol_file.name
    elif (known := best_known(path, raw.name or path.stem)) is not None:
        refs, source = np.array([known[0]]), known[1]
    return Dataset(
        "cvrp", str(path), arrays, refs, source, names=[raw.name or path.stem], metric=raw.metric
    )


def _solution_cost(sol_file: Path, instance: dict[str, np.ndarray], metric: str) -> float:
    """The cost of a CVRPLIB .sol file's routes in `metric`, checked for feasibility."""
    from nco.problems.cvrp.solvers import check_routes

    try:
        sol = vrplib.read_solution(str(sol_file))
    except Exception as e:
        raise ValueError(f"{sol_file}: not a readable CVRPLIB solution ({e}).") from e
    routes = sol.get("routes")
    if not routes:
        raise ValueError(f"{sol_file}: field 'Route #k' expected at least one route.")
    routes = [[int(c) for c in route] for route in routes]
    try:
        check_routes(np.asarray(instance["demands"]), int(instance["capacity"]), routes)
    except ValueError as e:
        raise ValueError(
            f"{sol_file}: field 'Route #k' is not a solution of the instance: {e}"
        ) from e
    cost = metric_cost(instance, routes, metric)
    stated = sol.get("cost")
    if stated is not None and abs(float(stated) - cost) > 1e-6 * max(1.0, abs(cost)):
        raise ValueError(
            f"{sol_file}: field 'Cost' says {stated} but its routes cost {cost} in {metric}."
        )
    return float(cost)


def metric_cost(instance: Mapping[str, np.ndarray], routes: list[list[int]], metric: str) -> float:
    """Total route length in a library metric (the file's `weights` when it has them)."""
    from nco.problems.tsp.io import edge_lengths

    weights = instance.get("weights")
    nodes = np.vstack([np.reshape(instance["depot"], (1, 2)), instance["locs"]])
    total = 0.0
    for route in routes:
        path = np.array([0, *route, 0])
        if weights is not None:
            total += float(np.asarray(weights)[path[:-1], path[1:]].sum())
        else:
            total += float(edge_lengths(nodes[path[:-1]], nodes[path[1:]], metric).sum())
    return int(total) if total.is_integer() else total


def _require(arrays: dict[str, np.ndarray], keys: tuple[str, ...], path: Path) -> None:
    for key in keys:
        if key not in arrays:
            raise ValueError(f"{path}: missing field '{key}'.")


def _check_instances(path: Path, raw: _Raw) -> CVRPInstances:
    """Validated CVRPInstances from raw arrays, else ValueError naming the file and field."""
    depot, locs = _numeric(raw.depot, path, "depot"), _numeric(raw.locs, path, "locs")
    demands, capacity = (
        _numeric(raw.demands, path, "demands"),
        _numeric(raw.capacity, path, "capacity"),
    )
    if depot.ndim != 2 or depot.shape[1] != 2 or depot.shape[0] == 0:
        raise ValueError(
            f"{path}: field 'depot' expected shape [N, 2] with N >= 1, got {depot.shape}."
        )
    num = depot.shape[0]
    if locs.ndim != 3 or locs.shape[0] != num or locs.shape[2] != 2:
        raise ValueError(f"{path}: field 'locs' expected shape [{num}, n, 2], got {locs.shape}.")
    n = locs.shape[1]
    if n < 1:
        raise ValueError(f"{path}: field 'locs' expected at least one customer, got n = 0.")
    if demands.shape != (num, n):
        raise ValueError(
            f"{path}: field 'demands' expected shape [{num}, {n}], got {demands.shape}."
        )
    if capacity.shape != (num,):
        raise ValueError(f"{path}: field 'capacity' expected shape [{num}], got {capacity.shape}.")
    for field, arr in (
        ("depot", depot),
        ("locs", locs),
        ("demands", demands),
        ("capacity", capacity),
    ):
        if not np.isfinite(arr).all():
            raise ValueError(f"{path}: field '{field}' expected finite values, found NaN or inf.")
    for field, arr in (("demands", demands), ("capacity", capacity)):
        if not (arr == np.round(arr)).all():
            raise ValueError(f"{path}: field '{field}' expected integer values.")
    if (demands < 0).any():
        raise ValueError(f"{path}: field 'demands' expected non-negative integers.")
    if (capacity <= 0).any():
        raise ValueError(f"{path}: field 'capacity' expected positive integers.")
    over = demands > capacity[:, None]
    if over.any():
        i, j = np.argwhere(over)[0]
        raise ValueError(
            f"{path}: field 'demands' expected values <= capacity, but instance {i} customer "
            f"{j + 1} has demand {demands[i, j]:g} > {capacity[i]:g}."
        )
    return CVRPInstances(
        depot=torch.from_numpy(depot.astype(np.float64)),
        locs=torch.from_numpy(locs.astype(np.float64)),
        demands=torch.from_numpy(demands.astype(np.int64)),
        capacity=torch.from_numpy(capacity.astype(np.int64)),
    )


def _numeric(value: Any, path: Path, field: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"{path}: field '{field}' expected numbers, got dtype {arr.dtype}.")
    return arr
