"""Imported AM / POMO checkpoints decoded by nco against the authors' own code, same instances.

    python benchmarks/light_vs_reference.py --model am --problem tsp --size 20 --num 1000 \
        --ref /tmp/ref/am --out data/results/light/am_tsp20_greedy.json
    python benchmarks/light_vs_reference.py --model pomo --problem cvrp --size 100 --mode aug8 \
        --ref /tmp/ref/amdkd/AMDKD-POMO --out data/results/light/pomo_cvrp100_aug8.json

The authors' code (wouterkool/attention-learn-to-route; jieyibi/AMDKD's AMDKD-POMO) is a
snapshot kept outside the repository (`--ref`); its model classes are built and given the
published weights (read with torch.load(weights_only=True)); nothing of it is copied here.
Instances: Kool et al.'s test sets as nco generates them (`kool:<problem><size>_test`), the
first `--num`. Modes: `greedy` (one trajectory: AM's own first choice; POMO from start 0, i.e.
their pomo_size=1), `multistart` (POMO: all N starts), `aug8` (POMO: all N starts x 8
symmetries). Chunks are kept in `--work`, so an interrupted run continues where it stopped.
The JSON holds both mean costs, their difference and the share of instances with the same
best solution (tours compared up to start and direction, CVRP routes as a set) and with the
same best cost to 1e-4.

`--nco-from` takes nco's per-instance costs from a results JSON of the same checkpoint, set and
decoder written before (e.g. `scripts/eval_in_parts.py`'s merged output, whose instances are
in set order), so only the authors' code runs; such results JSONs keep no solutions, so the
comparison is of costs only (`same_tour_share` null). The instances whose best costs differ by
1e-4 or more are listed in the JSON (`differing`); `--recheck` decodes each of them again with
both codes on this CPU, to tell a difference of the two codes from one of the devices the given
costs were decoded on:

    python benchmarks/light_vs_reference.py --model pomo --problem tsp --size 100 --mode aug8 \
        --ref /tmp/ref/amdkd/AMDKD-POMO --nco-from data/results/light/pomo_tsp100_aug8ms_all.json \
        --work data/results/light/ref_parts --out data/results/light/pomo_tsp100_aug8_all.json \
        --recheck
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import types
from pathlib import Path

import numpy as np
import torch

from nco import checkpoint
from nco.datasets import load_dataset
from nco.decode import decode
from nco.importing import import_reference
from nco.inference import to_instances

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "models"
AM_FILES = {"tsp": "am/tsp_{n}/epoch-99.pt", "cvrp": "am/cvrp_{n}/epoch-99.pt"}
POMO_FILES = {
    "tsp": "pomo_amdkd/checkpoint-tsp-{n}.pt",
    "cvrp": "pomo_amdkd/checkpoint-cvrp-{n}.pt",
}


def _source(model: str, problem: str, size: int) -> Path:
    return SHARED / (AM_FILES if model == "am" else POMO_FILES)[problem].format(n=size)


def _arrays(problem: str, size: int, lo: int, hi: int) -> dict[str, np.ndarray]:
    data = load_dataset(f"kool:{problem}{size}_test").head(hi)
    return {k: v[lo:hi] for k, v in data.arrays.items()}


# ---------------------------------------------------------------------- the authors' code
def _reference_am(ref: Path, problem: str, src: Path, arrays: dict) -> tuple[list, list]:
    sys.path.insert(0, str(ref))
    from nets.attention_model import AttentionModel  # noqa: PLC0415 (their snapshot)
    from problems import CVRP, TSP  # noqa: PLC0415

    model = AttentionModel(
        128, 128, TSP if problem == "tsp" else CVRP, n_encode_layers=3, normalization="batch"
    )
    weights = torch.load(src, map_location="cpu", weights_only=True)["model"]
    model.load_state_dict({**model.state_dict(), **weights})
    model.eval()
    model.set_decode_type("greedy")
    if problem == "tsp":
        inp = torch.tensor(arrays["coords"], dtype=torch.float)
    else:
        cap = torch.tensor(arrays["capacity"], dtype=torch.float).view(-1, 1)
        inp = {
            "loc": torch.tensor(arrays["locs"], dtype=torch.float),
            "demand": torch.tensor(arrays["demands"], dtype=torch.float) / cap,
            "depot": torch.tensor(arrays["depot"], dtype=torch.float),
        }
    with torch.no_grad():
        cost, _, pi = model(inp, return_pi=True)
    tours = []
    for row in pi.tolist():
        while problem == "cvrp" and row and row[-1] == 0:
            row.pop()  # their batch pads finished rows with depot visits
        tours.append(row)
    return cost.tolist(), tours


def _reference_pomo(ref: Path, problem: str, src: Path, arrays: dict, mode: str) -> tuple:
    sub = ref / ("TSP" if problem == "tsp" else "CVRP")
    sys.path[:0] = [str(sub / "POMO"), str(sub)]
    sys.modules.setdefault("rpy2", types.ModuleType("rpy2"))  # only their data generator uses R
    sys.modules.setdefault("rpy2.robjects", types.ModuleType("rpy2.robjects"))
    params = {
        "embedding_dim": 64,
        "sqrt_embedding_dim": 64**0.5,
        "encoder_layer_num": 6,
        "qkv_dim": 8,
        "head_num": 8,
        "logit_clipping": 10,
        "ff_hidden_dim": 512,
        "eval_type": "argmax",
    }
    if problem == "tsp":
        from TSPEnv import TSPEnv as Env  # noqa: PLC0415 (their snapshot)
        from TSPModel import TSPModel as Model  # noqa: PLC0415

        size = arrays["coords"].shape[1]
        copy = torch.tensor(arrays["coords"], dtype=torch.float)
    else:
        from CVRPEnv import CVRPEnv as Env  # noqa: PLC0415
        from CVRPModel import CVRPModel as Model  # noqa: PLC0415

        size = arrays["locs"].shape[1]
        cap = torch.tensor(arrays["capacity"], dtype=torch.float).view(-1, 1)
        copy = (
            torch.tensor(arrays["depot"], dtype=torch.float)[:, None],
            torch.tensor(arrays["locs"], dtype=torch.float),
            torch.tensor(arrays["demands"], dtype=torch.float) / cap,
        )
    pomo = 1 if mode == "greedy" else size
    aug = 8 if mode == "aug8" else 1
    env = Env(problem_size=size, pomo_size=pomo, distribution={}, load_raw=None)
    model = Model(**params)
    weights = torch.load(src, map_location="cpu", weights_only=True)["model_state_dict"]
    model.load_state_dict(weights)
    model.eval()
    batch = len(copy) if problem == "tsp" else len(copy[0])
    with torch.no_grad():
        env.load_problems(batch, aug, copy=copy)
        reset_state, _, _ = env.reset()
        model.pre_forward(reset_state)
        state, reward, done = env.pre_step()
        while not done:
            selected, _ = model(state)
            state, reward, done = env.step(selected)
    cost = -reward.view(aug, batch, pomo).permute(1, 0, 2).reshape(batch, -1)
    best = cost.min(1)
    seqs = env.selected_node_list.view(aug, batch, pomo, -1).permute(1, 0, 2, 3)
    seqs = seqs.reshape(batch, aug * pomo, -1)
    tours = []
    for i in range(batch):
        row = seqs[i, best.indices[i]].tolist()
        if problem == "cvrp":
            row = row[1:]  # their first move is the depot
            while row and row[-1] == 0:
                row.pop()
        tours.append(row)
    return best.values.tolist(), tours


def _reference(args: argparse.Namespace, src: Path, arrays: dict) -> tuple[list, list]:
    """The authors' best costs and solutions of these instances, for the model asked for."""
    if args.model == "am":
        return _reference_am(args.ref, args.problem, src, arrays)
    return _reference_pomo(args.ref, args.problem, src, arrays, args.mode)


def _canonical(problem: str, tour: list[int]) -> tuple:
    """A solution independent of where a tour starts and which way it runs (multi-start finds
    the same tour from several starts): TSP from node 0 in the direction of its smaller
    neighbour; CVRP as the set of routes, each in its smaller direction."""
    if problem == "tsp":
        i = tour.index(0) if 0 in tour else 0
        t = tour[i:] + tour[:i]
        return tuple(t if len(t) < 3 or t[1] <= t[-1] else [t[0], *t[:0:-1]])
    routes, cur = [], []
    for a in [*tour, 0]:
        if a == 0:
            if cur:
                routes.append(tuple(min(cur, cur[::-1])))
            cur = []
        else:
            cur.append(a)
    return tuple(sorted(routes))


# ---------------------------------------------------------------------------------- nco
def _nco(ckpt: Path, problem: str, arrays: dict, mode: str, size: int) -> tuple[list, list]:
    loaded = checkpoint.load(ckpt)
    instances = to_instances(loaded.env, arrays, "kool")
    cfg: dict = {"method": "greedy"}
    if loaded.model["_target_"].endswith(("POMOTSPPolicy", "POMOCVRPPolicy")):
        cfg["starts"] = 1 if mode == "greedy" else size
    if mode == "aug8":
        cfg["augment"] = 8
    with torch.no_grad():
        sols = decode(loaded.policy, loaded.env, instances, cfg)
    best = sols.best()
    costs = loaded.env.cost(best.objective).tolist()
    tours = [[a for a in row if a >= 0] for row in best.actions.tolist()]
    return costs, tours


def _nco_from(path: Path, problem: str, size: int, mode: str, num: int) -> tuple[list, Path]:
    """The first `num` per-instance costs of an nco results JSON, checked to be of this set and
    decoder, and the checkpoint they were decoded with."""
    data = json.loads(path.read_text())
    search = data.get("info", {}).get("search", {})
    want = {"augment": 8 if mode == "aug8" else 1, "starts": 1 if mode == "greedy" else size}
    if data.get("dataset") != f"kool:{problem}{size}_test" or data["info"].get("offset"):
        raise SystemExit(f"{path}: expected results on kool:{problem}{size}_test from instance 0.")
    if search.get("method") != "greedy" or any(search.get(k) != v for k, v in want.items()):
        raise SystemExit(f"{path}: expected greedy with {want}, got {search}.")
    costs = data["objectives"]
    if not data["info"].get("checkpoint"):
        raise SystemExit(f"{path}: expected info.checkpoint, the file the costs were decoded with.")
    if len(costs) < num:
        raise SystemExit(f"{path}: {len(costs)} instances, fewer than --num {num}.")
    return [float(c) for c in costs[:num]], ROOT / data["info"]["checkpoint"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=("am", "pomo"), required=True)
    parser.add_argument("--problem", choices=("tsp", "cvrp"), required=True)
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--mode", choices=("greedy", "multistart", "aug8"), default="greedy")
    parser.add_argument("--num", type=int, default=10_000)
    parser.add_argument("--chunk", type=int, default=500)
    parser.add_argument("--ref", type=Path, required=True, help="the authors' code snapshot")
    parser.add_argument("--work", type=Path, default=Path("/tmp/light_work"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--nco-from", type=Path, help="nco's costs from this results JSON")
    parser.add_argument(
        "--recheck", action="store_true", help="decode the differing instances again, both codes"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    src = _source(args.model, args.problem, args.size)
    tag = f"{args.model}_{args.problem}{args.size}_{args.mode}" + ("_ref" if args.nco_from else "")
    work = args.work / tag
    work.mkdir(parents=True, exist_ok=True)
    given, ckpt = None, work / "nco.pt"
    if args.nco_from:  # a recheck decodes with the file the given costs came from
        given, ckpt = _nco_from(args.nco_from, args.problem, args.size, args.mode, args.num)
    elif not ckpt.exists():
        import_reference(src, f"{args.model}_{args.problem}", ckpt, args.size)
    times = {"reference_s": 0.0, "nco_s": 0.0}
    for lo in range(0, args.num, args.chunk):
        hi = min(lo + args.chunk, args.num)
        part = work / f"{lo}_{hi}.json"
        if part.exists():
            continue
        arrays = _arrays(args.problem, args.size, lo, hi)
        start = time.perf_counter()
        ref = _reference(args, src, arrays)
        mid = time.perf_counter()
        if given is None:
            own = _nco(ckpt, args.problem, arrays, args.mode, args.size)
        else:  # costs only: the reference's tours are not kept either
            ref, own = (ref[0], [None] * len(ref[0])), (given[lo:hi], [None] * len(ref[0]))
        end = time.perf_counter()
        part.write_text(
            json.dumps({"ref": ref, "nco": own, "reference_s": mid - start, "nco_s": end - mid})
        )
        print(f"{tag}: {hi}/{args.num}", flush=True)
    ref_cost, nco_cost, same_tour, differing = [], [], 0, []
    for lo in range(0, args.num, args.chunk):
        part = json.loads((work / f"{lo}_{min(lo + args.chunk, args.num)}.json").read_text())
        times["reference_s"] += part["reference_s"]
        times["nco_s"] += part["nco_s"]
        for rc, rt, oc, ot in zip(*part["ref"], *part["nco"], strict=True):
            ref_cost.append(rc)
            nco_cost.append(oc)
            if given is None:
                same_tour += _canonical(args.problem, rt) == _canonical(args.problem, ot)
            if abs(rc - oc) >= 1e-4:
                differing.append({"index": len(ref_cost) - 1, "reference": rc, "nco": oc})
    for row in differing if args.recheck else []:
        arrays = _arrays(args.problem, args.size, row["index"], row["index"] + 1)
        row["reference_again"] = _reference(args, src, arrays)[0][0]
        row["nco_this_cpu"] = _nco(ckpt, args.problem, arrays, args.mode, args.size)[0][0]
    n = len(ref_cost)
    result = {
        "model": args.model,
        "problem": args.problem,
        "size": args.size,
        "mode": args.mode,
        "dataset": f"kool:{args.problem}{args.size}_test",
        "num_instances": n,
        "checkpoint": str(src.relative_to(SHARED.parent)),
        "reference_mean_cost": float(np.mean(ref_cost)),
        "nco_mean_cost": float(np.mean(nco_cost)),
        "mean_cost_difference": float(np.mean(nco_cost) - np.mean(ref_cost)),
        "same_tour_share": same_tour / n if given is None else None,
        "same_cost_share": (n - len(differing)) / n,
        "differing": differing,
        **times,
        "nco_from": None if args.nco_from is None else str(args.nco_from),
        "device": "cpu, 1 thread",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
