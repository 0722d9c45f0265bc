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
from nco.allocator import keep_freed_memory
from nco.datasets import Dataset, load_datasets
from nco.decode import decode, decoder_kwargs
from nco.env import Batch, Env
from nco.paths import CONFIG_DIR, DATA_DIR
from nco.problem import Problem
from nco.progress import progress_bar
from nco.registry import get_problem, problem_of_env
from nco.results import Results, format_table, write_results
from nco.scoring import score

PRECISIONS = ("fp32", "bf16")
KNN_OFF = ("none", "off", "false", "0")


SHIPPED_PREFIX = "shipped:"


def shipped_checkpoints() -> list[str]:
    """Names of the checkpoints shipped with nco (`data/checkpoints/<name>/best.pt`)."""
    folder = DATA_DIR / "checkpoints"
    return sorted(p.parent.name for p in folder.glob("*/best.pt")) if folder.is_dir() else []


def check_checkpoint(path: str | None, command: str) -> Path:
    """The checkpoint path as a Path (`shipped:<name>` names one shipped with nco, wherever it
    is installed); ValueError when it is not given or not a file."""
    if not path:
        raise ValueError(f"{command}: checkpoint= is required (a file written by nco-train).")
    if str(path).startswith(SHIPPED_PREFIX):
        name = str(path)[len(SHIPPED_PREFIX) :]
        if name not in shipped_checkpoints():
            names = ", ".join(SHIPPED_PREFIX + n for n in shipped_checkpoints())
            raise ValueError(
                f"{command}: checkpoint={path} is not shipped; expected one of {names}."
            )
        return DATA_DIR / "checkpoints" / name / "best.pt"
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


def parse_knn(knn: Any, command: str = "nco-eval") -> int | str | None:
    """`knn=` as given: None (automatic), 0 (off: `knn=0`, `none`, `off`, `false`) or k >= 1."""
    if knn is None:
        return None
    if isinstance(knn, bool) or str(knn).strip().lower() in KNN_OFF:
        if knn is True:
            raise ValueError(f"{command}: expected knn = null, 0 / none / off or k >= 1, got true.")
        return 0
    try:
        value = int(str(knn))
    except ValueError:
        value = -1
    if value < 1:
        raise ValueError(f"{command}: expected knn = null, 0 / none / off or k >= 1, got {knn!r}.")
    return value


def configure_policy(
    policy: nn.Module,
    problem: Problem | str,
    size: int,
    precision: str | None,
    knn: Any,
    command: str = "nco-eval",
    saved_knn: Any = None,
) -> dict[str, Any]:
    """Apply the `precision` and `knn` overrides to `policy` where it has those attributes.

    `knn`: null = automatic, i.e. the checkpoint's own setting (`saved_knn`) when it has one,
    else the problem descriptor's `auto_knn(size)` (CVRP: 250 beyond 250 customers; TSP: none);
    0 / none / off = no restriction; k >= 1 = the k nearest nodes. Returns the settings in
    effect (None = absent or off).
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
    if isinstance(problem, str):
        problem = get_problem(problem)
    value = parse_knn(knn, command)
    if hasattr(policy, "knn"):
        if value is None:
            policy.knn = saved_knn if saved_knn is not None else problem.auto_knn(size)
        else:
            policy.knn = value or None
    elif value:
        warnings.warn(
            f"{command}: {type(policy).__name__} has no knn setting; knn={knn} is ignored.",
            stacklevel=2,
        )
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


def resolve_datasets(data: str | None, problem: str) -> list[Dataset]:
    """Load `data=` (a named set, a file, or a folder of library files: one dataset per file)
    and check it holds `problem` instances. Files whose reader the suffix or .npz fields do not
    tell are read as `problem`."""
    if not data:
        raise ValueError("nco-eval: data= is required (a file or e.g. kool:tsp100_test).")
    try:
        datasets = load_datasets(str(data))
    except ValueError as err:
        if "pass problem=" not in str(err):
            raise
        datasets = load_datasets(str(data), problem)
    for dataset in datasets:
        if dataset.problem != problem:
            raise ValueError(
                f"nco-eval: the checkpoint holds a {problem} policy but data={data} holds "
                f"{dataset.problem} instances."
            )
    return datasets


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


def evaluate_dataset(
    cfg: DictConfig, loaded: checkpoint.Loaded, problem: Problem, dataset: Dataset, search: dict
) -> dict[str, Any]:
    """Decode one dataset; costs (the dataset's metric), natural costs, sequences, settings."""
    scaled, scales = dataset.unit_square()
    if (scales != 1).any():
        print(
            f"nco-eval: {dataset.name}: {int((scales != 1).sum())} of {len(dataset)} instances "
            "have coordinates outside the unit square; each was scaled into it (x - min) / scale "
            "for the policy, and costs are computed on the file's own coordinates.",
            file=sys.stderr,
        )
    instances = to_instances(loaded.env, scaled.arrays, dataset.name)
    size = max(problem.size(scaled.instance(i)) for i in range(len(dataset)))
    settings = configure_policy(
        loaded.policy,
        problem,
        size,
        cfg.get("precision"),
        cfg.get("knn"),
        saved_knn=loaded.model.get("knn"),
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
    natural = (loaded.env.cost(objective).numpy() * scales).tolist()
    if not all(math.isfinite(c) for c in natural):
        raise RuntimeError(f"nco-eval: {search['method']} left instances without a solution.")
    costs = natural
    if dataset.metric is not None and problem.to_solution is not None:
        costs, natural = [], []
        for i, actions in enumerate(sequences):
            row = instances.index(torch.tensor([i]))
            cost, length = score(dataset, i, problem.to_solution(loaded.env, row, actions))
            costs.append(cost)
            natural.append(length)
    names = dataset.names
    if names is None and len(dataset) == 1:
        names = [Path(dataset.name).stem]
    return {
        "costs": costs,
        "natural": natural,
        "sequences": sequences,
        "wall": wall,
        "settings": settings,
        "batch_size": int(batch_size),
        "names": names,
    }


def run(cfg: DictConfig) -> Results:
    """Evaluate `cfg.checkpoint` on `cfg.data` with `cfg.search`; print and write the results.

    A folder of library files gives one row per file, each in its own metric with the natural
    (Euclidean) cost beside it in `info.euclidean_costs`.
    """
    path = check_checkpoint(cfg.get("checkpoint"), "nco-eval")
    device = check_device(str(cfg.device), "nco-eval")
    search = search_config(OmegaConf.to_container(cfg.search, resolve=True))
    loaded = checkpoint.load(path, device)
    problem = problem_of_env(loaded.env)
    offset = int(cfg.get("offset") or 0)
    datasets = [
        d.head(cfg.get("limit"), offset) for d in resolve_datasets(cfg.get("data"), problem.name)
    ]
    parts = [evaluate_dataset(cfg, loaded, problem, d, search) for d in datasets]
    wall = sum(p["wall"] for p in parts)
    num = sum(len(d) for d in datasets)
    rate = num / max(wall, 1e-9)
    references = None
    if any(d.references is not None for d in datasets):
        references = [
            r
            for d in datasets
            for r in (list(d.references) if d.references is not None else [None] * len(d))
        ]
    names = None
    if all(p["names"] is not None for p in parts):
        names = [n for p in parts for n in p["names"]]
    metrics = [d.metric for d in datasets]
    info: dict[str, Any] = {
        "checkpoint": str(path),
        "checkpoint_meta": loaded.meta,
        "search": search,
        "batch_size": parts[0]["batch_size"],
        "seed": int(cfg.seed),
        "limit": cfg.get("limit"),
        "offset": offset,
        "device": str(device),
        **parts[-1]["settings"],
        "instances_per_s": rate,
        "reference_source": "; ".join(
            sorted({d.reference_source for d in datasets if d.reference_source})
        )
        or None,
        "solution_format": "actions (the env's action sequence of the best solution)",
    }
    if any(m is not None for m in metrics):
        info["metrics"] = [
            m or "EUCLIDEAN" for d, m in zip(datasets, metrics, strict=True) for _ in range(len(d))
        ]
        info["euclidean_costs"] = [c for p in parts for c in p["natural"]]
        info["knn_per_dataset"] = [p["settings"]["knn"] for p in parts]
    results = Results(
        problem=problem.name,
        dataset=str(cfg.data) if len(datasets) > 1 else datasets[0].name,
        method=f"{path.name} {describe_search(search)}",
        objectives=[c for p in parts for c in p["costs"]],
        references=references,
        wall_time_s=wall,
        solutions=[s for p in parts for s in p["sequences"]] if cfg.get("save_solutions") else None,
        names=names,
        info=info,
    )
    print(format_table(results))
    print(f"{num} instances in {wall:.2f} s: {rate:.2f} instances/s")
    if "metrics" in info:
        print(
            "cost = each library file's own metric (TSPLIB / CVRPLIB: "
            f"{', '.join(sorted({m for m in metrics if m}))}), the Euclidean length beside it in "
            "info.euclidean_costs; coordinates were scaled into the unit square for the policy "
            "only; references from .opt.tour / .sol files or a best-known table beside the files",
            file=sys.stderr,
        )
    if cfg.get("out"):
        written = write_results(results, cfg.out)
        print(f"results written to {written}")
    return results


@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="evaluate")
def main(cfg: DictConfig) -> None:
    """Console entry point `nco-eval` (Hydra key=value overrides)."""
    keep_freed_memory()
    run(cfg)


if __name__ == "__main__":
    main()
