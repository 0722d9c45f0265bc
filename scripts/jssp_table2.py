"""The JSSP results of the Gumbeldore paper's Table 2 for one checkpoint: gap and time per
Taillard size group and decoder, as markdown and JSON.

    python scripts/jssp_table2.py checkpoint=best.pt out=table2
    python scripts/jssp_table2.py checkpoint=best.pt out=t --groups 15x15 --methods greedy sbs16 \\
        --limit 5 --repeats 5 --baseline data/results/jssp_cpsat_15x15_60s.json
    python scripts/jssp_table2.py checkpoint=best.pt out=t --methods \\
        --merge t_greedy.json t_gd.json --baseline cpsat_*.json --published   # assemble only

Every cell is one `nco.evaluation.run` (the nco-eval command) on `taillard:<group>`: the gap is
the mean over instances of (makespan - ub) / ub with ub the best-known upper bound
(data/jssp/taillard_bounds.csv), the time is the decoding wall time of the whole group. Options
are `--key value` or `key=value`. Writes `<out>.md` and `<out>.json`.

`--label` names the checkpoint in the JSON instead of `--checkpoint` (say, the shipped file a
temporary copy was made of). `--merge` adds the rows of earlier outputs of this script for the
same checkpoint (their `checkpoint` field must start with `--checkpoint`), so that a table can
be assembled from runs made at different times; `--arm NAME FILE...` adds the rows of another
checkpoint's outputs (one checkpoint per arm, e.g. the SI WOR run's), labelled "NAME, <row>";
`--published` adds the paper's Table 2 rows (data/jssp/taillard_table2_published.json) as
references, labelled "(published)".

`--chunk N` decodes each cell N instances per nco-eval run (offset/limit) and keeps every run's
results in `<out>.parts/`, so a stopped cell continues from its last finished chunk when the
same command is rerun (a 100x20 cell takes hours on one CPU thread). The cell is the
concatenation of its chunks, its time their sum; the folder is removed once `<out>.json` is
written. A kept chunk is taken only for the same checkpoint file (its meta and sha256, not its
path), seed and instances, so a cell begun on a copy continues from the file elsewhere (a GPU
window's checkout). `--shard I/N` (with `--chunk`) decodes only every N-th chunk of the command
from the I-th on, and writes no table: N such processes side by side fill `<out>.parts/` in
parallel (the GPU is latency-bound on one instance), and the same command without `--shard` then
merges them.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from nco import checkpoint
from nco.evaluation import run
from nco.inference import check_checkpoint
from nco.paths import CONFIG_DIR
from nco.problems.jssp.taillard import taillard_names
from nco.results import Results, read_results, write_results

GROUPS = ("15x15", "20x15", "20x20", "30x15", "30x20", "50x15", "50x20", "100x20")
METHODS: dict[str, tuple[str, list[str]]] = {  # name: (row label, nco-eval overrides)
    "greedy": ("greedy", ["search=greedy"]),
    "beam16": ("beam 16", ["search=beam", "search.beam_width=16"]),
    "sbs16": ("SBS 16, p=0.8", ["search=sbs", "search.beam_width=16", "search.top_p=0.8"]),
    "gd32x4": (
        "GD 32x4, p_min=0.8",
        [
            "search=gumbeldore",
            "search.beam_width=32",
            "search.rounds=4",
            "search.sigma=0.05",
            "search.p_min=0.8",
        ],
    ),
    # Appendix C.3 / Table 5 of the paper: the nucleus constant at p=0.8 in every round, where
    # Table 2's caption (the row above, the issue's target) grows it from p_min=0.8 to 1.
    "gd32x4p": (
        "GD 32x4, p=0.8",
        [
            "search=gumbeldore",
            "search.beam_width=32",
            "search.rounds=4",
            "search.sigma=0.05",
            "search.top_p=0.8",
        ],
    ),
}
# The stochastic rows run `--repeats` times, with seeds seed, seed + 1, ...
STOCHASTIC = ("sbs16", "gd32x4", "gd32x4p")
PUBLISHED = Path(__file__).resolve().parents[1] / "data/jssp/taillard_table2_published.json"


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Command-line options; `key=value` tokens whose key names an option are read as `--key
    value`, so a value holding "=" (a `--label` such as "best.pt (= epoch 51)") stays whole."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, help="best.pt of a JSSP policy")
    parser.add_argument(
        "--label", default=None, help="the JSON's `checkpoint` field (default: --checkpoint)"
    )
    parser.add_argument("--out", required=True, help="output stem: writes <out>.md, <out>.json")
    parser.add_argument("--groups", nargs="+", default=list(GROUPS), help="Taillard sizes JxM")
    parser.add_argument("--methods", nargs="*", default=list(METHODS), help="rows to run")
    parser.add_argument("--limit", type=int, default=None, help="first N instances per group")
    parser.add_argument("--repeats", type=int, default=1, help="runs of the stochastic decoders")
    parser.add_argument("--batch-size", type=int, default=None, help="instances per decoder call")
    parser.add_argument(
        "--chunk", type=int, default=None, help="instances per nco-eval run, kept in <out>.parts/"
    )
    parser.add_argument(
        "--shard", default=None, help="I/N: decode only chunks I, I+N, ... into <out>.parts/"
    )
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--baseline", nargs="*", default=[], help="results JSONs added as rows")
    parser.add_argument("--merge", nargs="*", default=[], help="earlier outputs of this script")
    parser.add_argument(
        "--arm",
        nargs="+",
        action="append",
        default=[],
        metavar=("NAME", "FILE"),
        help="another checkpoint's outputs of this script, as rows 'NAME, <row>' (repeatable)",
    )
    parser.add_argument("--published", action="store_true", help="add the paper's Table 2 rows")
    options = {opt for action in parser._actions for opt in action.option_strings}
    tokens: list[str] = []
    for token in argv:
        key, sep, value = token.partition("=")
        option = f"--{key.replace('_', '-')}"
        if sep and not token.startswith("-") and option in options:
            tokens += [option, value]
        else:
            tokens.append(token)
    args = parser.parse_args(tokens)
    for name, values, valid in (
        ("groups", args.groups, GROUPS),
        ("methods", args.methods, METHODS),
    ):
        unknown = [v for v in values if v not in valid]
        if unknown:
            raise ValueError(f"jssp_table2: unknown --{name} {unknown}; expected some of {valid}.")
    if any(len(arm) < 2 for arm in args.arm):
        raise ValueError("jssp_table2: --arm needs a name and at least one output file.")
    if any(v is not None and v < 1 for v in (args.limit, args.chunk)) or args.repeats < 1:
        raise ValueError("jssp_table2: expected --limit, --chunk and --repeats >= 1.")
    if args.shard is not None:
        index, sep, count = args.shard.partition("/")
        if not (sep and index.isdigit() and count.isdigit() and int(index) < int(count)):
            raise ValueError(f"jssp_table2: --shard {args.shard}: expected I/N with 0 <= I < N.")
        if args.chunk is None:
            raise ValueError("jssp_table2: --shard needs --chunk (the shards share <out>.parts/).")
        args.shard = (int(index), int(count))
    return args


def evaluate(args: argparse.Namespace, group: str, method: str, seed: int) -> Results:
    """One nco-eval run of `method` on the Taillard group, or (`--chunk`) its chunks joined."""
    if args.chunk is None:
        return run(compose_cell(args, group, method, seed, 0, args.limit))
    return joined([chunk(args, group, method, seed, *span) for span in spans(args, group)])


def spans(args: argparse.Namespace, group: str) -> list[tuple[int, int]]:
    """(offset, limit) of each `--chunk` of a cell on the group."""
    size = len(taillard_names(group))
    count = min(args.limit or size, size)
    return [(offset, min(args.chunk, count - offset)) for offset in range(0, count, args.chunk)]


def repeats_of(args: argparse.Namespace, method: str) -> int:
    """Runs of a method: `--repeats` for the stochastic decoders, one for the others."""
    return args.repeats if method in STOCHASTIC else 1


def runs(args: argparse.Namespace) -> list[tuple[str, str, int]]:
    """(method, group, seed) of every run the command decodes, in the order it decodes them; the
    table and `--shard` both enumerate this list, so a shard's chunks are the table's."""
    return [
        (method, group, args.seed + r)
        for method in args.methods
        for group in args.groups
        for r in range(repeats_of(args, method))
    ]


def decode_shard(args: argparse.Namespace) -> dict[str, Any]:
    """`--shard I/N`: decode the command's chunks I, I+N, ... (in the order the table runs them)
    into `<out>.parts/`; returns how many of all its chunks are still missing there."""
    index, count = args.shard
    jobs = [
        (group, method, seed, *span)
        for method, group, seed in runs(args)
        for span in spans(args, group)
    ]
    mine = jobs[index::count]
    for job in mine:
        chunk(args, *job)
    missing = sum(not part_path(args, *job).exists() for job in jobs)
    print(
        f"shard {index}/{count}: {len(mine)} chunks done; {missing} of the "
        f"command's {len(jobs)} still missing in {parts_dir(args)}"
        + ("" if missing else "; rerun without --shard to write the table")
    )
    return {"shard": list(args.shard), "chunks": len(jobs), "missing": missing}


def chunk(
    args: argparse.Namespace, group: str, method: str, seed: int, offset: int, limit: int
) -> Results:
    """Instances offset..offset+limit-1 of a cell: read from `<out>.parts/` when an earlier run
    of the same command decoded them, else decoded now and written there."""
    path = part_path(args, group, method, seed, offset, limit)
    if not path.exists():
        results = run(compose_cell(args, group, method, seed, offset, limit))
        results.info["checkpoint_sha256"] = checkpoint_sha256(args.checkpoint)
        write_results(results, path)
        return results
    results = read_results(path)
    expected = {
        "checkpoint_meta": checkpoint_meta(args.checkpoint),
        "seed": seed,
        "offset": offset,
        "limit": limit,
    }
    if "checkpoint_sha256" in results.info:  # parts written before 2026-12-07 lack it
        expected["checkpoint_sha256"] = checkpoint_sha256(args.checkpoint)
    differ = [key for key, value in expected.items() if results.info.get(key) != value]
    if results.dataset != f"taillard:{group}" or differ:
        raise ValueError(
            f"jssp_table2: {path} is no chunk of this command (its dataset {results.dataset}, "
            f"expected taillard:{group}; fields that differ: {differ}); remove it to decode "
            "those instances again."
        )
    return results


@functools.cache
def checkpoint_sha256(path: str) -> str:
    """The checkpoint file's content digest: a chunk belongs to the file, not to its path, so a
    cell started on a copy (say, on the CPU) continues from the same file elsewhere (a GPU
    window's checkout)."""
    return hashlib.sha256(check_checkpoint(path, "jssp_table2").read_bytes()).hexdigest()


def merge_sha256(args: argparse.Namespace) -> str | None:
    """The sha256 `--merge` files' marks are checked against: the checkpoint's, when there is
    something to merge and the file is there (an assembly-only run may name a path alone)."""
    merging = args.merge and Path(args.checkpoint).is_file()
    return checkpoint_sha256(args.checkpoint) if merging else None


@functools.cache
def checkpoint_meta(path: str) -> Any:
    """The checkpoint's meta as a results JSON stores it: with the sha256 where a chunk has one,
    tells a chunk of this file (at any path) from one decoded with another file."""
    return json.loads(json.dumps(checkpoint.load(check_checkpoint(path, "jssp_table2")).meta))


def part_path(
    args: argparse.Namespace, group: str, method: str, seed: int, offset: int, limit: int
) -> Path:
    """The file of one chunk in `<out>.parts/`."""
    return parts_dir(args) / f"{method}_{group}_seed{seed}_{offset}+{limit}.json"


def parts_dir(args: argparse.Namespace) -> Path:
    """Where `--chunk` keeps its finished chunks: `<out>.parts/`."""
    out = Path(args.out)
    return out.with_name(out.name + ".parts")


def joined(chunks: list[Results]) -> Results:
    """The chunks of one cell as one result: instances concatenated, wall times summed."""
    first = chunks[0]
    references = None
    if all(c.references is not None for c in chunks):
        references = [r for c in chunks for r in c.references or []]
    return Results(
        problem=first.problem,
        dataset=first.dataset,
        method=first.method,
        objectives=[v for c in chunks for v in c.objectives],
        references=references,
        wall_time_s=sum(c.wall_time_s for c in chunks),
        names=[n for c in chunks for n in c.names or []] if all(c.names for c in chunks) else None,
        info={**first.info, "offset": 0, "limit": sum(c.num_instances for c in chunks)},
    )


def compose_cell(
    args: argparse.Namespace, group: str, method: str, seed: int, offset: int, limit: int | None
) -> DictConfig:
    """The nco-eval config of one cell (or of instances offset.. of it), from evaluate.yaml."""
    overrides = [
        f"checkpoint={args.checkpoint}",
        f"data=taillard:{group}",
        f"seed={seed}",
        f"device={args.device}",
        "progress=false",
        *METHODS[method][1],
    ]
    if offset:
        overrides.append(f"offset={offset}")
    if limit is not None:
        overrides.append(f"limit={limit}")
    if args.batch_size is not None:
        overrides.append(f"batch_size={args.batch_size}")
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return compose(config_name="evaluate", overrides=overrides)


def cell(runs: list[Results]) -> dict[str, Any]:
    """Mean gap (percent) and mean group time over repeated runs, plus the runs themselves."""
    return summary(
        [
            {
                "seed": r.info.get("seed"),
                "names": r.names,
                "objectives": r.objectives,
                "references": r.references,
                "gaps": r.gaps,
                "mean_gap": r.mean_gap,
                "wall_time_s": r.wall_time_s,
            }
            for r in runs
        ]
    )


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """A cell from its runs' records: their mean gap and mean time, and the records."""
    return {
        "gap": float(np.mean([run["mean_gap"] for run in runs])),
        "time_s": float(np.mean([run["wall_time_s"] for run in runs])),
        "runs": runs,
    }


def baseline_rows(paths: list[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """Rows from results JSONs of Taillard groups (e.g. nco-baseline CP-SAT runs)."""
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for path in paths:
        res = read_results(path)
        if not res.dataset.startswith("taillard:") or res.mean_gap is None:
            raise ValueError(f"jssp_table2: {path} must hold a taillard:<group> set with gaps.")
        limit = res.info.get("time_limit")
        timed = limit is not None and not res.method.startswith("pdr")  # a rule runs untimed
        label = f"{res.method}, {limit:g} s" if timed else res.method
        rows.setdefault(label, {})[res.dataset.split(":", 1)[1]] = cell([res])
    return rows


def joined_repeats(
    label: str, group: str, old: dict[str, Any], new: dict[str, Any]
) -> dict[str, Any]:
    """One stochastic cell from two files' runs of other seeds (repeats run apart, e.g. over
    sessions): the runs together, their mean gap and mean time, both files named."""
    seeds = [run["seed"] for run in old["runs"] + new["runs"]]
    if label not in {METHODS[m][0] for m in STOCHASTIC} or len(set(seeds)) < len(seeds):
        raise ValueError(
            f"jssp_table2: {label} on {group} is in two --merge files ({old['source']}, "
            f"{new['source']}); only a stochastic row's runs of different seeds join."
        )
    if any(run["names"] != old["runs"][0]["names"] for run in new["runs"]):
        raise ValueError(
            f"jssp_table2: {label} on {group}: {new['source']} ran other instances than "
            f"{old['source']}."
        )
    runs = sorted(old["runs"] + new["runs"], key=lambda run: run["seed"])
    return {**summary(runs), "source": f"{old['source']}, {new['source']}"}


SHA_MARK = re.compile(r"sha256 ([0-9a-f]{6,64})")


def same_file(label: str, checkpoint: str, sha256: str | None) -> bool:
    """Whether an output's `checkpoint` label names `checkpoint`: it starts with that path and,
    where the label marks the file's sha256 (`--label "best.pt (= epoch 99, sha256 cb52b44c...)"`)
    and `sha256` is known, the mark is its prefix, so a shipped path's older files stay out."""
    mark = SHA_MARK.search(label)
    return label.startswith(checkpoint) and (
        mark is None or sha256 is None or sha256.startswith(mark.group(1))
    )


def merged_rows(
    paths: list[str], checkpoint: str, sha256: str | None = None
) -> dict[str, dict[str, dict[str, Any]]]:
    """Rows of earlier outputs of this script for `checkpoint` (`same_file`), each cell naming
    its file(s); a stochastic cell in several files joins their runs (`joined_repeats`)."""
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for path in paths:
        data = json.loads(Path(path).read_text())
        if not isinstance(data, dict) or not isinstance(data.get("table"), dict):
            raise ValueError(f"jssp_table2: {path} is no output of this script (no 'table').")
        if not same_file(str(data.get("checkpoint", "")), checkpoint, sha256):
            raise ValueError(
                f"jssp_table2: {path} holds results of checkpoint {data.get('checkpoint')!r}, "
                f"expected {checkpoint!r}" + (f" (sha256 {sha256[:8]}...)." if sha256 else ".")
            )
        for label, row in data["table"].items():
            cells = rows.setdefault(label, {})
            for group, value in row.items():
                value = {**value, "source": path}
                cells[group] = (
                    joined_repeats(label, group, cells[group], value) if group in cells else value
                )
    return rows


def arm_rows(arms: list[list[str]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Rows of other checkpoints (`--arm NAME FILE...`): each arm's files merged as `--merge`
    merges, all for the checkpoint its first file names (its whole label; where that marks a
    sha256, its path before " (" and the mark), labelled "NAME, <row>"."""
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for name, *paths in arms:
        first = json.loads(Path(paths[0]).read_text())
        owner = first.get("checkpoint") if isinstance(first, dict) else None
        if not owner:
            raise ValueError(f"jssp_table2: --arm {name}: {paths[0]} names no checkpoint.")
        mark = SHA_MARK.search(owner)
        path = owner.split(" (", 1)[0] if mark else owner
        for label, row in merged_rows(paths, path, mark.group(1) if mark else None).items():
            rows[f"{name}, {label}"] = row
    return rows


def published_rows() -> dict[str, dict[str, dict[str, Any]]]:
    """The paper's Table 2 as reference rows (gap %, the printed time kept as text)."""
    data = json.loads(PUBLISHED.read_text())
    return {
        f"{label} (published)": {g: {"gap": c["gap"], "time": c["time"]} for g, c in row.items()}
        for label, row in data["rows"].items()
    }


def fmt_time(seconds: float) -> str:
    """Seconds as the paper writes times: 4s, 1.3m, 1.5h."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


def time_text(value: dict[str, Any]) -> str:
    """A cell's time: measured seconds formatted, or a published time as printed."""
    return fmt_time(value["time_s"]) if "time_s" in value else str(value["time"])


def gap_text(value: dict[str, Any]) -> str:
    """A cell's gap, with the number of runs behind it when it is a mean of repeats."""
    runs = len(value.get("runs", []))
    return f"{value['gap']:.1f}%" + (f" (mean of {runs})" if runs > 1 else "")


def markdown(table: dict[str, dict[str, dict[str, Any]]], groups: list[str]) -> str:
    """The table in the paper's layout: one row per method, Gap and Time per group."""
    head = "| Method | " + " | ".join(f"{g} Gap | {g} Time" for g in groups) + " |"
    lines = [head, "|---|" + "---:|---:|" * len(groups)]
    for label, row in table.items():
        cells = [
            f"{gap_text(row[g])} | {time_text(row[g])}" if g in row else "- | -" for g in groups
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run every (group, method) cell, write `<out>.md` and `<out>.json`; returns the JSON."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.shard is not None:
        return decode_shard(args)
    table = {
        **merged_rows(args.merge, args.checkpoint, merge_sha256(args)),
        **arm_rows(args.arm),
        **baseline_rows(args.baseline),
    }
    decoded: dict[tuple[str, str], list[Results]] = {}
    for method, group, seed in runs(args):
        decoded.setdefault((method, group), []).append(evaluate(args, group, method, seed))
    for (method, group), results in decoded.items():
        table.setdefault(METHODS[method][0], {})[group] = cell(results)
    result = {
        "checkpoint": args.label or str(args.checkpoint),
        "groups": args.groups,
        "limit": args.limit,
        "repeats": args.repeats,
        "chunk": args.chunk,
        "methods": {METHODS[m][0]: METHODS[m][1] for m in args.methods},
        "arms": {name: paths for name, *paths in args.arm},
        "table": table,
    }
    if args.published:
        result["table"] = table = {**table, **published_rows()}
        result["published"] = str(PUBLISHED.relative_to(PUBLISHED.parents[2]))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = markdown(table, args.groups)
    out.with_suffix(".md").write_text(text)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    shutil.rmtree(parts_dir(args), ignore_errors=True)  # every chunk is in the JSON now
    print(text)
    return result


if __name__ == "__main__":
    main()
