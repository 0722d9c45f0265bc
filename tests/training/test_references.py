"""Validation references: solved in parallel once, then read from the content-keyed cache."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from nco.problems.tsp import TSPEnv
from nco.problems.tsp.solvers import solve_exact
from nco.training import references

SOLVER = "tsp:exact"


def instances(seed: int, n: int = 6):
    return TSPEnv(7).generate(n, torch.Generator().manual_seed(seed))


def test_costs_are_the_solvers_and_cached(monkeypatch, tmp_path) -> None:
    """Parallel costs equal the solver's; a second call reads the cache (solver not run)."""
    monkeypatch.setenv("NCO_CACHE_DIR", str(tmp_path))
    inst = instances(0)
    costs = references.reference_costs(SOLVER, inst, 10.0, workers=2)
    fields = inst.coords.numpy()
    assert np.allclose(costs, [solve_exact({"coords": c}, 10.0, 0).cost for c in fields])
    monkeypatch.setattr(references, "_solve", lambda task: pytest.fail("solver was called"))
    again = references.reference_costs(SOLVER, inst, 10.0, workers=1)
    assert torch.equal(costs, again)
    assert len(list((tmp_path / "references").glob("*.npz"))) == 1


def test_other_instances_or_settings_get_their_own_file(monkeypatch, tmp_path) -> None:
    """The key covers the instances' content, the solver, its time limit and seed."""
    monkeypatch.setenv("NCO_CACHE_DIR", str(tmp_path))
    paths = {
        references.cache_path(SOLVER, instances(0), 10.0, 0),
        references.cache_path(SOLVER, instances(1), 10.0, 0),
        references.cache_path(SOLVER, instances(0, 5), 10.0, 0),
        references.cache_path(SOLVER, instances(0), 5.0, 0),
        references.cache_path(SOLVER, instances(0), 10.0, 1),
        references.cache_path("tsp:lkh", instances(0), 10.0, 0),
    }
    assert len(paths) == 6


def test_corrupt_cache_is_recomputed_with_a_warning(monkeypatch, tmp_path) -> None:
    """A truncated or foreign cache file is not trusted: warning, recompute, overwrite."""
    monkeypatch.setenv("NCO_CACHE_DIR", str(tmp_path))
    inst = instances(2)
    path = references.cache_path(SOLVER, inst, 10.0, 0)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a zip file")
    with pytest.warns(UserWarning, match="invalid reference cache"):
        costs = references.reference_costs(SOLVER, inst, 10.0, workers=1)
    assert bool((costs > 0).all())
    with np.load(path) as data:
        manifest = str(data["manifest"])
    np.savez(path, costs=np.full(6, -1.0), manifest=np.array(manifest))
    with pytest.warns(UserWarning, match="non-positive"):
        again = references.reference_costs(SOLVER, inst, 10.0, workers=1)
    assert torch.equal(costs, again)


def test_a_file_under_another_key_is_not_trusted(monkeypatch, tmp_path) -> None:
    """The manifest inside the file is checked against the key, not only the file name."""
    monkeypatch.setenv("NCO_CACHE_DIR", str(tmp_path))
    a, b = instances(3), instances(4)
    references.reference_costs(SOLVER, a, 10.0, workers=1)
    path_a = references.cache_path(SOLVER, a, 10.0, 0)
    path_b = references.cache_path(SOLVER, b, 10.0, 0)
    path_b.write_bytes(path_a.read_bytes())  # e.g. a copied or renamed file
    with pytest.warns(UserWarning, match=r"manifest differs in \['instances_sha256'\]"):
        costs_b = references.reference_costs(SOLVER, b, 10.0, workers=1)
    expected = [solve_exact({"coords": c}, 10.0, 0).cost for c in b.coords.numpy()]
    assert np.allclose(costs_b, expected)
    with np.load(path_b) as data:
        manifest = json.loads(str(data["manifest"]))
    assert manifest["count"] == 6 and manifest["solver"] == SOLVER and manifest["seed"] == 0
    assert path_b.name.startswith("tsp__solve_exact__10s__seed0__6x__")


def test_summary_lines_when_stderr_is_not_a_terminal(monkeypatch, tmp_path, capsys) -> None:
    """Without a terminal there is no bar; a summary line comes every `summary_every_s`."""
    monkeypatch.setenv("NCO_CACHE_DIR", str(tmp_path))
    references.reference_costs(SOLVER, instances(5, 4), 10.0, workers=1, summary_every_s=0)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("validation references: ")]
    assert [line.split(" (")[0] for line in lines[:3]] == [
        f"validation references: {k}/4" for k in (1, 2, 3)
    ]
    assert "cached at" in lines[-1] and "\r" not in err
