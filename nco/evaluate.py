"""`nco-eval`: decode a dataset with a checkpoint's policy; print the table, write the results JSON.

    nco-eval checkpoint=best.pt data=kool:tsp100_test search=greedy limit=100 batch_size=64 \\
        device=cpu out=r.json
    nco-eval checkpoint=best.pt data=taillard:15x15 search=gumbeldore search.beam_width=32 \\
        search.rounds=4 search.p_min=0.8 search.sigma=0.05
    python -m nco.evaluate checkpoint=best.pt data=my.npz search=beam search.beam_width=16

Each row's objective is the problem's natural cost (`env.cost` of the best decoded sequence);
gaps are taken to the dataset's references where present (see docs/evaluation.md).
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import hydra
import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf
from torch import nn

from nco import checkpoint
from nco.baseline import problem_name
from nco.datasets import Dataset, load_dataset
from nco.decode import decode, decoder_kwargs
from nco.env import Batch, Env
from nco.library_eval import evaluate_files, library_files
from nco.paths import CONFIG_DIR
from nco.progress import progress_bar
from nco.results import Results, format_table, write_results

PRECISIONS = ("fp32", "bf16")
ROUTING = ("tsp", "cvrp")
AUTO_KNN = 250  # routing policies attend to the 250 nearest nodes on larger instances (BQ, D.3.3)


def check_checkpoint(path: str | None, command: str) -> Path:
    """The checkpoint path as a Path; ValueError when it is not given or not a file."""
    if not path:
        raise ValueError(f"{command}: checkpoint= is required (a file written by nco-train).")
    file = Path(str(path))
    if not file.is_file():
        raise ValueError(f"{command}: checkpoint file {file} not found.")
    return file


def check_device(device: str, command: str) -> torch.device:
    """`device` as a torch.device; ValueError for CUDA on a machine without it."""
    try:
        dev = torch.device(device)
    except RuntimeError as err:
        raise ValueError(f"{command}: device={device!r} is not a torch device ({err}).") from err
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{command}: device={device!r} but CUDA is not available here.")
    return dev


def search_config(search: Mapping[str, Any]) -> dict[str, Any]:
    """The search config as a plain dict, checked against its decoder's signature.

    Raises ValueError for an unknown method (listing the valid ones) or unknown parameters.
    """
    cfg = dict(search)
    decoder_kwargs(cfg)
    return cfg


def describe_search(search: Mapping[str, Any]) -> str:
    """A short method label such as `gumbeldore(beam_width=32, rounds=4, ...)`."""
    params = [f"{k}={v}" for k, v in search.items() if k not in ("method", "batch_size")]
    return f"{search['method']}({', '.join(params)})" if params else str(search["method"])


def num_nodes(problem: str, instances: Batch) -> int:
    """Graph size of routing instances (TSP nodes; CVRP customers + depot), else 0."""
    if problem == "tsp":
        return int(instances.coords.shape[1])
    if problem == "cvrp":
        return int(instances.locs.shape[1]) + 1
    return 0


def configure_policy(
    policy: nn.Module,
    problem: str,
    size: int,
    precision: str | None,
    knn: int | None,
    command: str = "nco-eval",
) -> dict[str, Any]:
    """Apply the `precision` and `knn` overrides to `policy` where it has those attributes.

    With `knn` None, routing policies with a `knn` attribute of None get `AUTO_KNN` when the
    instances have more than `AUTO_KNN` nodes. Returns the settings in effect (None = absent).
    """
    if precision is not None:
        if precision not in PRECISIONS:
            raise ValueError(f"{command}: expected precision in {PRECISIONS}, got {precision!r}.")
        if hasattr(policy, "precision"):
            policy.precision = precision
        else:
            warnings.warn(
                f"{command}: {type(policy).__name__} has no precision setting; "
                f"precision={precision} is ignored.",
                stacklevel=2,
            )
    if knn is not None:
        if int(knn) < 1:
            raise ValueError(f"{command}: expected knn >= 1 or null, got {knn}.")
        if hasattr(policy, "knn"):
            policy.knn = int(knn)
        else:
            warnings.warn(
                f"{command}: {type(policy).__name__} has no knn setting; knn={knn} is ignored.",
                stacklevel=2,
            )
    elif problem in ROUTING and hasattr(policy, "knn") and policy.knn is None and size > AUTO_KNN:
        policy.knn = AUTO_KNN
    return {
        "precision": getattr(policy, "precision", None),
        "knn": getattr(policy, "knn", None),
    }


def to_instances(env: Env, arrays: Mapping[str, np.ndarray], source: str) -> Batch:
    """Arrays with a leading instance dim as the env's instance batch.

    Field names and dtypes are those of `env.generate`'s batches; `source` names the data in
    errors.
    """
    like = env.generate(1, torch.Generator().manual_seed(0))
    fields = {}
    for field in dataclasses.fields(like):
        if field.name not in arrays:
            raise ValueError(f"{source}: missing field {field.name!r} for {type(like).__name__}.")
        dtype = getattr(like, field.name).dtype
        fields[field.name] = torch.as_tensor(np.asarray(arrays[field.name])).to(dtype)
    return type(like)(**fields)


def resolve_dataset(data: str | None, problem: str) -> Dataset:
    """Load `data=` and check it holds `problem` instances.

    Named sets and .npz files declare their problem; other files are read as `problem`.
    """
    if not data:
        raise ValueError("nco-eval: data= is required (a file or e.g. kool:tsp100_test).")
    path = Path(str(data))
    declared = not path.is_file() or path.suffix.lower() == ".npz"
    dataset = load_dataset(str(data), None if declared else problem)
    if dataset.problem != problem:
        raise ValueError(
            f"nco-eval: the checkpoint holds a {problem} policy but data={data} holds "
            f"{dataset.problem} instances."
        )
    return dataset


def decode_best(
    policy: nn.Module,
    env: Env,
    instances: Batch,
    search: Mapping[str, Any],
    batch_size: int,
    seed: int,
    progress: bool = True,
) -> tuple[list[list[int]], torch.Tensor]:
    """Best action sequence (padding removed) and objective per instance, in batches.

    One CPU generator seeded with `seed` drives every batch, so a run is reproducible for a
    given batch size.
    """
    if batch_size < 1:
        raise ValueError(f"nco-eval: expected batch_size >= 1, got {batch_size}.")
    generator = torch.Generator().manual_seed(int(seed))
    cfg = {**dict(search), "batch_size": None}
    sequences: list[list[int]] = []
    objectives = []
    starts = range(0, instances.batch_size, batch_size)
    for start in progress_bar(starts, progress, desc=str(search["method"]), unit="batch"):
        idx = torch.arange(start, min(start + batch_size, instances.batch_size))
        best = decode(policy, env, instances.index(idx), cfg, generator).best()
        sequences.extend([a for a in row if a >= 0] for row in best.actions.tolist())
        objectives.append(best.objective.to(torch.float64))
    return sequences, torch.cat(objectives)


def run_library(
    cfg: DictConfig,
    loaded: checkpoint.Loaded,
    problem: str,
    files: list[Path],
    search: dict,
    path: Path,
) -> Results:
    """nco-eval on TSPLIB / CVRPLIB files: one row per file in its own metric (library_eval)."""
    settings = configure_policy(loaded.policy, problem, 0, cfg.get("precision"), cfg.get("knn"))
    results, wall = evaluate_files(files, loaded, problem, search, int(cfg.seed))
    results.method = f"{path.name} {describe_search(search)}"
    results.info.update({"checkpoint": str(path), "search": search, **settings})
    print(format_table(results))
    print(
        f"{len(files)} library files in {wall:.2f} s; cost = each file's own metric "
        "(TSPLIB integer distances), references from .opt.tour / .sol files beside them",
        file=sys.stderr,
    )
    if cfg.get("out"):
        written = write_results(results, cfg.out)
        print(f"results written to {written}")
    return results


def run(cfg: DictConfig) -> Results:
    """Evaluate `cfg.checkpoint` on `cfg.data` with `cfg.search`; print and write the results."""
    path = check_checkpoint(cfg.get("checkpoint"), "nco-eval")
    device = check_device(str(cfg.device), "nco-eval")
    search = search_config(OmegaConf.to_container(cfg.search, resolve=True))
    loaded = checkpoint.load(path, device)
    problem = problem_name(OmegaConf.create(loaded.problem))
    files = library_files(str(cfg.get("data") or ""), problem)
    if files is not None:
        return run_library(cfg, loaded, problem, files, search, path)
    dataset = resolve_dataset(cfg.get("data"), problem).head(cfg.get("limit"))
    scaled, scales = dataset.unit_square()
    if (scales != 1).any():
        print(
            f"nco-eval: {int((scales != 1).sum())} of {len(dataset)} instances have coordinates "
            "outside the unit square; each was scaled into it (x - min) / scale for the policy, "
            "and costs are reported in the file's units.",
            file=sys.stderr,
        )
    instances = to_instances(loaded.env, scaled.arrays, dataset.name)
    settings = configure_policy(
        loaded.policy,
        problem,
        num_nodes(problem, instances),
        cfg.get("precision"),
        cfg.get("knn"),
    )
    batch_size = cfg.get("batch_size")
    if batch_size is None:
        batch_size = search.get("batch_size") or len(dataset)
    start = time.perf_counter()
    sequences, objective = decode_best(
        loaded.policy,
        loaded.env,
        instances,
        search,
        int(batch_size),
        int(cfg.seed),
        bool(cfg.get("progress", True)),
    )
    wall = time.perf_counter() - start
    costs = (loaded.env.cost(objective).numpy() * scales).tolist()
    if not all(math.isfinite(c) for c in costs):
        raise RuntimeError(f"nco-eval: {search['method']} left instances without a solution.")
    rate = len(dataset) / max(wall, 1e-9)
    results = Results(
        problem=problem,
        dataset=dataset.name,
        method=f"{path.name} {describe_search(search)}",
        objectives=costs,
        references=None if dataset.references is None else list(dataset.references),
        wall_time_s=wall,
        solutions=sequences if cfg.get("save_solutions") else None,
        names=dataset.names,
        info={
            "checkpoint": str(path),
            "checkpoint_meta": loaded.meta,
            "search": search,
            "batch_size": int(batch_size),
            "seed": int(cfg.seed),
            "device": str(device),
            **settings,
            "instances_per_s": rate,
            "reference_source": dataset.reference_source,
            "solution_format": "actions (the env's action sequence of the best solution)",
        },
    )
    print(format_table(results))
    print(f"{len(dataset)} instances in {wall:.2f} s: {rate:.2f} instances/s")
    if cfg.get("out"):
        written = write_results(results, cfg.out)
        print(f"results written to {written}")
    return results


@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="evaluate")
def main(cfg: DictConfig) -> None:
    """Console entry point `nco-eval` (Hydra key=value overrides)."""
    run(cfg)


if __name__ == "__main__":
    main()
