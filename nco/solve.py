"""`nco-solve`: solve one instance file with a checkpoint or a classical solver; JSON and PNG out.

    nco-solve instance=berlin52.tsp checkpoint=best.pt search=beam search.beam_width=16 out=b.json
    nco-solve instance=X-n101-k25.vrp solver=hgs time_limit=10 out=x.json
    nco-solve instance=ta01.txt solver=cpsat time_limit=60 out=ta01.json
    python -m nco.solve instance=my.txt problem=jssp checkpoint=jssp.pt

Routing instances with a coordinate outside the unit square are scaled into it (one offset, one
scale for both axes; `Dataset.unit_square`, the same mapping nco-eval applies)
before any policy or solver sees them, since policies are trained there and the solvers' integer
scaling assumes it; costs are recomputed from the original coordinates. The solution JSON holds
the problem, instance name, method, cost and the tour / routes / start times; the plot (tour,
routes or Gantt chart) is written beside it with the suffix .png.
"""

from __future__ import annotations

import importlib
import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import hydra
import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from nco import checkpoint
from nco.baseline import get_solver, problem_name
from nco.datasets import COORD_FIELDS, PROBLEMS, Dataset, load_dataset
from nco.decode import decode
from nco.evaluate import (
    check_checkpoint,
    check_device,
    configure_policy,
    describe_search,
    num_nodes,
    search_config,
    to_instances,
)
from nco.paths import CONFIG_DIR

SOLUTION_FIELDS = {"tsp": "tour", "cvrp": "routes", "jssp": "start_times"}
SUFFIX_PROBLEMS = {".tsp": "tsp", ".vrp": "cvrp"}
EDGE_WEIGHT_TYPES = ("EUC_2D", "CEIL_2D", "ATT", "GEO")


def solver_problem(solver: str) -> str | None:
    """The one problem whose `SOLVERS` has `solver`, None when several or none have it."""
    owners = []
    for problem in PROBLEMS:
        module = importlib.import_module(f"problems.{problem}.solvers")
        if solver in module.SOLVERS:
            owners.append(problem)
    return owners[0] if len(owners) == 1 else None


def load_instance_file(
    file: Path, hints: dict[str, str], solver: str | None
) -> tuple[Dataset, str]:
    """Read `file` and check its problem against `hints` ({source: problem}).

    The reader is picked by the suffix (.tsp, .vrp, .npz by its fields), else by the hints, else
    by the solver when only one problem has it. Returns the dataset and its problem.
    """
    if len(set(hints.values())) > 1:
        said = ", ".join(f"{k} says {v}" for k, v in hints.items())
        raise ValueError(f"nco-solve: conflicting problems ({said}).")
    suffix = file.suffix.lower()
    if suffix == ".npz":
        dataset = load_dataset(file)
    else:
        reader = SUFFIX_PROBLEMS.get(suffix) or next(iter(hints.values()), None)
        reader = reader or (solver_problem(solver) if solver else None)
        if reader is None:
            raise ValueError(
                f"nco-solve: cannot tell the problem of {file}; pass problem=tsp, cvrp or jssp."
            )
        dataset = load_dataset(file, reader)
    for source, problem in hints.items():
        if problem != dataset.problem:
            raise ValueError(
                f"nco-solve: {file} holds {dataset.problem} instances but {source} says {problem}."
            )
    return dataset, dataset.problem


def normalize(dataset: Dataset, index: int) -> tuple[dict[str, np.ndarray], list[float], float]:
    """Instance `index` as the policy and solvers see it (`Dataset.unit_square`, the same
    mapping nco-eval applies), with the offset and scale back to the file's coordinates."""
    scaled, scales = dataset.unit_square()
    fields = COORD_FIELDS.get(dataset.problem, ())
    original = dataset.instance(index)
    if not fields or scales[index] == 1:
        return scaled.instance(index), [0.0, 0.0], 1.0
    pts = np.concatenate([np.asarray(original[f], np.float64).reshape(-1, 2) for f in fields])
    return scaled.instance(index), pts.min(axis=0).tolist(), float(scales[index])


def actions_to_solution(problem: str, env: Any, instances: Any, actions: list[int]) -> list:
    """A decoded action sequence in the natural form: tour, routes or start times (J, M)."""
    if problem == "tsp":
        return [0, *actions]
    if problem == "cvrp":
        from problems.cvrp.routes import actions_to_routes

        return actions_to_routes(actions)
    start = env.schedule(instances, torch.tensor([actions], dtype=torch.long))
    return start[0].tolist()


def score(problem: str, instance: dict[str, np.ndarray], solution: list) -> float:
    """The solution's cost on `instance`, checked by the problem's independent validators."""
    if problem == "tsp":
        from problems.tsp.solvers import tour_length

        return tour_length(np.asarray(instance["coords"], np.float64), solution)
    if problem == "cvrp":
        from problems.cvrp.routes import routes_cost
        from problems.cvrp.solvers import check_routes

        check_routes(np.asarray(instance["demands"]), int(instance["capacity"]), solution)
        return routes_cost(instance["depot"], instance["locs"], solution)
    from problems.jssp.schedule import check_schedule

    return check_schedule(instance["durations"], instance["machines"], np.asarray(solution))


def plot_solution(
    problem: str, instance: dict[str, np.ndarray], solution: list, path: Path, title: str
) -> None:
    """Write the tour, the routes or the Gantt chart as a PNG."""
    if problem == "tsp":
        from problems.tsp.plot import plot_tour

        plot_tour(instance["coords"], solution, path, title)
    elif problem == "cvrp":
        from problems.cvrp.plot import plot_routes

        plot_routes(instance["depot"], instance["locs"], solution, path, title)
    else:
        from problems.jssp.plot import plot_gantt

        plot_gantt(instance["durations"], instance["machines"], np.asarray(solution), path, title)


def tsplib_length(coords: np.ndarray, tour: Sequence[int], edge_weight_type: str) -> int:
    """Tour length under TSPLIB's integer distances (EUC_2D, CEIL_2D, ATT or GEO)."""
    pts = np.asarray(coords, np.float64)[np.asarray(tour, np.int64)]
    a, b = pts, np.roll(pts, -1, axis=0)
    if edge_weight_type == "EUC_2D":
        d = np.floor(np.linalg.norm(a - b, axis=1) + 0.5)
    elif edge_weight_type == "CEIL_2D":
        d = np.ceil(np.linalg.norm(a - b, axis=1))
    elif edge_weight_type == "ATT":
        r = np.sqrt(((a - b) ** 2).sum(1) / 10.0)
        t = np.floor(r + 0.5)
        d = np.where(t < r, t + 1, t)
    elif edge_weight_type == "GEO":
        deg = np.trunc(pts)
        rad = np.pi * (deg + 5.0 * (pts - deg) / 3.0) / 180.0  # 3.141592 in TSPLIB's C code
        lat, lon = rad[:, 0], rad[:, 1]
        lat2, lon2 = np.roll(lat, -1), np.roll(lon, -1)
        q1, q2, q3 = np.cos(lon - lon2), np.cos(lat - lat2), np.cos(lat + lat2)
        d = np.trunc(6378.388 * np.arccos(0.5 * ((1 + q1) * q2 - (1 - q1) * q3)) + 1.0)
    else:
        raise ValueError(f"tsplib_length: unknown EDGE_WEIGHT_TYPE {edge_weight_type!r}.")
    return int(d.sum())


def library_header(file: Path) -> tuple[str | None, str | None]:
    """NAME and EDGE_WEIGHT_TYPE of a TSPLIB .tsp or CVRPLIB .vrp file; (None, None) otherwise."""
    suffix = file.suffix.lower()
    if suffix == ".tsp":
        from problems.tsp.io import read_tsplib

        tsplib = read_tsplib(file)
        return tsplib.name, tsplib.edge_weight_type
    if suffix == ".vrp":
        import vrplib

        header = vrplib.read_instance(file, compute_edge_weights=False)
        return header.get("name"), header.get("edge_weight_type")
    return None, None


def rounded_cost(
    problem: str, instance: dict[str, np.ndarray], solution: list, edge_weight_type: str
) -> int:
    """The cost under the library's integer distances (TSPLIB / CVRPLIB convention)."""
    if problem == "tsp":
        return tsplib_length(instance["coords"], solution, edge_weight_type)
    nodes = np.vstack([np.reshape(instance["depot"], (1, 2)), instance["locs"]])
    return sum(tsplib_length(nodes, [0, *route], edge_weight_type) for route in solution)


def solve_with_checkpoint(
    cfg: DictConfig, loaded: checkpoint.Loaded, problem: str, scaled: dict[str, np.ndarray]
) -> tuple[list, str, dict[str, Any]]:
    """Decode one (scaled) instance with the checkpoint's policy and `cfg.search`."""
    search = search_config(OmegaConf.to_container(cfg.search, resolve=True))
    arrays = {k: np.asarray(v)[None] for k, v in scaled.items()}
    instances = to_instances(loaded.env, arrays, str(cfg.instance))
    settings = configure_policy(
        loaded.policy,
        problem,
        num_nodes(problem, instances),
        cfg.get("precision"),
        cfg.get("knn"),
        "nco-solve",
    )
    generator = torch.Generator().manual_seed(int(cfg.seed))
    best = decode(loaded.policy, loaded.env, instances, {**search, "batch_size": None}, generator)
    actions = [a for a in best.best().actions[0].tolist() if a >= 0]
    solution = actions_to_solution(problem, loaded.env, instances, actions)
    method = f"{Path(str(cfg.checkpoint)).name} {describe_search(search)}"
    return solution, method, {"search": search, **settings}


def run(cfg: DictConfig) -> dict[str, Any]:
    """Solve `cfg.instance`; write the solution JSON and the PNG; return the JSON object."""
    if not cfg.get("instance"):
        raise ValueError("nco-solve: instance= is required (a .tsp, .vrp, JSSP text or .npz file).")
    file = Path(str(cfg.instance))
    if not file.is_file():
        raise ValueError(f"nco-solve: instance file {file} not found.")
    if bool(cfg.get("checkpoint")) == bool(cfg.get("solver")):
        raise ValueError("nco-solve: pass exactly one of checkpoint=<file> or solver=<name>.")
    hints: dict[str, str] = {}
    if cfg.get("problem"):
        hints["problem="] = problem_name(cfg.problem)
    loaded = None
    if cfg.get("checkpoint"):
        path = check_checkpoint(cfg.checkpoint, "nco-solve")
        loaded = checkpoint.load(path, check_device(str(cfg.device), "nco-solve"))
        hints["the checkpoint"] = problem_name(OmegaConf.create(loaded.problem))
    dataset, problem = load_instance_file(file, hints, cfg.get("solver"))
    index = int(cfg.index)
    if not 0 <= index < len(dataset):
        raise ValueError(f"nco-solve: index={index} but {file} holds {len(dataset)} instances.")
    original = dataset.instance(index)
    scaled, offset, scale = normalize(dataset, index)
    extra: dict[str, Any]
    start = time.perf_counter()
    if loaded is not None:
        solution, method, extra = solve_with_checkpoint(cfg, loaded, problem, scaled)
    else:
        if float(cfg.time_limit) <= 0:
            raise ValueError(f"nco-solve: expected time_limit > 0, got {cfg.time_limit}.")
        result = get_solver(problem, str(cfg.solver))(scaled, float(cfg.time_limit), int(cfg.seed))
        if not math.isfinite(result.cost):
            raise RuntimeError(
                f"nco-solve: {cfg.solver} found no solution (status {result.status}); "
                "raise time_limit."
            )
        solution, method = result.solution, str(cfg.solver)
        extra = {
            "time_limit": float(cfg.time_limit),
            "optimal": result.optimal,
            "bound": None if result.bound is None else result.bound * scale,
            "status": result.status,
        }
    elapsed = time.perf_counter() - start
    cost = score(problem, original, solution)
    header_name, weight_type = library_header(file)
    name = _instance_name(file, dataset, index, header_name)
    out = Path(str(cfg.out)) if cfg.get("out") else Path(f"{file.stem}.solution.json")
    png = out.with_suffix(".png")
    payload: dict[str, Any] = {
        "problem": problem,
        "instance": name,
        "file": str(file),
        "index": index,
        "method": method,
        "cost": cost,
        SOLUTION_FIELDS[problem]: solution,
        "time_s": elapsed,
        "seed": int(cfg.seed),
        **extra,
    }
    if problem in COORD_FIELDS:
        payload["coordinate_transform"] = {"offset": offset, "scale": scale}
    if weight_type in EDGE_WEIGHT_TYPES:  # the file's own metric first, as nco-eval reports it
        payload["euclidean_cost"] = cost
        payload["cost"] = rounded_cost(problem, original, solution, weight_type)
        payload["edge_weight_type"] = weight_type
    if dataset.references is not None and np.isfinite(dataset.references[index]):
        ref = float(dataset.references[index])
        payload["reference"] = ref
        payload["gap"] = (cost - ref) / ref
    if cfg.get("plot", True):
        plot_solution(problem, original, solution, png, f"{name}: {method}, cost {cost:.6g}")
        payload["plot"] = str(png)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=1, allow_nan=False) + "\n")
    print(f"{method} on {name} ({problem}): cost {cost:.6f} in {elapsed:.2f} s")
    print(f"solution written to {out}" + (f", plot to {png}" if "plot" in payload else ""))
    return payload


def _instance_name(file: Path, dataset: Dataset, index: int, header_name: str | None) -> str:
    """The instance's name: from the dataset, the file's NAME, or the file stem (with #index)."""
    if dataset.names is not None:
        return dataset.names[index]
    if header_name:
        return str(header_name)
    return file.stem if len(dataset) == 1 else f"{file.stem}#{index}"


@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="solve")
def main(cfg: DictConfig) -> None:
    """Console entry point `nco-solve` (Hydra key=value overrides)."""
    run(cfg)


if __name__ == "__main__":
    main()
