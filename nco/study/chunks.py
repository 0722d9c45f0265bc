"""Training in chunks: `nco-train` in a background process per chunk of epochs, with the code
version and host of each chunk recorded beside the run (`chunks.jsonl`).

A chunk ends when its epoch cap is reached or its process is killed; either way the run's
`checkpoints/last.ckpt` keeps the finished epochs, so launching the same run again continues
it. Recording the commit per chunk names the code behind every epoch of a long study.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from nco.paths import SOURCE_ROOT

CODE_FOLDERS = ("nco", "problems", "models", "configs")  # what a '+dirty' commit differs in


def code_checkout(cwd: Path) -> Path:
    """The checkout whose code a chunk started in `cwd` runs: `python -m nco.cli.train`
    imports `cwd/nco` when there is one (e.g. a worktree kept for a long study), else the
    installed nco."""
    return cwd if (cwd / "nco" / "__init__.py").is_file() else SOURCE_ROOT


def git_commit(checkout: Path = SOURCE_ROOT) -> str:
    """The commit of nco's source checkout, with '+dirty' when tracked code differs from it;
    `nco <version>` for an installed nco outside any checkout; 'unrecorded' for a copy of the
    sources that is neither (e.g. a GPU machine's copy of the working tree, without git)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=checkout, capture_output=True, text=True
        )
    except FileNotFoundError:  # no git on this machine
        head = None
    if head is None or head.returncode != 0:
        try:
            return f"nco {importlib.metadata.version('nco')}"
        except importlib.metadata.PackageNotFoundError:
            return "unrecorded"
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", *CODE_FOLDERS], cwd=checkout)
    return head.stdout.strip() + ("+dirty" if dirty.returncode else "")


def host() -> dict:
    """The CPU model and whether it has bf16 matrix units: epoch times differ between hosts."""
    path = Path("/proc/cpuinfo")
    first = path.read_text().split("\n\n")[0] if path.is_file() else ""  # processor 0
    fields = {
        k.strip(): v.strip()
        for k, v in (ln.split(":", 1) for ln in first.splitlines() if ":" in ln)
    }
    flags = fields.get("flags", "").split()
    bf16 = any(f in flags for f in ("avx512_bf16", "amx_bf16"))
    return {"cpu": fields.get("model name", ""), "bf16_units": bf16}


def chunk_env(threads: int, cache: Path | None) -> dict[str, str]:
    """The environment of a chunk: its torch threads and, when given, the folder of cached
    validation references (`NCO_CACHE_DIR`; a study commits it, so that a restart on a fresh
    machine does not solve its validation set again)."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    env["PYTHONWARNINGS"] = "ignore"
    if cache is not None:
        env["NCO_CACHE_DIR"] = str(cache)
    return env


def launch(
    folder: Path,
    args: list[str],
    threads: int,
    cwd: Path,
    cache: Path | None = None,
    log: Path | None = None,
) -> subprocess.Popen:
    """Start one chunk of `nco-train args` in the background in its own session (so that
    killing its group ends it whole), its output appended to `log` (default
    `<folder>/train.log`) after a line with the date and command."""
    folder.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "nco.cli.train", *args]
    with open(log or folder / "train.log", "a") as out:
        out.write(f"\n# {datetime.datetime.now().isoformat(timespec='seconds')} {' '.join(cmd)}\n")
        out.flush()
        return subprocess.Popen(
            cmd,
            cwd=cwd,
            env=chunk_env(threads, cache),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def record_chunk(folder: Path, start: int, end: int, t0: float, commit: str) -> None:
    """Append a chunk's code version (at its launch), epochs `start..end`, wall time since
    `t0`, date and host to `<folder>/chunks.jsonl`."""
    entry = {
        "commit": commit,
        "epochs": [start, end],
        "wall_s": round(time.time() - t0, 1),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        **host(),
    }
    with open(folder / "chunks.jsonl", "a") as f:
        f.write(json.dumps(entry) + "\n")


def read_chunks(folder: Path) -> list[dict]:
    """The chunks recorded in `<folder>/chunks.jsonl`, oldest first ([] when none)."""
    path = folder / "chunks.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
