"""Evaluation (`nco-eval`): decode datasets with a checkpoint's policy, score, write JSON.

    nco-eval checkpoint=best.pt data=kool:tsp100_test search=greedy limit=100 batch_size=64 \\
        device=cpu out=r.json
    nco-eval checkpoint=best.pt data=taillard:15x15 search=gumbeldore search.beam_width=32 \\
        search.rounds=4 search.p_min=0.8 search.sigma=0.05

Each row's objective is the problem's natural cost (`env.cost` of the best decoded sequence);
gaps are taken to the dataset's references where present (see docs/evaluation.md).
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

from nco import checkpoint
from nco.config import to_dict
from nco.datasets import Dataset, load_datasets
from nco.inference import (
    check_checkpoint,
    check_device,
    configure_policy,
    decode_best,
    describe_search,
    search_config,
    to_instances,
)
from nco.problem import Problem
from nco.registry import problem_of_env
from nco.results import Results, format_table, write_results
from nco.scoring import score
from nco.search.adaptive import recording


def resolve_datasets(
    data: str | None, problem: str, skipped: list[tuple[Path, str]] | None = None
) -> list[Dataset]:
    """Load `data=` (a named set, a file, or a folder of library files: one dataset per file)
    and check it holds `problem` instances. Files whose reader the suffix or .npz fields do not
    tell are read as `problem`. With `skipped`, a folder's unreadable files are listed there
    (file, reason) instead of failing the folder."""
    if not data:
        raise ValueError("nco-eval: data= is required (a file or e.g. kool:tsp100_test).")
    try:
        refused: list[tuple[Path, str]] = []
        datasets = load_datasets(str(data), skipped=refused)
    except ValueError as err:
        if "pass problem=" not in str(err):
            raise
        refused = []
        datasets = load_datasets(str(data), problem, skipped=refused)
    if skipped is not None:
        skipped.extend(refused)
    elif refused:
        raise ValueError(refused[0][1])
    for dataset in datasets:
        if dataset.problem != problem:
            raise ValueError(
                f"nco-eval: the checkpoint holds a {problem} policy but data={data} holds "
                f"{dataset.problem} instances."
            )
    return datasets


def evaluate_dataset(
    cfg: DictConfig, loaded: checkpoint.Loaded, problem: Problem, dataset: Dataset, search: dict
) -> dict[str, Any]:
    """Decode one dataset; costs (the dataset's metric), natural costs, sequences, settings."""
    scaled, scales = dataset.unit_square(problem.coord_fields)
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
    with recording() as logs:  # per-round statistics of search.adaptive (true or false)
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
    anytime = None
    for log in logs:
        anytime = log if anytime is None else anytime.extend(log)
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
        "anytime": None if anytime is None else anytime.to_json(),
    }


def run(cfg: DictConfig) -> Results:
    """Evaluate `cfg.checkpoint` on `cfg.data` with `cfg.search`; print and write the results.

    A folder of library files gives one row per file, each in its own metric with the natural
    (Euclidean) cost beside it in `info.euclidean_costs`.
    """
    path = check_checkpoint(cfg.get("checkpoint"), "nco-eval")
    device = check_device(str(cfg.device), "nco-eval")
    search = search_config(to_dict(cfg.search, "search"))
    loaded = checkpoint.load(path, device)
    problem = problem_of_env(loaded.env)
    offset = int(cfg.get("offset") or 0)
    skipped: list[tuple[Path, str]] = []
    datasets = [
        d.head(cfg.get("limit"), offset)
        for d in resolve_datasets(cfg.get("data"), problem.name, skipped)
    ]
    for file, reason in skipped:  # a folder's unreadable files: reported, the rest scored
        print(f"nco-eval: skipped {file}: {reason}", file=sys.stderr, flush=True)
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
    anytime = [p["anytime"] for p in parts if p["anytime"] is not None]
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
    if skipped:
        info["skipped_files"] = [{"file": str(f), "reason": r} for f, r in skipped]
    if anytime:
        info["anytime"] = anytime[0] if len(anytime) == 1 else anytime
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
