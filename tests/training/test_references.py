"""Validation references: solved in parallel once, then read from the content-keyed cache."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nco.training import references
from problems.tsp import TSPEnv
from problems.tsp.solvers import solve_exact

SOLVER = "problems.tsp.solvers.solve_exact"


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
        references.cache_path("problems.tsp.solvers.solve_lkh", instances(0), 10.0, 0),
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
    np.savez(path, costs=np.full(6, -1.0), solver=np.array(SOLVER))
    with pytest.warns(UserWarning, match="non-positive"):
        references.reference_costs(SOLVER, inst, 10.0, workers=1)
