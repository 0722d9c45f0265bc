"""Named and file datasets: bit-for-bit regeneration, checksums, references and resumable refs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from script_loader import load_script

from nco.datasets import (
    Dataset,
    checksum,
    generate_named,
    load_dataset,
    named_sets,
)
from nco.problems.cvrp.problem import kool_cvrp
from nco.problems.tsp.problem import kool_tsp

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO / ".." / "shared" / "data" / "reference"


def test_kool_tsp_first_values() -> None:
    """np.random.seed(1234) starts with 0.19151945..., 0.62210877... (Kool's TSP test set)."""
    coords = kool_tsp(2, 3, 1234)["coords"]
    assert coords[0, 0, 0] == 0.1915194503788923
    assert coords[0, 0, 1] == 0.6221087710398319


def test_kool_cvrp_order_and_types() -> None:
    """CVRP draws all depots first, then locations, then integer demands 1..9; capacity by n."""
    data = kool_cvrp(4, 20, 1234)
    np.testing.assert_array_equal(data["depot"], kool_tsp(1, 4, 1234)["coords"][0])
    assert data["demands"].dtype == np.int64 and data["demands"].min() >= 1
    assert data["demands"].max() <= 9 and (data["capacity"] == 30).all()


def test_checksums_of_all_named_sets() -> None:
    """Every named set regenerates to the checksum recorded in scripts/make_datasets.py."""
    recorded = load_script("make_datasets").CHECKSUMS
    assert sorted(recorded) == sorted(named_sets())
    for name in named_sets():
        assert checksum(generate_named(name)[1]) == recorded[name], name


def test_checksum_sees_values_and_dtypes() -> None:
    """Changing one value, or only the dtype, changes the checksum."""
    base = {"a": np.arange(4, dtype=np.int64)}
    changed = {"a": np.array([0, 1, 2, 4], dtype=np.int64)}
    retyped = {"a": np.arange(4, dtype=np.int32)}
    assert len({checksum(base), checksum(changed), checksum(retyped)}) == 3


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared reference data absent")
@pytest.mark.parametrize(
    ("name", "file"),
    [
        ("bq:tsp200", "tsp200_bq_128.npz"),
        ("bq:tsp500", "tsp500_bq_128.npz"),
        ("lehd:cvrp200", "cvrp200_128.npz"),
        ("lehd:cvrp500", "cvrp500_128.npz"),
        ("bq:tsp1000", "tsp1000_bq_128.npz"),
        ("lehd:cvrp1000", "cvrp1000_128.npz"),
    ],
)
def test_generalization_sets_equal_shared_files(name: str, file: str) -> None:
    """The regenerated 128-instance sets equal the shared reference files bit for bit."""
    _, arrays = generate_named(name)
    shared = np.load(SHARED / file)
    if "coords" in arrays:
        np.testing.assert_array_equal(arrays["coords"], shared["coords"])
    else:
        np.testing.assert_array_equal(arrays["depot"], shared["nodes"][:, 0])
        np.testing.assert_array_equal(arrays["locs"], shared["nodes"][:, 1:])
        np.testing.assert_array_equal(arrays["demands"], shared["demands"][:, 1:])
        np.testing.assert_array_equal(arrays["capacity"], shared["capacity"])


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared reference data absent")
def test_named_set_attaches_published_references(tmp_path: Path) -> None:
    """bq:tsp200 carries the Concorde optima of the shared file as references."""
    data = load_dataset("bq:tsp200", cache_dir=tmp_path, references_dir=tmp_path)
    shared = np.load(SHARED / "tsp200_bq_128.npz")
    np.testing.assert_array_equal(data.references, shared["tour_lengths"])
    assert "Concorde" in data.reference_source


def test_named_set_is_cached(tmp_path: Path) -> None:
    """The first load writes the cache file; the second reads the same arrays from it."""
    first = load_dataset("kool:tsp20_val", cache_dir=tmp_path, references_dir=tmp_path)
    assert (tmp_path / "kool_tsp20_val.npz").is_file()
    second = load_dataset("kool:tsp20_val", cache_dir=tmp_path, references_dir=tmp_path)
    np.testing.assert_array_equal(first.arrays["coords"], second.arrays["coords"])
    assert len(first) == 10_000 and first.references is None


def write_reference(ref_dir: Path, file: str, indices: list[int], costs: list[float]) -> dict:
    np.savez(ref_dir / file, indices=np.array(indices), costs=np.array(costs))
    return {"file": file, "dataset": "kool:tsp20_test", "solver": file.split(".")[0]}


def test_partial_references_are_nan_elsewhere_and_merged_by_minimum(tmp_path: Path) -> None:
    """References covering some instances are NaN elsewhere; overlapping sources keep the min."""
    entries = [
        write_reference(tmp_path, "a.npz", [0, 2], [4.0, 5.0]),
        write_reference(tmp_path, "b.npz", [2, 3], [4.5, 6.0]),
    ]
    (tmp_path / "manifest.json").write_text(json.dumps({"entries": entries}))
    data = load_dataset("kool:tsp20_test", cache_dir=tmp_path, references_dir=tmp_path).head(5)
    np.testing.assert_array_equal(data.references, [4.0, np.nan, 4.5, 6.0, np.nan])
    assert data.num_references == 3 and "a.npz" in data.reference_source


def test_compute_references_resumes(tmp_path: Path) -> None:
    """A second run with a larger --limit solves only the new instances; refs attach to the set."""
    script = load_script("compute_references")
    common = ["--data", "kool:tsp20_test", "--solver", "lkh", "--time-limit", "5"]
    dirs = ["--work-dir", str(tmp_path / "work"), "--out-dir", str(tmp_path), "--no-progress"]
    dirs += ["--cache-dir", str(tmp_path)]
    script.main([*common, *dirs, "--limit", "2"])
    entry = script.main([*common, *dirs, "--limit", "3"])
    log = (tmp_path / "work" / "kool_tsp20_test__lkh.jsonl").read_text().splitlines()
    assert [json.loads(line)["index"] for line in log] == [0, 1, 2]
    assert entry["num_instances"] == 3 and entry["complete_prefix"] == 3
    data = load_dataset("kool:tsp20_test", cache_dir=tmp_path, references_dir=tmp_path)
    assert data.num_references == 3 and np.isnan(data.references[3])
    with pytest.raises(ValueError, match="time_limit"):
        script.main([*common[:-1], "7", *dirs, "--limit", "4"])


def test_compute_references_resumes_from_committed_file_without_log(tmp_path: Path) -> None:
    """Without the git-ignored log, the committed .npz counts as done; only the rest is solved."""
    script = load_script("compute_references")
    common = ["--data", "kool:tsp20_test", "--solver", "lkh", "--time-limit", "5", "--no-progress"]
    common += ["--out-dir", str(tmp_path), "--cache-dir", str(tmp_path)]
    first = script.main([*common, "--work-dir", str(tmp_path / "a"), "--limit", "2"])
    costs = np.load(tmp_path / "kool_tsp20_test__lkh.npz")["costs"]
    entry = script.main([*common, "--work-dir", str(tmp_path / "b"), "--limit", "3"])
    rows = [json.loads(line) for line in (tmp_path / "b" / "kool_tsp20_test__lkh.jsonl").open()]
    assert [(r["index"], r["status"]) for r in rows[:2]] == [(0, "imported"), (1, "imported")]
    assert [r["index"] for r in rows] == [0, 1, 2] and rows[2]["status"] != "imported"
    assert rows[0]["time_s"] == first["mean_time_s"]
    assert entry["num_instances"] == 3
    data = load_dataset("kool:tsp20_test", cache_dir=tmp_path, references_dir=tmp_path)
    np.testing.assert_array_equal(data.references[:2], costs)
    with pytest.raises(ValueError, match="manifest.json.*'seed'"):
        script.main([*common, "--work-dir", str(tmp_path / "c"), "--limit", "3", "--seed", "7"])


def test_make_datasets_keeps_existing_files_without_force(tmp_path: Path) -> None:
    """make_datasets writes a set once, keeps it on a rerun and overwrites it with --force."""
    script = load_script("make_datasets")
    script.main(["--out", str(tmp_path), "--only", "kool:tsp20_test"])
    path = tmp_path / "kool_tsp20_test.npz"
    path.write_bytes(b"stale")
    assert "kept" in script.make(["kool:tsp20_test"], tmp_path, force=False)["kool:tsp20_test"]
    assert path.read_bytes() == b"stale"
    script.make(["kool:tsp20_test"], tmp_path, force=True)
    np.testing.assert_array_equal(np.load(path)["coords"], kool_tsp(10_000, 20, 1234)["coords"])


def test_tsp_file_with_references(tmp_path: Path) -> None:
    """A TSP .npz is recognised by its fields and keeps its references and their source."""
    coords = kool_tsp(3, 5, 0)["coords"]
    path = tmp_path / "t.npz"
    np.savez(path, coords=coords, reference_costs=np.ones(3), reference_source=np.array("hand"))
    data = load_dataset(path)
    assert data.problem == "tsp" and data.reference_source == "hand"
    np.testing.assert_array_equal(data.instance(1)["coords"], coords[1])


def test_cvrp_file(tmp_path: Path) -> None:
    """A CVRP .npz in the project layout loads with integer demands and capacities."""
    arrays = kool_cvrp(2, 10, 0, capacity=20)
    np.savez(tmp_path / "c.npz", **arrays)
    data = load_dataset(tmp_path / "c.npz", problem="cvrp")
    assert data.problem == "cvrp" and data.references is None
    np.testing.assert_array_equal(data.arrays["demands"], arrays["demands"])


def test_taillard_set() -> None:
    """taillard:ta01 is one 15x15 JSSP instance with reference 1231."""
    data = load_dataset("taillard:ta01")
    assert data.problem == "jssp" and data.names == ["ta01"]
    assert data.arrays["durations"].shape == (1, 15, 15)
    np.testing.assert_array_equal(data.references, [1231.0])


@pytest.mark.parametrize(
    ("data", "problem", "match"),
    [
        ("kool:tsp30_test", None, "Unknown dataset"),
        ("nowhere.npz", None, "Neither a file nor a named set"),
        ("kool:tsp20_test", "cvrp", "not cvrp"),
    ],
)
def test_bad_data_arguments(tmp_path: Path, data: str, problem: str | None, match: str) -> None:
    """Unknown names, missing files and problem mismatches raise ValueError."""
    with pytest.raises(ValueError, match=match):
        load_dataset(data, problem, cache_dir=tmp_path, references_dir=tmp_path)


def test_dataset_rejects_inconsistent_fields() -> None:
    """Fields with different instance counts, or a field the problem needs (`require`, which
    the resolver calls with the descriptor's fields), are rejected."""
    with pytest.raises(ValueError, match="disagree"):
        Dataset("cvrp", "x", {**kool_cvrp(2, 5, 0, capacity=10), "capacity": np.array([50])})
    with pytest.raises(ValueError, match="missing fields"):
        Dataset("tsp", "x", {"locs": np.zeros((1, 3, 2))}).require(("coords",))


def test_unit_square_scales_only_instances_outside_it() -> None:
    """CVRP depot and customers share one offset and one scale per instance; an instance
    already inside [0, 1]^2 and non-routing problems are left as they are."""
    from nco.datasets import Dataset

    depot = np.array([[10.0, 20.0], [0.5, 0.5]])
    locs = np.array([[[30.0, 20.0], [10.0, 60.0]], [[0.1, 0.2], [0.9, 0.3]]])
    arrays = {"depot": depot, "locs": locs, "demands": np.ones((2, 2), np.int64),
              "capacity": np.array([5, 5])}  # fmt: skip
    scaled, scales = Dataset("cvrp", "t", arrays).unit_square(("depot", "locs"))
    assert scales.tolist() == [40.0, 1.0]
    assert scaled.arrays["depot"][0].tolist() == [0.0, 0.0]
    assert scaled.arrays["locs"][0].tolist() == [[0.5, 0.0], [0.0, 1.0]]
    assert np.array_equal(scaled.arrays["locs"][1], locs[1])
    jssp = Dataset("jssp", "j", {"durations": np.ones((1, 2, 2)), "machines": np.zeros((1, 2, 2))})
    assert jssp.unit_square(())[0] is jssp


def test_value_types_need_no_registry() -> None:
    """`nco.dataset` imports nothing of the registry (no datasets / problem / registry circle)."""
    import subprocess
    import sys

    code = "import sys, nco.dataset; assert 'nco.registry' not in sys.modules, 'registry'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_rl4co_npz_files_load(tmp_path) -> None:
    """rl4co's layouts: TSP `locs`; CVRP `depot`, `locs`, `demand` with the absolute capacity
    ([N, 1]) or divided by it (capacity 1): both give integer demands 1..9 and capacity 30."""
    from nco.datasets import load_dataset

    rng = np.random.default_rng(0)
    locs = rng.uniform(size=(3, 20, 2))
    np.savez(tmp_path / "tsp.npz", locs=locs)
    tsp = load_dataset(tmp_path / "tsp.npz")
    assert tsp.problem == "tsp" and np.array_equal(tsp.arrays["coords"], locs)
    demand = rng.integers(1, 10, size=(3, 20))
    base = {"depot": rng.uniform(size=(3, 2)), "locs": locs}
    np.savez(tmp_path / "abs.npz", **base, demand=demand, capacity=np.full((3, 1), 30.0))
    np.savez(tmp_path / "norm.npz", **base, demand=demand / 30.0, capacity=np.ones(3))
    for name in ("abs.npz", "norm.npz"):
        cvrp = load_dataset(tmp_path / name)
        assert cvrp.problem == "cvrp"
        assert np.array_equal(cvrp.arrays["demands"], demand)
        assert cvrp.arrays["capacity"].tolist() == [30, 30, 30]
    np.savez(tmp_path / "bad.npz", **base, demand=demand / 7.3, capacity=np.ones(3))
    with pytest.raises(ValueError, match="integer demands"):
        load_dataset(tmp_path / "bad.npz")


def test_make_datasets_custom_sets(tmp_path: Path, capsys) -> None:
    """--custom writes Kool-recipe sets of any size, count and seed that load as datasets; bad
    specifications end with a usage error."""
    script = load_script("make_datasets")
    assert script.main(["--out", str(tmp_path), "--custom", "tsp", "30", "4", "7"]) == 0
    data = load_dataset(tmp_path / "custom_tsp30_n4_seed7.npz")
    np.testing.assert_array_equal(data.arrays["coords"], kool_tsp(4, 30, 7)["coords"])
    script.main(["--out", str(tmp_path), "--custom", "cvrp", "50", "2", "1"])
    assert load_dataset(tmp_path / "custom_cvrp50_n2_seed1.npz").arrays["capacity"].tolist() == [
        40,
        40,
    ]
    for bad in (["knap", "5", "1", "1"], ["tsp", "x", "1", "1"], ["cvrp", "33", "1", "1"]):
        with pytest.raises(SystemExit):
            script.main(["--out", str(tmp_path), "--custom", *bad])
