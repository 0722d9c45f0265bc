"""Time Gumbeldore sampling with nco and with the authors' own code, in one run, same instances.

Default case: the paper-size BQ policy for TSP (dim 128, 9 layers, 8 heads, ff 512, random
weights from the same seed on both sides), 16 TSP100 instances, beam width 32 x 4 rounds, the
authors' TSP settings (search_type "gumbeldore", advantage constant sigma 0.3, importance-
weighted mean, no min-max normalisation, nucleus 1). nco runs `search.gumbeldore` (and
`search.beam_search` for the ratio gumbeldore / (rounds x beam_search)); the authors' side runs
the body of their Ray data-generation task, `core.gumbeldore_dataset.async_sbs_worker`, in this
process (their `IncrementalSBS` over a trie, their TSP `Trajectory`, their `BQPolicyNetwork`).
Both sides must return min(beam x rounds, (nodes - 1)!) sequences per instance; the script
checks it (and counts distinct tours) and exits non-zero after writing the JSON if not.

The authors' code is imported by path from ../shared/reference/gumbeldore (relative to the
repository root) at run time, never copied; without it the script times nco alone.
Their code needs, and gets, these run-time stand-ins (their files are not edited):
- Ray: the task's Python function (`async_sbs_worker._function`) is called directly with an
  in-process stand-in for their `JobPool` actor, and their module's `ray.get` is the identity
  during that call; no Ray cluster is started. Importing their module still needs `ray`.
- easydict: `core/abstracts.py` imports their Gomoku config (for a type alias), which imports
  easydict; when it is not installed, a stub module is put in its place during the import.
- `TSPConfig()` writes placeholder MLflow/AWS variables into os.environ: they are removed again,
  and `CUDA_VISIBLE_DEVICES` is left alone (config value None).
Nothing in their TSP sampling path needs a GPU.

    python benchmarks/bench_vs_reference.py --threads 2 --out bench_vs_reference.json
    python benchmarks/bench_vs_reference.py --tiny --nodes 10 --instances 2 --beam 4 --rounds 2
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import math
import os
import platform
import statistics
import sys
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import torch

from nco import search
from nco.models.bq import BQPolicy
from nco.problems.tsp import TSPEnv, TSPInstances
from nco.search.policy_eval import timed
from nco.search.solutions import Solutions

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "gumbeldore"
PAPER_DIMS = (128, 9, 8, 512)  # dim, layers, heads, feed-forward: the paper's TSP BQ policy
TINY_DIMS = (32, 2, 4, 64)
SIGMA = 0.3  # the authors' TSP advantage_constant
# Their gumbeldore_config entries that steer the search (reported in the JSON)
SEARCH_KEYS = (
    "search_type", "beam_width", "num_rounds", "advantage_constant",
    "min_max_normalize_advantage", "expected_value_use_simple_mean", "use_pure_outcomes",
    "normalize_advantage_by_visit_count", "perform_first_round_deterministic",
    "min_nucleus_top_p",
)  # fmt: skip


def expected_sequences(nodes: int, beam: int, rounds: int) -> int:
    """Sequences per instance both samplers must return: beam x rounds, unless the tours run out.

    Both fix node 0 as the start and complete the last node without a decision, so a TSP with
    `nodes` nodes has (nodes - 1)! distinct action sequences.
    """
    return min(beam * rounds, math.factorial(nodes - 1))


def _sync(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def _summary(walls: list[float], policy_s: list[float], rows: list[int]) -> dict[str, Any]:
    """Median wall time, policy-forward time and evaluated states over the repeats."""
    wall, pol = statistics.median(walls), statistics.median(policy_s)
    return {
        "wall_s": wall,
        "wall_all_s": walls,
        "policy_s": pol,
        "policy_share": pol / wall,
        "search_overhead_s": wall - pol,
        "search_overhead_share": (wall - pol) / wall,
        "states_evaluated": int(statistics.median(rows)),
        "states_per_s": statistics.median(rows) / wall,
    }


def _check(counts: list[int], distinct: list[int], expected: int) -> dict[str, Any]:
    """The sequence-count check of one sampler: every instance has `expected` distinct tours."""
    return {
        "sequences_per_instance": counts,
        "distinct_per_instance": distinct,
        "expected_per_instance": expected,
        "sequence_check": all(c == expected for c in counts)
        and all(d == expected for d in distinct),
    }


# --------------------------------------------------------------------------------------- nco
def _time_nco(fn: Callable[[], Solutions], repeats: int, device: str) -> tuple[dict, Solutions]:
    """Run `fn` `repeats` times; policy time and states from a `timed()` observer."""
    walls, policy_s, rows = [], [], []
    sols = None
    for _ in range(repeats):
        with timed() as stats:
            start = time.perf_counter()
            sols = fn()
            _sync(device)
            walls.append(time.perf_counter() - start)
        policy_s.append(stats.seconds)
        rows.append(stats.rows)
    return _summary(walls, policy_s, rows), sols


def _count_nco(sols: Solutions) -> tuple[list[int], list[int]]:
    """Valid and distinct sequences per instance of nco's result."""
    valid = sols.valid.cpu()
    actions = sols.actions.cpu()
    counts = valid.sum(1).tolist()
    distinct = [
        int(torch.unique(a[v], dim=0).shape[0]) for a, v in zip(actions, valid, strict=True)
    ]
    return counts, distinct


def run_nco(instances: TSPInstances, args: argparse.Namespace) -> dict[str, Any]:
    """nco's beam search and Gumbeldore on `instances` with a seeded random BQPolicy."""
    dims = TINY_DIMS if args.tiny else PAPER_DIMS
    torch.manual_seed(args.seed)
    policy = BQPolicy(*dims, precision=args.precision).to(args.device).eval()
    env = TSPEnv(args.nodes)
    instances = instances.to(args.device)
    k, n = args.beam, args.rounds

    def gen() -> torch.Generator:
        return torch.Generator(device=args.device).manual_seed(args.seed)

    bs, _ = _time_nco(
        lambda: search.beam_search(policy, env, instances, k), args.repeats, args.device
    )
    gd, sols = _time_nco(
        lambda: search.gumbeldore(policy, env, instances, k, n, sigma=SIGMA, generator=gen()),
        args.repeats,
        args.device,
    )
    counts, distinct = _count_nco(sols)
    gd.update(_check(counts, distinct, expected_sequences(args.nodes, k, n)))
    gd["best_tour_mean"] = float(env.cost(sols.best().objective).mean())
    return {
        "precision": args.precision,
        "dims": dims,
        f"beam_search_{k}": bs,
        f"gumbeldore_{k}x{n}": gd,
        "ratio_gumbeldore_over_beam": gd["wall_s"] / (n * bs["wall_s"]),
    }


# ------------------------------------------------------------------------- the authors' code
@contextlib.contextmanager
def _reference_imports(root: Path) -> Iterator[list[str]]:
    """Their root on sys.path (their modules import each other by top-level name), with an
    easydict stub while it is missing; yields the list of stand-ins used."""
    stand_ins: list[str] = []
    stub = None
    try:
        importlib.import_module("easydict")
    except ImportError:
        stub = types.ModuleType("easydict")
        stub.EasyDict = dict  # only used inside GomokuConfig.__init__, never called here
        sys.modules["easydict"] = stub
        stand_ins.append("easydict stub module (imported by gomoku/config.py via core/abstracts)")
    sys.path.insert(0, str(root))
    try:
        yield stand_ins
    finally:
        sys.path.remove(str(root))
        if stub is not None and sys.modules.get("easydict") is stub:
            del sys.modules["easydict"]


class _Remote:
    """`actor.method.remote(...)` of a Ray actor handle, run at once in this process."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.remote = fn


class InProcessJobPool:
    """Their `JobPool` actor's interface (get_jobs, push_results) for one in-process worker."""

    def __init__(self, instances: list[dict]) -> None:
        self.jobs = list(enumerate(instances))
        self.results: list[tuple[int, Any]] = []
        self.get_jobs = _Remote(self._take)
        self.push_results = _Remote(self.results.extend)

    def _take(self, n_items: int) -> list[tuple[int, dict]] | None:
        if not self.jobs:
            return None
        items, self.jobs = self.jobs[:n_items], self.jobs[n_items:]
        return items


class PolicyClock:
    """Forward time and rows of the authors' network, from forward hooks (their code untouched)."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.seconds, self.rows, self._start = 0.0, 0, 0.0

    def attach(self, net: torch.nn.Module) -> None:
        net.register_forward_pre_hook(self._before)
        net.register_forward_hook(self._after)

    def _before(self, module: torch.nn.Module, inputs: tuple) -> None:
        self.rows += inputs[0]["nodes"].shape[0]
        self._start = time.perf_counter()

    def _after(self, module: torch.nn.Module, inputs: tuple, output: torch.Tensor) -> None:
        _sync(self.device)
        self.seconds += time.perf_counter() - self._start


def _leaves_summary(states: list) -> dict[str, Any]:
    """Their `beam_leaves_to_result_fn`: count, distinct tours and best length of the leaves."""
    return {
        "sequences": len(states),
        "distinct": len({tuple(s.partial_tour) for s in states}),
        "best": min(s.objective for s in states),
    }


def _reference_config(module: types.ModuleType, args: argparse.Namespace) -> Any:
    """Their TSPConfig at this run's sizes; the placeholder env variables it sets are removed."""
    before = dict(os.environ)
    config = module.TSPConfig()
    for key in set(os.environ) - set(before):
        del os.environ[key]
    os.environ.update(before)
    dims = TINY_DIMS if args.tiny else PAPER_DIMS
    (
        config.latent_dimension,
        config.num_transformer_blocks,
        config.num_attention_heads,
        config.feedforward_dimension,
    ) = dims
    config.num_nodes = args.nodes
    config.CUDA_VISIBLE_DEVICES = None  # the worker would otherwise overwrite the variable
    gc = config.gumbeldore_config
    if gc["search_type"] != "gumbeldore" or gc["advantage_constant"] != SIGMA:
        raise RuntimeError(
            f"their TSP config is not the expected one: search_type {gc['search_type']!r}, "
            f"advantage_constant {gc['advantage_constant']}"
        )
    gc.update(beam_width=args.beam, num_rounds=args.rounds, devices_for_workers=[args.device])
    return config


def run_reference(coords: torch.Tensor, args: argparse.Namespace) -> dict[str, Any]:
    """The authors' Gumbeldore sampler (their Ray worker's body, in process) on `coords`."""
    root = Path(args.reference)
    if not root.is_dir():
        return {"skipped": f"the authors' reference code is absent ({root})"}
    try:
        with _reference_imports(root) as stand_ins:
            worker_module = importlib.import_module("core.gumbeldore_dataset")
            tsp_config = importlib.import_module("tsp.config")
            network_module = importlib.import_module("tsp.bq_network")
            trajectory = importlib.import_module("tsp.trajectory")
    except ImportError as err:
        return {"skipped": f"the authors' code cannot be imported here: {err!r}"}
    config = _reference_config(tsp_config, args)
    torch.manual_seed(args.seed)
    weights = network_module.BQPolicyNetwork(config).state_dict()
    clock = PolicyClock(args.device)

    def get_network(cfg: Any, device: torch.device) -> torch.nn.Module:
        net = network_module.BQPolicyNetwork(cfg, device)
        clock.attach(net)
        return net

    worker = worker_module.async_sbs_worker._function  # the Python body of their Ray task
    batch = args.reference_batch or len(coords)
    instances = [{"inst": c.numpy()} for c in coords.cpu()]
    ray_get_only = types.SimpleNamespace(get=lambda value: value)
    walls, policy_s, rows = [], [], []
    for _ in range(args.repeats):
        np.random.seed(args.seed)  # their SBS draws its Gumbels from numpy's global generator
        pool = InProcessJobPool(instances)
        clock.seconds, clock.rows = 0.0, 0
        with mock.patch.object(worker_module, "ray", ray_get_only):
            start = time.perf_counter()
            worker(
                config,
                pool,
                weights,
                args.device,
                batch,
                _leaves_summary,
                get_network,
                trajectory.Trajectory,
            )
            _sync(args.device)
            walls.append(time.perf_counter() - start)
        policy_s.append(clock.seconds)
        rows.append(clock.rows)
    results = [r for _, r in sorted(pool.results, key=lambda x: x[0])]
    if len(results) != len(instances):
        raise RuntimeError(f"their worker returned {len(results)} of {len(instances)} instances")
    out = _summary(walls, policy_s, rows)
    out.update(
        _check(
            [r["sequences"] for r in results],
            [r["distinct"] for r in results],
            expected_sequences(args.nodes, args.beam, args.rounds),
        )
    )
    gc = config.gumbeldore_config
    out.update(
        {
            "best_tour_mean": statistics.mean(r["best"] for r in results),
            "precision": f"{next(iter(weights.values())).dtype} (their network, no autocast)",
            "path": str(root),
            "driver": "core.gumbeldore_dataset.async_sbs_worker (Ray task body, in process) -> "
            "core.incremental_sbs.IncrementalSBS.perform_incremental_sbs -> "
            "tsp.trajectory.Trajectory.log_probability_fn -> tsp.bq_network.BQPolicyNetwork",
            "instances_per_worker_batch": batch,
            "gumbeldore_config": {key: gc[key] for key in SEARCH_KEYS},
            "stand_ins": [
                "Ray: async_sbs_worker._function called directly, in-process JobPool, "
                "ray.get = identity in core.gumbeldore_dataset during the call",
                *stand_ins,
            ],
        }
    )
    return out


# ------------------------------------------------------------------------------------ main
def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--instances", type=int, default=16)
    parser.add_argument("--beam", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32", help="nco's")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0, help="weights and sampling, both sides")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument("--tiny", action="store_true", help="tiny model (smoke test)")
    parser.add_argument("--reference", default=str(REFERENCE), help="the authors' code")
    parser.add_argument(
        "--reference-batch",
        type=int,
        default=0,
        help="instances per call of their worker's search (0: all, as nco; their TSP config "
        "uses 1 per CPU worker, 4 per GPU worker)",
    )
    parser.add_argument("--skip-reference", action="store_true")
    parser.add_argument("--out", default="bench_vs_reference.json")
    return parser.parse_args(argv)


def _row(side: str, name: str, r: dict[str, Any]) -> str:
    seqs = r.get("sequences_per_instance")
    seq = "" if seqs is None else f"{min(seqs)}-{max(seqs)}"
    return (
        f"{side:<9}{name:<20}{r['wall_s']:>10.2f}{100 * r['policy_share']:>10.1f}"
        f"{r['search_overhead_s']:>12.2f}{r['states_per_s']:>12.0f}{seq:>12}"
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Time both samplers, print a table, write the JSON report; exit 1 if a check failed."""
    args = parse(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    instances = TSPEnv(args.nodes).generate(args.instances, torch.Generator().manual_seed(1234))
    k, n = args.beam, args.rounds
    gd_name = f"gumbeldore_{k}x{n}"
    nco = run_nco(instances, args)
    if args.skip_reference:
        reference = {"skipped": "--skip-reference"}
    else:
        reference = run_reference(instances.coords, args)
    ratio = None if "skipped" in reference else reference["wall_s"] / nco[gd_name]["wall_s"]
    print(
        f"{'side':<9}{'decoder':<20}{'wall s':>10}{'policy %':>10}{'overhead s':>12}"
        f"{'states/s':>12}{'seqs/inst':>12}"
    )
    print(_row("nco", f"beam_search_{k}", nco[f"beam_search_{k}"]))
    print(_row("nco", gd_name, nco[gd_name]))
    if "skipped" in reference:
        print(f"authors  skipped: {reference['skipped']}")
    else:
        print(_row("authors", gd_name, reference))
        print(f"authors / nco ({gd_name}) = {ratio:.2f}")
    print(f"nco gumbeldore / ({n} x beam_search_{k}) = {nco['ratio_gumbeldore_over_beam']:.3f}")
    print(
        f"torch threads {torch.get_num_threads()}, CPU capability "
        f"{torch.backends.cpu.get_cpu_capability()}, nco precision {args.precision}"
    )
    report = {
        "config": vars(args),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "machine": platform.processor() or platform.machine(),
        "device_name": torch.cuda.get_device_name(args.device)
        if torch.device(args.device).type == "cuda"
        else "cpu",
        "expected_sequences_per_instance": expected_sequences(args.nodes, k, n),
        "nco": nco,
        "reference": reference,
        "ratio_reference_over_nco": ratio,
    }
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(f"wrote {args.out}")
    failed = [
        side
        for side, r in (("nco", nco[gd_name]), ("authors", reference))
        if "sequence_check" in r and not r["sequence_check"]
    ]
    if failed:
        raise SystemExit(f"sequence count check failed: {', '.join(failed)} (see {args.out})")
    return report


if __name__ == "__main__":
    main()
