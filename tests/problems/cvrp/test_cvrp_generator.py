"""Tests for the Kool-style CVRP generator (nco/problems/cvrp/generator.py)."""

from __future__ import annotations

import pytest
import torch

from nco.problems.cvrp import CVRPEnv
from nco.problems.cvrp.generator import KOOL_CAPACITY


def test_same_seed_same_instances() -> None:
    """Equal seeds give equal instances; a different seed gives different ones."""
    env = CVRPEnv(20)
    a = env.generate(4, torch.Generator().manual_seed(7))
    b = env.generate(4, torch.Generator().manual_seed(7))
    c = env.generate(4, torch.Generator().manual_seed(8))
    for field in ("depot", "locs", "demands", "capacity"):
        assert torch.equal(getattr(a, field), getattr(b, field))
    assert not torch.equal(a.locs, c.locs)


@pytest.mark.parametrize(("n", "capacity"), sorted(KOOL_CAPACITY.items()))
def test_standard_capacity_and_ranges(n: int, capacity: int) -> None:
    """Capacities follow Kool et al.; demands are integers 1..9; points lie in the unit square."""
    inst = CVRPEnv(n).generate(3, torch.Generator().manual_seed(n))
    assert inst.capacity.tolist() == [capacity] * 3
    assert inst.demands.dtype == torch.long and inst.demands.shape == (3, n)
    assert int(inst.demands.min()) >= 1 and int(inst.demands.max()) <= 9
    assert inst.depot.dtype == inst.locs.dtype == torch.float64
    for pts in (inst.depot, inst.locs):
        assert float(pts.min()) >= 0.0 and float(pts.max()) < 1.0


def test_all_demand_values_occur() -> None:
    """Over many customers every demand 1..9 appears, so the range is really 1..9."""
    inst = CVRPEnv(100).generate(10, torch.Generator().manual_seed(0))
    assert sorted(inst.demands.unique().tolist()) == list(range(1, 10))


def test_sampled_capacity_range() -> None:
    """With capacity_range (40, 100), capacities are integers covering exactly 40..100."""
    env = CVRPEnv(10, capacity_range=[40, 100])
    cap = env.generate(2000, torch.Generator().manual_seed(1)).capacity
    assert cap.dtype == torch.long
    assert int(cap.min()) == 40 and int(cap.max()) == 100
