"""Resumable decoding of a test set: `nco-eval` in parts of a fixed number of instances, each
part a results JSON, merged into one results file when all are there.

A decode of 10,000 instances by beam search takes an hour or more on a CPU; in parts, an
interruption loses at most one part, and a rerun decodes only the parts not yet written (or
written from another epoch's checkpoint).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path


def decode_command(
    checkpoint: Path,
    data: str,
    decoder: list[str],
    out: Path,
    limit: int | None,
    offset: int = 0,
) -> list[str]:
    """The `nco-eval` command line that decodes `data` (its first `limit` instances after
    `offset`) with the overrides `decoder` into `out`."""
    cmd = [
        sys.executable,
        "-m",
        "nco.cli.evaluate",
        f"checkpoint={checkpoint}",
        f"data={data}",
        *decoder,
        f"out={out}",
        "progress=false",
    ]
    return cmd + ([f"limit={limit}"] if limit else []) + ([f"offset={offset}"] if offset else [])


def checkpoint_epoch(path: Path) -> int | None:
    """The training epoch recorded in a best.pt's metadata."""
    from nco import checkpoint

    return checkpoint.load(path).meta.get("epoch")


def is_current(out: Path, epoch: int | None, limit: int | None, offset: int = 0) -> bool:
    """Whether results file `out` decoded the best.pt of `epoch` on the same instances (`limit`
    after `offset`; files written before nco-eval recorded them count as limited to their
    instance count, from the first)."""
    if not out.is_file():
        return False
    result = json.loads(out.read_text())
    info = result["info"]
    if info["checkpoint_meta"].get("epoch") != epoch or info.get("offset", 0) != offset:
        return False
    return info.get("limit", result["num_instances"] if limit else -1) == limit


def instances_to_decode(data: str, limit: int | None) -> int:
    """How many instances of test set `data` an evaluation limited to `limit` decodes."""
    from nco.datasets import load_dataset

    size = len(load_dataset(data))
    return size if limit is None else min(limit, size)


def decode_in_parts(
    checkpoint: Path,
    epoch: int | None,
    data: str,
    decoder: list[str],
    out: Path,
    limit: int | None,
    chunk: int,
    cwd: Path,
) -> bool:
    """Decode into `out` in parts of `chunk` instances, each a results JSON in `<out>.parts/`:
    a rerun after an interruption decodes only the parts not yet written (or written from
    a best.pt of another `epoch`). When all are there they are merged into `out` and removed;
    a rerun after the merge (of the same epoch and instances) decodes nothing and returns
    False. True when `out` was written."""
    from nco.results import Results, read_results, write_results

    if chunk < 1:
        raise ValueError(f"chunk {chunk}: expected a number of instances >= 1.")
    total = instances_to_decode(data, limit)
    folder = out.with_suffix(".parts")
    if not folder.exists() and is_current(out, epoch, limit):
        print(f"{out.name}: all {total} instances decoded already (delete it to decode again)")
        return False
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for start in range(0, total, chunk):
        size = min(chunk, total - start)
        part = folder / f"{start:06d}.json"
        if not is_current(part, epoch, size, start):
            print(f"{out.name}: instances {start}..{start + size - 1} of {total}", flush=True)
            cmd = decode_command(checkpoint, data, decoder, part, size, start)
            subprocess.run(cmd, cwd=cwd, check=True)
        files.append(part)
    parts = [read_results(f) for f in files]
    wall = sum(p.wall_time_s for p in parts)
    lists = {
        field: None
        if any(getattr(p, field) is None for p in parts)
        else [v for p in parts for v in getattr(p, field)]
        for field in ("references", "solutions")
    }
    first = parts[0]
    info = {**first.info, "limit": limit, "offset": 0, "parts": len(parts)}
    info["instances_per_s"] = total / max(wall, 1e-9)
    whole = Results(
        problem=first.problem,
        dataset=first.dataset,
        method=first.method,
        objectives=[v for p in parts for v in p.objectives],
        wall_time_s=wall,
        info=info,
        **lists,
    )
    write_results(whole, out)
    shutil.rmtree(folder)
    return True
