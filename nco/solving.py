"""`nco-solve`'s work: one instance file by a checkpoint or a classical solver; JSON, PNG.

    nco-solve instance=berlin52.tsp checkpoint=best.pt search=beam search.beam_width=16 out=b.json
    nco-solve instance=X-n101-k25.vrp solver=hgs time_limit=10 out=x.json
    nco-solve instance=ta01.txt solver=cpsat time_limit=60 out=ta01.json
    python -m nco.cli.solve instance=my.txt problem=jssp checkpoint=jssp.pt

Routing instances with a coordinate outside the unit square are scaled into it (one offset, one
scale for both axes; `Dataset.unit_square`, the same mapping nco-eval applies)
before any policy or solver sees them, since policies are trained there and the solvers' integer
scaling assumes it; costs are recomputed from the original coordinates. A TSPLIB / CVRPLIB
file's cost is in its own metric (EUC_2D, CEIL_2D, ATT, GEO, EXPLICIT), which the solvers
optimise (they get the file's distance matrix `weights`), with the Euclidean length beside it.
Everything problem-specific comes from the problem's descriptor (`nco.registry.get_problem`).
The solution JSON holds the problem, instance name, method, cost and the tour / routes / start
times; the plot (tour, routes or Gantt chart) is written beside it with the suffix .png.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from nco import checkpoint
from nco.datasets import Dataset, load_dataset
from nco.decode import decode
from nco.inference import (
    check_checkpoint,
    check_device,
    configure_policy,
    describe_search,
    search_config,
    to_instances,
)
from nco.problem import Problem
from nco.registry import get_problem, problem_name, problem_names, problem_of_env
from nco.scoring import score


def solver_problem(solver: str) -> str | None:
    """The one problem whose solvers include `solver`, None when several or none have it."""
    owners = [name for name in problem_names() if solver in get_problem(name).solvers()]
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
    try:
        dataset = load_dataset(file)
    except ValueError as err:
        if "pass problem=" not in str(err):
            raise
        reader = next(iter(hints.values()), None) or (solver_problem(solver) if solver else None)
        if reader is None:
            raise ValueError(
                f"nco-solve: cannot tell the problem of {file}; pass problem= (one of "
                f"{', '.join(p for p in problem_names() if get_problem(p).read)})."
            ) from err
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
    fields = get_problem(dataset.problem).coord_fields
    scaled, scales = dataset.unit_square(fields)
    original = dataset.instance(index)
    if not fields or scales[index] == 1:
        return scaled.instance(index), [0.0, 0.0], 1.0
    pts = np.concatenate([np.asarray(original[f], np.float64).reshape(-1, 2) for f in fields])
    return scaled.instance(index), pts.min(axis=0).tolist(), float(scales[index])


def solve_with_checkpoint(
    cfg: DictConfig, loaded: checkpoint.Loaded, problem: Problem, scaled: dict[str, np.ndarray]
) -> tuple[Any, str, dict[str, Any]]:
    """Decode one (scaled) instance with the checkpoint's policy and `cfg.search`."""
    if problem.to_solution is None:
        raise ValueError(f"nco-solve: problem {problem.name} has no `to_solution`.")
    raw = OmegaConf.to_container(cfg.search, resolve=True)
    if not isinstance(raw, dict):
        raise ValueError(f"nco-solve: expected `search` to be a mapping, got {raw!r}.")
    search = search_config({str(k): v for k, v in raw.items()})
    arrays = {k: np.asarray(v)[None] for k, v in scaled.items()}
    instances = to_instances(loaded.env, arrays, str(cfg.instance))
    settings = configure_policy(
        loaded.policy,
        problem,
        problem.size(scaled),
        cfg.get("precision"),
        cfg.get("knn"),
        "nco-solve",
        saved_knn=loaded.model.get("knn"),
    )
    generator = torch.Generator().manual_seed(int(cfg.seed))
    best = decode(loaded.policy, loaded.env, instances, {**search, "batch_size": None}, generator)
    actions = [a for a in best.best().actions[0].tolist() if a >= 0]
    solution = problem.to_solution(loaded.env, instances, actions)
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
        hints["the checkpoint"] = problem_of_env(loaded.env).name
    dataset, name_of_problem = load_instance_file(file, hints, cfg.get("solver"))
    problem = get_problem(name_of_problem)
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
        solver = problem.solver(str(cfg.solver))
        result = solver(scaled, float(cfg.time_limit), int(cfg.seed))
        if not math.isfinite(result.cost):
            raise RuntimeError(
                f"nco-solve: {cfg.solver} found no solution (status {result.status}); "
                "raise time_limit."
            )
        solution, method = result.solution, str(cfg.solver)
        bound = result.bound
        if bound is not None and "weights" not in scaled:  # solved on scaled coordinates
            bound *= scale
        extra = {
            "time_limit": float(cfg.time_limit),
            "optimal": result.optimal,
            "bound": bound,
            "bound_unit": dataset.metric or "natural",
            "status": result.status,
        }
    elapsed = time.perf_counter() - start
    cost, natural = score(dataset, index, solution)
    name = _instance_name(file, dataset, index)
    out = Path(str(cfg.out)) if cfg.get("out") else Path(f"{file.stem}.solution.json")
    png = out.with_suffix(".png")
    payload: dict[str, Any] = {
        "problem": problem.name,
        "instance": name,
        "file": str(file),
        "index": index,
        "method": method,
        "cost": cost,
        problem.solution_field: solution,
        "time_s": elapsed,
        "seed": int(cfg.seed),
        **extra,
    }
    if problem.coord_fields:
        payload["coordinate_transform"] = {"offset": offset, "scale": scale}
    if dataset.metric is not None:  # the file's own metric first, as nco-eval reports it
        payload["euclidean_cost"] = natural
        payload["edge_weight_type"] = dataset.metric
    if dataset.references is not None and np.isfinite(dataset.references[index]):
        ref = float(dataset.references[index])
        payload["reference"] = ref
        payload["reference_source"] = dataset.reference_source
        payload["gap"] = (cost - ref) / ref
    if cfg.get("plot", True) and problem.plot is not None:
        problem.plot(original, solution, png, f"{name}: {method}, cost {cost:.6g}")
        payload["plot"] = str(png)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=1, allow_nan=False) + "\n")
    unit = f" ({dataset.metric}; Euclidean {natural:.6f})" if dataset.metric else ""
    print(f"{method} on {name} ({problem.name}): cost {cost:.6f}{unit} in {elapsed:.2f} s")
    print(f"solution written to {out}" + (f", plot to {png}" if "plot" in payload else ""))
    return payload


def _instance_name(file: Path, dataset: Dataset, index: int) -> str:
    """The instance's name: from the dataset (a library file's NAME), else the file stem."""
    if dataset.names is not None:
        return dataset.names[index]
    return file.stem if len(dataset) == 1 else f"{file.stem}#{index}"
