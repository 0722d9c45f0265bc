"""Time nco's greedy, multi-start and x8-augmented decode of the imported POMO policies against
the authors' own code (jieyibi/AMDKD's AMDKD-POMO), side by side in one process.

    python benchmarks/bench_light_decode.py --num 20 --repeats 3
    python benchmarks/bench_light_decode.py --problems tsp --modes multistart --num 5 --repeats 1

For each problem (TSP100, CVRP100) and mode (`greedy`: start 0 only; `multistart`: all 100
starts; `aug8`: 100 starts x 8 symmetries) both sides decode the first `--num` Kool test
instances `--repeats` times, alternating which goes first, and the median wall time and median
process CPU time of each are kept (CPU time is steadier on a shared machine). Both sides are
timed as whole calls of benchmarks/light_vs_reference.py's loaders (model built and weights
read, then decoded), so setup counts on both. The process first applies
`nco.allocator.keep_freed_memory` as nco's commands do (`--malloc default` keeps glibc's
settings): otherwise the per-step activations are mapped and zero-filled anew depending on
what ran before, which swings either side by up to 2x. Every repeat checks that both
return the same best cost per instance (to 1e-4) and the same best solution (tours up to start
and direction, CVRP routes as a set). nco decodes the shipped checkpoint
data/checkpoints/pomo_<problem>100/best.pt (imported from the same published weights). The
authors' code is a snapshot outside the repository (`--ref`); nothing of it is copied here.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from nco.allocator import keep_freed_memory

sys.path.insert(0, str(Path(__file__).resolve().parent))
from light_vs_reference import (  # noqa: E402 (the sibling script's loaders)
    _arrays,
    _canonical,
    _nco,
    _reference_pomo,
    _source,
)

ROOT = Path(__file__).resolve().parents[1]
SIZE = 100
MODES = ("greedy", "multistart", "aug8")


def _agreement(problem: str, ref: tuple[list, list], own: tuple[list, list]) -> dict[str, float]:
    """Shares of instances with the same best cost (to 1e-4) and the same best solution."""
    pairs = list(zip(*ref, *own, strict=True))
    same_cost = sum(abs(rc - oc) < 1e-4 for rc, _, oc, _ in pairs)
    same_tour = sum(_canonical(problem, rt) == _canonical(problem, ot) for _, rt, _, ot in pairs)
    return {"same_cost_share": same_cost / len(pairs), "same_tour_share": same_tour / len(pairs)}


def bench(problem: str, mode: str, num: int, repeats: int, ref: Path) -> dict:
    """Median seconds of both sides on the first `num` instances, and their agreement."""
    arrays = _arrays(problem, SIZE, 0, num)
    ckpt = ROOT / "data" / "checkpoints" / f"pomo_{problem}{SIZE}" / "best.pt"
    src = _source("pomo", problem, SIZE)
    sides: dict[str, Callable[[], tuple[list, list]]] = {
        "reference": lambda: _reference_pomo(ref, problem, src, arrays, mode),
        "nco": lambda: _nco(ckpt, problem, arrays, mode, SIZE),
    }
    wall: dict[str, list[float]] = {name: [] for name in sides}
    cpu: dict[str, list[float]] = {name: [] for name in sides}
    agreement = []
    for r in range(repeats):
        out = {}
        for name in sorted(sides, reverse=r % 2 == 0):  # alternate which side goes first
            start, start_cpu = time.perf_counter(), time.process_time()
            out[name] = sides[name]()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
        agreement.append(_agreement(problem, out["reference"], out["nco"]))
    med = {name: statistics.median(t) for name, t in wall.items()}
    med_cpu = {name: statistics.median(t) for name, t in cpu.items()}
    return {
        "problem": problem,
        "mode": mode,
        "num_instances": num,
        "reference_median_s": med["reference"],
        "nco_median_s": med["nco"],
        "nco_over_reference": med["nco"] / med["reference"],
        "reference_median_cpu_s": med_cpu["reference"],
        "nco_median_cpu_s": med_cpu["nco"],
        "nco_over_reference_cpu": med_cpu["nco"] / med_cpu["reference"],
        "reference_s": wall["reference"],
        "nco_s": wall["nco"],
        "reference_cpu_s": cpu["reference"],
        "nco_cpu_s": cpu["nco"],
        "same_cost_share": min(a["same_cost_share"] for a in agreement),
        "same_tour_share": min(a["same_tour_share"] for a in agreement),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ref", type=Path, default=Path("/tmp/ref/amdkd/AMDKD-POMO"))
    parser.add_argument("--num", type=int, default=20, help="first Kool test instances")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--problems", nargs="+", choices=("tsp", "cvrp"), default=["tsp", "cvrp"])
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument(
        "--out", type=Path, default=ROOT / "data" / "results" / "light" / "bench_light_decode.json"
    )
    parser.add_argument("--malloc", choices=("tuned", "default"), default="tuned")
    args = parser.parse_args()
    if not (args.ref / "TSP" / "POMO" / "TSPModel.py").is_file():
        raise SystemExit(f"--ref {args.ref}: expected the AMDKD-POMO snapshot (TSP/POMO/...).")
    tuned = args.malloc == "tuned" and keep_freed_memory()
    torch.set_num_threads(args.threads)
    rows = []
    for problem in args.problems:
        for mode in args.modes:
            row = bench(problem, mode, args.num, args.repeats, args.ref)
            rows.append(row)
            print(
                f"pomo {problem}{SIZE} {mode:10s} reference {row['reference_median_s']:7.2f} s"
                f" ({row['reference_median_cpu_s']:.2f} cpu)  nco {row['nco_median_s']:7.2f} s"
                f" ({row['nco_median_cpu_s']:.2f} cpu)  ratio {row['nco_over_reference']:.2f}"
                f" ({row['nco_over_reference_cpu']:.2f} cpu)  same cost"
                f" {row['same_cost_share']:.0%}  same tour {row['same_tour_share']:.0%}",
                flush=True,
            )
    result = {
        "command": " ".join(["python", *sys.argv]),
        "device": f"cpu, {args.threads} thread(s), {platform.processor() or platform.machine()}",
        "torch": torch.__version__,
        "malloc": "nco.allocator.keep_freed_memory" if tuned else "glibc defaults",
        "repeats": args.repeats,
        "results": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
