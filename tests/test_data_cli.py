"""The installed `nco-data` and `nco-references` as a user runs them, from an unrelated
directory: standard and custom sets, expert data, reference costs; refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from nco.datagen import CHECKSUMS
from nco.datasets import load_dataset
from nco.problems.tsp.solvers import tour_length

BIN = Path(sys.executable).parent
ENV = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}


def run(name: str, *args: str, cwd: Path, status: int = 0) -> subprocess.CompletedProcess:
    """Run the console script `name` in `cwd`; fail with its stderr tail unless it exits with
    `status`."""
    exe = BIN / name
    assert exe.is_file(), f"{exe}: console script not installed (pip install -e .)"
    proc = subprocess.run(
        [str(exe), *args], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == status, f"{name} {args}:\n{proc.stderr[-3000:]}"
    return proc


def test_generate_writes_a_named_set_once_and_custom_sets(tmp_path: Path) -> None:
    """A named set is written with its published checksum and kept on a rerun; a custom set
    loads as a dataset; a custom CVRP size without a standard capacity is a usage error."""
    first = run("nco-data", "generate", "--out", "sets", "--only", "kool:tsp20_test", cwd=tmp_path)
    assert f"{CHECKSUMS['kool:tsp20_test']}  written" in first.stdout
    again = run("nco-data", "generate", "--out", "sets", "--only", "kool:tsp20_test", cwd=tmp_path)
    assert "exists, kept" in again.stdout
    assert len(load_dataset(tmp_path / "sets" / "kool_tsp20_test.npz")) == 10_000
    run("nco-data", "generate", "--out", "sets", "--custom", "tsp", "12", "3", "5", cwd=tmp_path)
    custom = load_dataset(tmp_path / "sets" / "custom_tsp12_n3_seed5.npz")
    assert len(custom) == 3 and custom.arrays["coords"].shape == (3, 12, 2)
    bad = run("nco-data", "generate", "--custom", "cvrp", "33", "1", "1", cwd=tmp_path, status=2)
    assert "--custom:" in bad.stderr


def test_expert_data_and_references_of_a_file(tmp_path: Path) -> None:
    """`nco-data expert` writes optimal TSP7 tours (cost = tour length); `nco-references`
    solves a file's instances, writes the manifest entry, and refuses to continue with
    another seed, naming the field."""
    run("nco-data", "expert", "--problem", "tsp", "--size", "7", "--num", "3", "--solver",
        "exact", "--chunk", "2", "--out", "e.npz", cwd=tmp_path)  # fmt: skip
    with np.load(tmp_path / "e.npz") as data:
        lengths = [tour_length(c, t) for c, t in zip(data["coords"], data["tours"], strict=True)]
        np.testing.assert_allclose(lengths, data["reference_costs"])
        coords = data["coords"]
    np.savez(tmp_path / "plain.npz", coords=coords)
    refs = ["--data", "plain.npz", "--problem", "tsp", "--solver", "exact", "--time-limit", "5"]
    refs += ["--work-dir", "work", "--out-dir", "refs", "--no-progress"]
    run("nco-references", *refs, cwd=tmp_path)
    (entry,) = json.loads((tmp_path / "refs" / "manifest.json").read_text())["entries"]
    assert entry["num_instances"] == 3 and entry["proven_optimal"] == 3
    with np.load(tmp_path / "refs" / entry["file"]) as saved:
        np.testing.assert_allclose(saved["costs"], lengths)
    refused = run("nco-references", *refs, "--seed", "7", cwd=tmp_path, status=1)
    assert "field 'seed'" in refused.stderr and "nco-references:" in refused.stderr
