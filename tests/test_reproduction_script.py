"""SL-vs-SI studies (`nco-study`, which scripts/reproduction.py runs with the checkout as root)
and expert data (scripts/make_expert_data.py): run arguments, curves, expert files."""

from __future__ import annotations

import csv
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf
from script_loader import SCRIPTS, load_script
from training.conftest import compose_train

from nco.cli.study import main as study_main
from nco.problems.cvrp.io import load_cvrp_expert
from nco.problems.tsp.expert import load_expert
from nco.problems.tsp.solvers import tour_length
from nco.study import chunks, curves, parts, provenance, sl_vs_si
from nco.study.sl_vs_si import Study
from nco.study.spec import STUDY_DIR, Workspace

expert = load_script("make_expert_data")


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    """A study workspace in tmp_path/project (runs under data/reproduction/, results, shipped);
    files the tests write directly in tmp_path lie outside it."""
    return Workspace.at(tmp_path / "project")


def main(ws: Workspace, argv: list[str]) -> None:
    """`nco-study --root <ws.root> argv`."""
    study_main(["--root", str(ws.root), *argv])


def study(name: str, ws: Workspace) -> Study:
    """The shipped study `name` in workspace `ws`."""
    return Study.load(name, ws)


def without_expert_data(tmp_path: Path, name: str, sl_data: str) -> str:
    """A copy of the shipped study `name` whose SL data is `sl_data` (a study file of one's
    own, as --study takes it)."""
    cfg = OmegaConf.load(STUDY_DIR / f"{name}.yaml")
    cfg.sl_data = sl_data
    path = tmp_path / "mine" / f"{name}.yaml"
    path.parent.mkdir(exist_ok=True)
    OmegaConf.save(cfg, path)
    return str(path)


@pytest.mark.parametrize("method", ["sl", "wr", "wor", "gd"])
def test_every_method_composes_to_its_trajectory_source(method: str, tmp_path: Path) -> None:
    """The four arms differ only in where trajectories come from; model and optimizer agree."""
    args = sl_vs_si.train_args(study("tsp20", Workspace.at(tmp_path)), method, 3, 10)
    overrides = [a for a in args if not a.startswith(("hydra.", "sl_data="))]
    cfg = compose_train(overrides, tmp_path, tiny=False)
    assert cfg.seed == 3 and cfg.trainer.max_epochs == 10
    assert (cfg.model.dim, cfg.model.layers, cfg.training.batches_per_epoch) == (128, 4, 100)
    source = {
        "sl": ("sl", "gumbeldore", "global"),  # the search config is unused in SL
        "wr": ("si", "sample", None),
        "wor": ("si", "gumbeldore", "none"),
        "gd": ("si", "gumbeldore", "global"),
    }[method]
    assert (cfg.mode, cfg.search.method, cfg.search.get("update")) == source
    if method in ("wr", "wor", "gd"):  # the same 64 samples per instance
        budget = cfg.search.get("num_samples") or cfg.search.beam_width * cfg.search.rounds
        assert budget == 64
    assert any(a.startswith("sl_data=") for a in args) == (method == "sl")


def write_metrics(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    keys = sorted({k for r in rows for k in r})
    with open(path, "w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=keys)
        out.writeheader()
        out.writerows(rows)


def test_read_run_sums_wall_time_and_finds_the_best_epoch(tmp_path: Path) -> None:
    """Per-epoch gaps, cumulative hours from the three timers, and the best epoch."""
    write_metrics(
        tmp_path / "logs" / "metrics.csv",
        [
            {"epoch": 0, "time/sampling_s": 1800, "time/training_s": 1800},
            {"epoch": 0, "val/objective": -4, "val/gap": 5.0, "val/initial_gap": 4.5},
            {"epoch": 1, "time/sampling_s": 3600, "time/training_s": 0},
            {"epoch": 1, "val/objective": -3.9, "val/gap": 2.0, "time/validation_s": 3600},
            {"epoch": 2, "val/objective": -3.95, "val/gap": 3.0},
        ],
    )
    run = curves.read_run(tmp_path)
    assert run["epochs"] == [0, 1, 2] and run["val_gap"] == [5.0, 2.0, 3.0]
    assert run["hours"] == pytest.approx([1.0, 3.0, 3.0])
    assert (run["best_epoch"], run["best_val_gap"]) == (1, 2.0)
    assert sl_vs_si.epochs_done(tmp_path) == 3
    assert run["targets"] is None  # no sampling: an SL run
    assert run["saved_epoch"] == 1  # without val/improved: the best gap's epoch
    assert run["initial_val_gap"] == 4.5
    assert "(val gap 4.500 %)" in curves.summary(
        "finetune", run | {"start": {"from": "x"}, "power_law": None}
    )


def test_read_run_names_the_epoch_best_pt_holds(tmp_path: Path) -> None:
    """best.pt follows the validation objective (mean cost), not the mean gap: the epoch it
    holds is the last one logged as improved, and None while no epoch beat the start."""
    rows = [
        {"epoch": 0, "val/objective": -5.6, "val/gap": 6.0, "val/improved": 1.0},
        {"epoch": 1, "val/objective": -5.5, "val/gap": 5.6, "val/improved": 1.0},
        {"epoch": 2, "val/objective": -5.52, "val/gap": 5.4, "val/improved": 0.0},
    ]
    write_metrics(tmp_path / "logs" / "metrics.csv", rows)
    run = curves.read_run(tmp_path)
    assert (run["best_epoch"], run["saved_epoch"], run["saved_val_gap"]) == (2, 1, 5.6)
    write_metrics(tmp_path / "logs" / "metrics.csv", [rows[2]])
    assert curves.read_run(tmp_path)["saved_epoch"] is None


def test_target_quality_sets_the_sampled_best_beside_greedy(tmp_path: Path) -> None:
    """Over the last epochs: best sampled cost as a gap to the validation references (val cost
    / (1 + gap)) beside the mean greedy gap."""
    rows = []
    for e, (sampled, val_cost, gap) in enumerate(
        [(9.0, 9.0, 50.0), (4.2, 4.4, 10.0), (4.0, 4.2, 5.0)]
    ):
        rows.append({"epoch": e, "sample/cost": sampled})
        rows.append({"epoch": e, "val/objective": -val_cost, "val/cost": val_cost, "val/gap": gap})
    write_metrics(tmp_path / "logs" / "metrics.csv", rows)
    targets = curves.read_run(tmp_path, last=2)["targets"]
    assert targets["epochs"] == [1, 2] and targets["reference_cost"] == pytest.approx(4.0)
    assert targets["best_sampled_gap"] == pytest.approx(2.5)  # (4.1 - 4.0) / 4.0
    assert targets["greedy_gap"] == pytest.approx(7.5)


def test_expert_data_is_optimal_and_resumes(tmp_path: Path, capsys) -> None:
    """TSP8 expert tours are the exact solver's (cost = tour length), load as SL data, and a
    rerun reuses the saved parts; other settings in the same place are refused."""
    out = tmp_path / "t.npz"
    argv = ["--problem", "tsp", "--size", "8", "--num", "6", "--solver", "exact", "--chunk", "4"]
    expert.main([*argv, "--out", str(out)])
    with np.load(out) as data:
        coords, tours, costs = data["coords"], data["tours"], data["reference_costs"]
    lengths = [tour_length(c, t) for c, t in zip(coords, tours, strict=True)]
    assert np.allclose(lengths, costs)
    instances, actions = load_expert(out)
    assert tuple(actions.shape) == (6, 7)
    capsys.readouterr()
    expert.main([*argv, "--out", str(out)])
    assert "solved" not in capsys.readouterr().out  # both parts reused
    with pytest.raises(SystemExit, match="other settings"):
        expert.main([*argv[:-2], "--chunk", "4", "--seed", "5", "--out", str(out)])


def test_cvrp_expert_data_loads_as_sl_data(tmp_path: Path) -> None:
    """CVRP expert solutions round-trip into env actions of the right shape."""
    out = tmp_path / "c.npz"
    expert.main(
        [
            "--problem",
            "cvrp",
            "--size",
            "10",
            "--num",
            "2",
            "--solver",
            "hgs",
            "--time-limit",
            "0.1",
            "--out",
            str(out),
        ]
    )
    instances, actions = load_cvrp_expert(out)
    assert tuple(actions.shape) == (2, 10) and tuple(instances.locs.shape) == (2, 10, 2)


def test_evaluate_decodes_the_chosen_seeds_best_checkpoints(
    tmp_path: Path, monkeypatch, ws: Workspace
) -> None:
    """`evaluate --seeds 0 --limit 100` runs greedy and beam 16 on the test set for each run
    of seed 0 that has a best.pt, writing one results JSON per run and decoder; a rerun keeps
    the results that are current (same best epoch, same instances) unless --force."""
    for name in ("gd_s0", "sl_s0", "gd_s1", "wr_s0"):
        (ws.runs / "tsp20" / name).mkdir(parents=True)
        if name != "wr_s0":  # no best.pt yet
            (ws.runs / "tsp20" / name / "best.pt").touch()
    ws.results.mkdir(parents=True)
    epoch = {"gd_s0": 7, "sl_s0": 9}
    monkeypatch.setattr(sl_vs_si, "checkpoint_epoch", lambda path: epoch[path.parent.name])
    calls = []

    def decode(cmd: list[str], **kw) -> None:  # what nco-eval writes, in brief
        calls.append(cmd)
        arg = dict(a.split("=", 1) for a in cmd if "=" in a)
        limit = int(arg["limit"]) if "limit" in arg else None
        meta = {"epoch": epoch[Path(arg["checkpoint"]).parent.name]}
        info = {"checkpoint_meta": meta, "limit": limit}
        Path(arg["out"]).write_text(json.dumps({"num_instances": limit or 10000, "info": info}))

    monkeypatch.setattr(subprocess, "run", decode)
    command = ["evaluate", "--study", "tsp20", "--seeds", "0"]

    def decoded() -> list[str]:
        runs = [next(a for a in c if a.startswith("checkpoint=")) for c in calls]
        calls.clear()
        return [Path(r).parent.name for r in runs]

    main(ws, [*command, "--limit", "100"])
    assert all("data=kool:tsp20_test" in c and "limit=100" in c for c in calls)
    assert sum("search.beam_width=16" in c for c in calls) == 2
    assert decoded() == ["gd_s0", "gd_s0", "sl_s0", "sl_s0"]
    main(ws, [*command, "--limit", "100"])  # all current: nothing decoded again
    assert decoded() == []
    epoch["sl_s0"] = 12  # its best epoch moved
    main(ws, [*command, "--limit", "100"])
    assert decoded() == ["sl_s0", "sl_s0"]
    main(ws, [*command, "--limit", "100", "--force"])
    assert decoded() == ["gd_s0", "gd_s0", "sl_s0", "sl_s0"]
    main(ws, [*command, "--decoders", "greedy"])  # all instances: the limited files are not
    assert all("search=greedy" in c and "limit=" not in str(c) for c in calls)
    assert decoded() == ["gd_s0", "sl_s0"]
    for name, num in (("gd_s0", 100), ("sl_s0", 10000)):  # files without the "limit" key
        old = {"num_instances": num, "info": {"checkpoint_meta": {"epoch": epoch[name]}}}
        (ws.results / f"tsp20__{name}__beam16.json").write_text(json.dumps(old))
    main(ws, [*command, "--limit", "100", "--decoders", "beam16"])
    assert decoded() == ["sl_s0"]


def test_evaluate_in_parts_resumes_an_interrupted_decode_and_merges_it(
    tmp_path: Path,
    monkeypatch,
    ws: Workspace,
) -> None:
    """`evaluate --chunk 4` decodes 10 test instances as parts 0-3, 4-7, 8-9; after a failure
    a rerun decodes only the missing parts (all of them once best.pt's epoch moved), and the
    merged file holds every instance in order, counts as current, and replaces the parts."""
    from nco.results import Results, write_results

    run = ws.runs / "tsp50" / "gd_s0"
    run.mkdir(parents=True)
    (run / "best.pt").touch()
    ws.results.mkdir(parents=True)
    epoch = {"now": 5}
    monkeypatch.setattr(sl_vs_si, "checkpoint_epoch", lambda path: epoch["now"])
    monkeypatch.setattr(parts, "instances_to_decode", lambda data, limit: 10)
    decoded, fail_at = [], {4}

    def decode(cmd: list[str], **kw) -> None:  # nco-eval on a slice: cost = instance index
        arg = dict(a.split("=", 1) for a in cmd if "=" in a)
        offset, limit = int(arg.get("offset", 0)), int(arg["limit"])
        if offset in fail_at:
            fail_at.clear()
            raise subprocess.CalledProcessError(1, cmd)
        decoded.append(offset)
        info = {"checkpoint_meta": {"epoch": epoch["now"]}, "limit": limit, "offset": offset}
        costs = [float(offset + i) for i in range(limit)]
        refs = [1.0] * limit
        write_results(
            Results("tsp", "kool:tsp50_test", "best.pt beam", costs, refs, 2.0, info=info),
            arg["out"],
        )

    monkeypatch.setattr(subprocess, "run", decode)
    command = ["evaluate", "--study", "tsp50", "--decoders", "beam16", "--chunk", "4"]
    with pytest.raises(SystemExit, match="--chunk 0: expected a number of instances >= 1"):
        main(ws, [*command[:-1], "0"])
    out = ws.results / "tsp50__gd_s0__beam16.json"
    with pytest.raises(subprocess.CalledProcessError):
        main(ws, command)
    assert decoded == [0] and not out.exists()
    assert (out.with_suffix(".parts") / "000000.json").is_file()
    main(ws, command)
    assert decoded == [0, 4, 8]
    whole = json.loads(out.read_text())
    assert whole["objectives"] == [float(i) for i in range(10)]
    assert whole["num_instances"] == 10 and whole["wall_time_s"] == 6.0
    assert (whole["info"]["limit"], whole["info"]["offset"], whole["info"]["parts"]) == (None, 0, 3)
    assert not out.with_suffix(".parts").exists()
    main(ws, command)  # current: nothing decoded
    assert decoded == [0, 4, 8]
    fail_at.add(8)
    epoch["now"] = 6  # a new best epoch: the parts of the old one are not reused
    with pytest.raises(subprocess.CalledProcessError):
        main(ws, command)
    epoch["now"] = 7
    main(ws, command)
    assert decoded == [0, 4, 8, 0, 4, 0, 4, 8]
    main(ws, [*command, "--force"])  # a current merged file is decoded again on request
    assert decoded == [0, 4, 8, 0, 4, 0, 4, 8, 0, 4, 8]


def test_report_collects_test_gaps_and_flags_stale_ones(
    tmp_path: Path,
    monkeypatch,
    capsys,
    ws: Workspace,
) -> None:
    """`report` puts each run's test-set gaps into the study JSON with the decoded epoch, marks
    a result stale when the run's best epoch moved since, and prints the per-arm mean."""
    runs, results = ws.runs, ws.results
    results.mkdir(parents=True)
    for name, gaps in {"gd_s0": [3.0, 2.0], "gd_s1": [3.0, 2.5, 2.2], "sl_s0": [4.0]}.items():
        rows = [{"epoch": e, "val/objective": -4, "val/gap": g} for e, g in enumerate(gaps)]
        write_metrics(runs / "tsp20" / name / "logs" / "metrics.csv", rows)
    # a continued run that never beat its starting weights: best.pt is still the start (-1)
    rows = [{"epoch": e, "val/objective": -4, "val/gap": 5.0, "val/improved": 0} for e in (0, 1)]
    write_metrics(runs / "tsp20" / "wr_s0" / "logs" / "metrics.csv", rows)
    decoded = {
        ("gd_s0", "greedy"): (1, 2.5),
        ("gd_s1", "greedy"): (1, 3.5),
        ("sl_s0", "beam16"): (0, 0.4),
        ("wr_s0", "greedy"): (-1, 4.5),
    }
    for (name, decoder), (epoch, gap) in decoded.items():
        info = {"checkpoint_meta": {"epoch": epoch}}
        size = 10000 if decoder == "greedy" and name == "gd_s1" else 100
        result = {"mean_gap": gap, "num_instances": size, "info": info}
        (results / f"tsp20__{name}__{decoder}.json").write_text(json.dumps(result))
    main(ws, ["report", "--study", "tsp20"])
    test = json.loads((results / "tsp20.json").read_text())["test"]
    assert test["gd_s0"]["greedy"] == {
        "mean_gap": 2.5,
        "num_instances": 100,
        "epoch": 1,
        "stale": False,
    }
    assert test["gd_s1"]["greedy"]["stale"]  # decoded epoch 1, best is now epoch 2
    assert set(test["sl_s0"]) == {"beam16"}
    assert not test["wr_s0"]["greedy"]["stale"]  # the starting weights, decoded as such
    out = capsys.readouterr().out
    assert "| GD | s0 2.500 (on 100), s1 3.500 (stale) (on 10000); **3.000** | - |" in out
    assert "| SL | - | s0 0.400; **0.400** |" in out
    header = "greedy gap % (per seed; mean; 100/10000 instances) | beam16 gap % (per seed; mean; "
    assert header + "100 instances) |" in out


def test_run_refuses_to_start_without_the_sl_expert_data(
    monkeypatch, tmp_path: Path, ws: Workspace
) -> None:
    """A missing expert file stops `run` before any chunk, naming the command that writes it."""
    sl_data = "data/generated/expert/nothing_here.npz"
    mine = without_expert_data(tmp_path, "cvrp20", sl_data)
    monkeypatch.setattr(sl_vs_si, "launch", lambda *a: pytest.fail("a chunk was started"))
    with pytest.raises(SystemExit) as stop:
        main(ws, ["run", "--study", mine, "--seeds", "0"])
    message = str(stop.value)
    assert "nothing_here.npz: the SL arm's expert data is missing" in message
    expert_args = study("cvrp20", ws).spec.expert
    assert f"nco-data expert {expert_args} --out {sl_data}" in message


def test_power_law_projects_the_epochs_to_each_target() -> None:
    """gap = 8 / sqrt(epoch) fits with slope -0.5 and reaches 1 % at epoch 64, 0.5 % at 256;
    too few epochs, a curve that does not fall, or one that needs over a million epochs give
    no projection."""
    epochs = list(range(40))
    run = {"epochs": epochs, "val_gap": [8 / (e + 1) ** 0.5 for e in epochs]}
    fit = curves.power_law(run, {"1%": 1.0, "half": 0.5})
    assert fit["slope"] == pytest.approx(-0.5)
    assert fit["epochs_to"] == {"1%": 64, "half": 256}
    assert curves.power_law({"epochs": epochs[:13], "val_gap": [1.0] * 13}, {"1%": 1.0}) is None
    flat = curves.power_law({"epochs": epochs, "val_gap": [2.0 + e for e in epochs]}, {"1%": 1.0})
    assert flat["epochs_to"] == {"1%": None}
    slow = {"epochs": epochs, "val_gap": [18 / (e + 1) ** 0.01 for e in epochs]}
    assert curves.power_law(slow, {"1%": 1.0})["epochs_to"] == {"1%": None}  # beyond 1e6 epochs


def test_chunk_record_names_the_code_version_and_the_host(
    monkeypatch, tmp_path: Path, ws: Workspace
) -> None:
    """chunks.jsonl says which commit, epochs and CPU (with or without bf16 units) ran a chunk."""
    import json
    import time

    (ws.runs / "tsp20" / "gd_s0").mkdir(parents=True)
    chunks.record_chunk(ws.runs / "tsp20" / "gd_s0", 5, 10, time.time() - 3, "abc+dirty")
    (entry,) = [json.loads(line) for line in open(ws.runs / "tsp20" / "gd_s0" / "chunks.jsonl")]
    assert entry["commit"] == "abc+dirty" and entry["epochs"] == [5, 10]
    assert entry["wall_s"] >= 3 and isinstance(entry["bf16_units"], bool)
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        text = cpuinfo.read_text()
        assert entry["cpu"] in text and bool(entry["cpu"]) == ("model name" in text)
        assert entry["bf16_units"] == ("avx512_bf16" in text or "amx_bf16" in text)


def fake_run(folder: Path, gaps: list[float], commit: str) -> None:
    """A finished run folder as `nco-train` leaves it: metrics, Hydra config, chunks, best.pt."""
    rows = [{"epoch": e, "val/objective": -4, "val/gap": g} for e, g in enumerate(gaps)]
    write_metrics(folder / "logs" / "metrics.csv", rows)
    (folder / ".hydra").mkdir()
    config = {
        "problem": {"name": "tsp", "num_nodes": 20, "env": {"_target_": "x"}},
        "model": {"_target_": "nco.models.bq.BQPolicy", "dim": 128},
        "training": {
            "instances_per_epoch": 128,
            "batches_per_epoch": 100,
            "batch_size": 256,
            "lr": 5e-4,
        },
        "trainer": {"gradient_clip_val": 1.0},
        "search": {"method": "gumbeldore", "update": "none", "beam_width": "${sampling.k}"},
        "sampling": {"k": 16},
    }
    OmegaConf.save(OmegaConf.create(config), folder / ".hydra" / "config.yaml")
    chunk = {"commit": commit, "epochs": [0, len(gaps)], "cpu": "Test CPU", "cpus": 2}
    (folder / "chunks.jsonl").write_text(json.dumps(chunk) + "\n")
    (folder / "best.pt").write_bytes(folder.name.encode())


def test_ship_picks_the_best_self_improvement_run_and_writes_its_manifest(
    tmp_path: Path,
    monkeypatch,
    ws: Workspace,
) -> None:
    """By default `ship` takes the run trained without expert data with the lowest validation
    gap (SL is better here but not chosen), copies its best.pt, decodes it greedily and by beam
    16 on the whole test set and writes a manifest with the gaps against the AM's 0.34 %."""
    runs = ws.runs / "tsp20"
    fake_run(runs / "sl_s0", [3.0, 1.0], "aaa")
    fake_run(runs / "wor_s0", [3.0, 1.5, 1.8], "bbb")
    fake_run(runs / "gd_s1", [3.0, 2.0, 1.9, 1.7], "ccc")
    calls = []

    def decode(cmd: list[str], **kw) -> None:
        calls.append(cmd)
        out = Path(next(a for a in cmd if a.startswith("out="))[4:])
        gap = 0.2 if "search.beam_width=16" in cmd else 2.5
        info = {"reference_source": "exact"}
        n = int(next((a[6:] for a in cmd if a.startswith("limit=")), 10000))
        out.write_text(json.dumps({"mean_gap": gap, "num_instances": n, "info": info}))

    monkeypatch.setattr(subprocess, "run", decode)
    main(ws, ["ship", "--study", "tsp20"])
    shipped = ws.shipped / "tsp20"
    assert (shipped / "best.pt").read_bytes() == b"wor_s0"
    assert len(calls) == 2 and all("data=kool:tsp20_test" in c for c in calls)
    assert all(not any(a.startswith("limit=") for a in c) for c in calls)  # whole test set
    manifest = json.loads((shipped / "manifest.json").read_text())
    assert (manifest["best_epoch"], manifest["epochs_trained"]) == (1, 3)
    assert manifest["validation_gap_pct"] == 1.5 and manifest["commits"] == ["bbb"]
    assert manifest["machines"] == ["Test CPU, 2 cores"]
    assert manifest["search"]["beam_width"] == 16  # interpolations resolved
    assert "search=wor" in manifest["command"] and "seed=0" in manifest["command"]
    assert "hydra." not in manifest["command"] and "without expert data" in manifest["training"]
    test = manifest["kool_tsp20_test"]
    assert (test["greedy_gap_pct"], test["beam16_gap_pct"], test["instances"]) == (2.5, 0.2, 10000)
    assert manifest["target"]["reached"] is False
    assert manifest["target"]["greedy_points_above"] == pytest.approx(2.5 - 0.34)
    main(ws, ["ship", "--study", "tsp20", "--run", "sl_s0", "--limit", "100"])
    assert (shipped / "best.pt").read_bytes() == b"sl_s0" and "limit=100" in calls[-1]
    main(ws, ["ship", "--study", "tsp20", "--beam-limit", "1000"])  # greedy on all
    assert not any(a.startswith("limit=") for a in calls[-2]) and "limit=1000" in calls[-1]
    test = json.loads((shipped / "manifest.json").read_text())["kool_tsp20_test"]
    assert (test["instances"], test["beam16_instances"]) == (10000, 1000)
    with pytest.raises(SystemExit, match="no such run"):
        main(ws, ["ship", "--study", "tsp20", "--run", "wr_s3"])
    with pytest.raises(SystemExit, match="no validated run of wr"):
        main(ws, ["ship", "--study", "tsp20", "--methods", "wr"])


def test_ship_augment_decodes_greedy_over_the_symmetries_and_keeps_it_for_the_same_file(
    tmp_path: Path, monkeypatch, capsys, ws: Workspace
) -> None:
    """`ship --augment 8` adds the test set's greedy over 8 symmetric copies to the manifest,
    right after the plain decoders' entry; reshipping the same file keeps that entry (it took
    long to decode), shipping another file drops it and says so."""
    runs = ws.runs / "tsp20"
    fake_run(runs / "wor_s0", [3.0, 1.5], "bbb")
    fake_run(runs / "gd_s1", [3.0, 2.0], "ccc")
    calls = []

    def decode(cmd: list[str], **kw) -> None:
        calls.append(cmd)
        out = Path(next(a for a in cmd if a.startswith("out="))[4:])
        gap = 0.3 if "search.augment=8" in cmd else 2.5
        info = {"reference_source": "exact"}
        out.write_text(json.dumps({"mean_gap": gap, "num_instances": 10000, "info": info}))

    monkeypatch.setattr(subprocess, "run", decode)
    main(ws, ["ship", "--study", "tsp20", "--augment", "8"])
    assert "search=greedy" in calls[-1] and "search.augment=8" in calls[-1]
    path = ws.shipped / "tsp20" / "manifest.json"
    manifest = json.loads(path.read_text())
    keys = list(manifest)
    assert keys.index("kool_tsp20_test_augment8") == keys.index("kool_tsp20_test") + 1
    entry = manifest["kool_tsp20_test_augment8"]
    assert (entry["greedy_gap_pct"], entry["instances"], entry["reached"]) == (0.3, 10000, True)
    assert entry["command"].startswith("nco-eval checkpoint=")
    assert str(ws.root) not in entry["command"]
    assert entry["results"].endswith("tsp20_on_tsp20_greedy_aug8.json")
    main(ws, ["ship", "--study", "tsp20"])  # the same file: kept without decoding it again
    assert not any("search.augment=8" in c for c in calls[-2:])
    assert json.loads(path.read_text())["kool_tsp20_test_augment8"] == entry
    capsys.readouterr()
    main(ws, ["ship", "--study", "tsp20", "--run", "gd_s1"])  # another file: dropped
    assert "kool_tsp20_test_augment8" not in json.loads(path.read_text())
    assert "dropped kool_tsp20_test_augment8" in capsys.readouterr().out


@pytest.mark.parametrize("study", ["tsp50", "cvrp50"])
def test_size50_studies_train_the_papers_sub_problems_per_sampled_instance(
    study: str, tmp_path: Path
) -> None:
    """1,024 sub-problems per sampled instance (paper D.2.3), the size-20 model, and for CVRP50
    the standard capacity 40 with validation references by HGS 0.5 s."""
    args = sl_vs_si.train_args(Study.load(study, Workspace.at(tmp_path)), "gd", 0, None)
    cfg = compose_train([a for a in args if not a.startswith("hydra.")], tmp_path, tiny=False)
    t = cfg.training
    assert t.batches_per_epoch * t.batch_size == 1024 * t.instances_per_epoch
    assert (cfg.model.dim, cfg.model.layers) == (128, 4)
    if study == "cvrp50":
        from hydra.utils import instantiate

        env = instantiate(cfg.problem.env)
        assert int(env.generate(2).capacity[0]) == 40
        assert (cfg.problem.reference_time_limit, cfg.sampling.sigma) == (0.5, 3.0)


@pytest.mark.parametrize(("study", "method"), [("tsp50", "gd"), ("cvrp20", "wor"), ("tsp20", "wr")])
def test_finetune_composes_to_the_papers_self_improvement_setting(
    study: str, method: str, tmp_path: Path
) -> None:
    """A fine-tune keeps the study's model and sampling and takes 1,024 sub-problems per sampled
    instance (the paper's ratio), the given learning rate and a fixed nucleus, from init.pt."""
    batches = {"tsp50": 256, "cvrp20": 512, "tsp20": 512}[study]
    setup = {"method": method, "lr": 1e-4, "batches_per_epoch": batches}
    setup |= {"p_min": 0.95, "seed": 7, "epochs": 30}
    loaded = Study.load(study, Workspace.at(tmp_path))
    args = sl_vs_si.finetune_args(loaded, setup)
    assert f"init_checkpoint={loaded.finetune_dir() / 'init.pt'}" in args
    overrides = [a for a in args if not a.startswith(("hydra.", "init_checkpoint="))]
    cfg = compose_train(overrides, tmp_path, tiny=False)
    t = cfg.training
    assert t.batches_per_epoch * t.batch_size == 1024 * t.instances_per_epoch
    assert (t.lr, cfg.seed, cfg.trainer.max_epochs, t.p_min_schedule) == (1e-4, 7, 30, None)
    assert (cfg.model.dim, cfg.model.layers) == (128, 4)
    expected = {"gd": ("gumbeldore", "global"), "wor": ("gumbeldore", "none"), "wr": ("sample",)}
    assert (cfg.search.method, cfg.search.get("update"))[: len(expected[method])] == expected[
        method
    ]
    if method != "wr":
        assert cfg.search.p_min == 0.95


def test_finetune_on_a_gpu_with_wider_epochs_composes(tmp_path: Path) -> None:
    """`--trainer gpu --instances 512` reach nco-train as the gpu trainer group (bf16 autocast)
    and 512 sampled instances per epoch, the rest of the study's setting unchanged."""
    setup = {"method": "gd", "lr": 1e-4, "batches_per_epoch": 512, "p_min": 0.95, "seed": 11}
    setup |= {"epochs": 9, "batch_size": 1024, "instances_per_epoch": 512, "trainer": "gpu"}
    args = sl_vs_si.finetune_args(Study.load("tsp50", Workspace.at(tmp_path)), setup)
    overrides = [a for a in args if not a.startswith(("hydra.", "init_checkpoint="))]
    cfg = compose_train(overrides, tmp_path, tiny=False)
    assert (cfg.trainer.accelerator, cfg.trainer.precision) == ("gpu", "bf16-mixed")
    t = cfg.training
    assert (t.instances_per_epoch, t.batches_per_epoch, t.batch_size) == (512, 512, 1024)
    assert (cfg.model.dim, cfg.sampling.beam_width, cfg.trainer.max_epochs) == (128, 16, 9)


class FakeTrain:
    """A finished `nco-train` chunk that validated the fine-tune's epochs with given gaps."""

    def __init__(self, folder: Path, gaps: list[float]) -> None:
        rows = [{"epoch": e, "val/objective": -4, "val/gap": g} for e, g in enumerate(gaps)]
        write_metrics(folder / "logs" / "metrics.csv", rows)
        (folder / "best.pt").write_bytes(b"tuned")
        (folder / "checkpoints").mkdir(exist_ok=True)
        (folder / "checkpoints" / "last.ckpt").write_bytes(b"resumable")
        (folder / ".hydra").mkdir(exist_ok=True)
        self.pid, self.returncode = 0, 0

    def wait(self) -> int:
        return 0

    def poll(self) -> int:
        return 0


def test_finetune_starts_from_a_copy_of_its_checkpoint_and_resumes_only_like_with_like(
    tmp_path: Path,
    monkeypatch,
    ws: Workspace,
) -> None:
    """The first run copies --init to init.pt and records its digest and manifest; a rerun
    continues without --init; a rerun with another setting is refused with the file named."""
    init = tmp_path / "shipped" / "best.pt"
    init.parent.mkdir()
    init.write_bytes(b"weights")
    (init.parent / "manifest.json").write_text('{"epochs_trained": 62, "training": "SI WR"}')
    launched = []

    def launch(folder: Path, args: list[str], threads: int, *_: object) -> FakeTrain:
        launched.append(args)
        return FakeTrain(folder, [3.0, 2.0, 2.5])

    monkeypatch.setattr(sl_vs_si, "launch", launch)
    monkeypatch.setattr(sl_vs_si, "git_commit", lambda checkout: "abc")
    monkeypatch.setattr(sl_vs_si, "read_init", lambda study, source: sl_vs_si.Init({}, None, 62))
    with pytest.raises(SystemExit, match="--init"):
        main(ws, ["finetune", "--study", "cvrp20"])
    with pytest.raises(SystemExit, match="no such checkpoint"):
        main(ws, ["finetune", "--study", "cvrp20", "--init", str(tmp_path / "nope.pt")])
    main(ws, ["finetune", "--study", "cvrp20", "--init", str(init), "--epochs", "3"])
    folder = ws.runs / "cvrp20" / "finetune"
    assert (folder / "init.pt").read_bytes() == b"weights"
    record = json.loads((folder / "finetune.json").read_text())
    assert record["init"]["manifest"]["epochs_trained"] == 62
    assert record["init"]["sha256"] == hashlib.sha256(b"weights").hexdigest()
    assert record["setup"] == {
        "method": "gd",
        "lr": 1e-4,
        "batches_per_epoch": 512,
        "p_min": 0.95,
        "seed": 7,
        "epochs": 3,
    }
    chunk = json.loads((folder / "chunks.jsonl").read_text())
    assert chunk["epochs"] == [0, 3] and chunk["commit"] == "abc"
    init.write_bytes(b"replaced by the shipped fine-tune")
    main(ws, ["finetune", "--study", "cvrp20", "--epochs", "3"])  # done: nothing launched
    assert len(launched) == 1
    main(ws, ["finetune", "--study", "cvrp20", "--epochs", "5"])  # extended
    assert len(launched) == 2 and "trainer.max_epochs=5" in launched[-1]
    (folder / "checkpoints" / "last.ckpt").unlink()  # a finished stage, committed without it
    with pytest.raises(SystemExit, match="last.ckpt was not kept.*--name finetune-<suffix>"):
        main(ws, ["finetune", "--study", "cvrp20", "--epochs", "8"])
    assert len(launched) == 2
    assert (folder / "init.pt").read_bytes() == b"weights"
    with pytest.raises(SystemExit, match=r"finetune\.json: this fine-tune started with --lr"):
        main(ws, ["finetune", "--study", "cvrp20", "--lr", "2e-4"])
    with pytest.raises(SystemExit, match="started with no --lr-decay"):
        main(ws, ["finetune", "--study", "cvrp20", "--lr-decay", "0.9"])
    with pytest.raises(SystemExit, match="--name tuned: expected finetune or finetune-<suffix>"):
        main(ws, ["finetune", "--study", "cvrp20", "--name", "tuned", "--init", str(init)])
    second = ["finetune", "--study", "cvrp20", "--name", "finetune-anneal", "--lr-decay", "0.9"]
    main(ws, [*second, "--init", str(init), "--lr", "5e-5", "--epochs", "3"])
    assert "training.lr_decay=0.9" in launched[-1] and "training.lr=5e-05" in launched[-1]
    anneal = ws.runs / "cvrp20" / "finetune-anneal"
    assert f"init_checkpoint={anneal / 'init.pt'}" in launched[-1]
    assert json.loads((anneal / "finetune.json").read_text())["setup"]["lr_decay"] == 0.9
    train = {"instances_per_epoch": 128, "batches_per_epoch": 512, "batch_size": 256, "lr": 5e-5}
    told = provenance.provenance(study("cvrp20", ws), "finetune-anneal", train, 1.0)
    assert "--name finetune-anneal --init" in told["command"]
    assert "--lr-decay 0.9" in told["command"] and "lr x 0.9 per epoch" in told["training"]
    with pytest.raises(SystemExit, match="started with --lr-decay 0.9"):
        main(ws, ["finetune", "--study", "cvrp20", "--name", "finetune-anneal", "--lr", "5e-5"])
    optional = [  # (stage, CLI flag and value, nco-train override, provenance wording)
        ("finetune-ema", "--ema-decay 0.999", "training.ema_decay=0.999", "moving average"),
        ("finetune-warm", "--warmup 256", "training.warmup_steps=256", "warmed up linearly"),
        ("finetune-b1024", "--batch-size 1024", "training.batch_size=1024", "epoch"),
        ("finetune-i512", "--instances 512", "training.instances_per_epoch=512", "epoch"),
        ("finetune-gpu", "--trainer gpu", "trainer=gpu", "on the gpu trainer"),
        ("finetune-a8", "--val-augment 8", "training.val_augment=8", "over 8 symmetric copies"),
    ]
    for stage, option, override, wording in optional:
        named = ["finetune", "--study", "cvrp20", "--name", stage]
        main(ws, [*named, *option.split(), "--init", str(init), "--epochs", "3"])
        assert override in launched[-1]
        told = provenance.provenance(study("cvrp20", ws), stage, train, 1.0)
        assert option in told["command"] and wording in told["training"]
        with pytest.raises(SystemExit, match=f"started with .*{option}"):
            main(ws, named)
    big = json.loads((ws.runs / "cvrp20/finetune-b1024/finetune.json").read_text())
    assert big["setup"]["batches_per_epoch"] == 128  # the paper's 1,024 per instance, 128 each
    wide = json.loads((ws.runs / "cvrp20/finetune-i512/finetune.json").read_text())
    assert wide["setup"]["batches_per_epoch"] == 2048  # 1,024 sub-problems each of 512, by 256


def test_finetune_by_imitation_trains_on_the_named_expert_data(
    tmp_path: Path, monkeypatch, ws: Workspace
) -> None:
    """`--method sl` fine-tunes in mode sl on the study's expert data or `--sl-data`, records
    the file instead of a nucleus, and refuses missing data with the command that writes it."""
    mine = without_expert_data(tmp_path, "cvrp20", "data/generated/expert/none_such.npz")
    monkeypatch.setattr(sl_vs_si, "git_commit", lambda checkout: "abc")
    monkeypatch.setattr(sl_vs_si, "read_init", lambda study, source: sl_vs_si.Init({}, None, 62))
    launched = []

    def launch(folder: Path, args: list[str], threads: int, *_: object) -> FakeTrain:
        launched.append(args)
        return FakeTrain(folder, [3.0, 2.0])

    monkeypatch.setattr(sl_vs_si, "launch", launch)
    init = tmp_path / "best.pt"
    init.write_bytes(b"weights")
    tune = ["finetune", "--study", mine, "--init", str(init), "--method", "sl"]
    with pytest.raises(SystemExit, match="(?s)none_such.npz: no expert data.*nco-data expert"):
        main(ws, tune)
    with pytest.raises(SystemExit, match="--sl-data is for --method sl, not gd"):
        main(ws, [*tune[:-2], "--sl-data", str(tmp_path / "x.npz")])
    data = tmp_path / "solved.npz"
    data.write_bytes(b"npz")
    main(ws, [*tune, "--sl-data", str(data), "--epochs", "2", "--lr", "5e-5"])
    setup = json.loads((ws.runs / "cvrp20/finetune/finetune.json").read_text())["setup"]
    assert setup["sl_data"] == str(data) and "p_min" not in setup
    assert "mode=sl" in launched[-1] and f"sl_data={data}" in launched[-1]
    assert not any("p_min" in a for a in launched[-1])
    other = tmp_path / "other.npz"
    other.write_bytes(b"npz")
    with pytest.raises(SystemExit, match=f"started with --sl-data {data}"):
        main(ws, [*tune[:3], "--method", "sl", "--sl-data", str(other), "--lr", "5e-5"])
    overrides = [a for a in launched[-1] if not a.startswith(("hydra.", "init_checkpoint="))]
    cfg = compose_train(overrides, tmp_path / "cfg", tiny=False)
    assert (cfg.mode, cfg.sl_data, cfg.training.lr) == ("sl", str(data), 5e-5)
    train = {"instances_per_epoch": 128, "batches_per_epoch": 512, "batch_size": 256, "lr": 5e-5}
    told = provenance.provenance(study("cvrp20", ws), "finetune", train, 1.0)
    assert told["training"].startswith(f"fine-tune of {init} with supervised: imitation")
    assert f"solutions in {data}: 512 Adam steps" in told["training"]
    assert "--method sl" in told["command"] and f"--sl-data {data}" in told["command"]


def test_run_from_a_smaller_study_continues_each_arm_from_its_best(
    tmp_path: Path,
    monkeypatch,
    ws: Workspace,
) -> None:
    """`run --from tsp20` copies each arm's TSP20 best.pt to init.pt, records its source, digest
    and epoch, starts from it with the arm's final p_min (WR has none), and names the start in
    the provenance; a rerun that changes the start, or a missing arm, is refused."""
    import json

    for arm in ("gd_s0", "wr_s0"):
        (ws.runs / "tsp20" / arm).mkdir(parents=True)
        (ws.runs / "tsp20" / arm / "best.pt").write_bytes(arm.encode())
    monkeypatch.setattr(sl_vs_si, "read_init", lambda study, source: sl_vs_si.Init({}, None, 57))
    monkeypatch.setattr(sl_vs_si, "target_epochs", lambda study: 2)
    monkeypatch.setattr(sl_vs_si, "git_commit", lambda checkout: "abc")
    monkeypatch.setattr(time, "sleep", lambda seconds: None)
    launched: dict[str, list[str]] = {}

    def launch(folder: Path, args: list[str], threads: int, *_: object) -> FakeTrain:
        launched[folder.name] = args
        return FakeTrain(folder, [5.0, 4.0])

    monkeypatch.setattr(sl_vs_si, "launch", launch)
    run = ["run", "--study", "tsp50", "--methods", "gd", "wr", "--seeds", "0"]
    main(ws, [*run, "--from", "tsp20"])
    for arm in ("gd_s0", "wr_s0"):
        folder = ws.runs / "tsp50" / arm
        assert (folder / "init.pt").read_bytes() == arm.encode()
        start = json.loads((folder / "start.json").read_text())
        assert (start["from"], start["epoch"], start["p_min"]) == ("tsp20", 57, 0.95)
        assert start["sha256"] == hashlib.sha256(arm.encode()).hexdigest()
        assert f"init_checkpoint={folder / 'init.pt'}" in launched[arm]
        assert "training.lr=0.0001" in launched[arm]
    assert not any(a.startswith("search.p_min") for a in launched["wr_s0"])
    gd = [a for a in launched["gd_s0"] if not a.startswith(("hydra.", "init_checkpoint"))]
    cfg = compose_train(gd, tmp_path, tiny=False)
    assert cfg.search.p_min == 0.95 and cfg.training.p_min_schedule is None
    assert cfg.training.lr == 1e-4 and cfg.training.batches_per_epoch == 256
    assert cfg.search["update"] == "global"
    train = {"instances_per_epoch": 64, "batches_per_epoch": 256, "batch_size": 256, "lr": 5e-4}
    told = provenance.provenance(study("tsp50", ws), "gd_s0", train, 1.0)
    assert told["training"].startswith("continues data/reproduction/tsp20/gd_s0/best.pt (epoch 57)")
    assert "run --study tsp50 --from tsp20 --seeds 0" in told["command"]
    assert told["init"]["sha256"] == hashlib.sha256(b"gd_s0").hexdigest()
    main(ws, ["report", "--study", "tsp50"])
    report = json.loads((ws.results / "tsp50.json").read_text())
    assert report["runs"]["gd_s0"]["start"]["from"] == "tsp20 gd_s0 epoch 57"
    assert (ws.results / "tsp50.png").is_file()
    with pytest.raises(SystemExit, match="gd_s0: this run started with --from tsp20"):
        main(ws, run)
    FakeTrain(ws.runs / "cvrp50" / "gd_s0", [9.0])  # a run from scratch
    scratch = ["run", "--study", "cvrp50", "--methods", "gd", "--seeds", "0", "--from", "cvrp20"]
    with pytest.raises(SystemExit, match=r"started with no --from \(from scratch\)"):
        main(ws, scratch)
    missing = ["run", "--study", "cvrp50", "--methods", "wor", "--seeds", "1", "--from", "cvrp20"]
    with pytest.raises(SystemExit, match="best.pt: no such checkpoint; train that arm first"):
        main(ws, missing)
    assert sorted(launched) == ["gd_s0", "wr_s0"]


def test_run_refuses_to_extend_a_run_whose_last_checkpoint_was_not_kept(
    tmp_path: Path,
    monkeypatch,
    ws: Workspace,
) -> None:
    """A run with validated epochs but no last.ckpt (a finished comparison, committed without
    it) would restart from its start and append to its metrics: `run` stops before any chunk,
    naming the run and the fine-tune command that continues its best; finished runs pass."""
    monkeypatch.setattr(sl_vs_si, "target_epochs", lambda study: 3)
    monkeypatch.setattr(sl_vs_si, "launch", lambda *a: pytest.fail("a chunk was started"))
    FakeTrain(ws.runs / "tsp20" / "wr_s0", [5.0, 4.0])
    (ws.runs / "tsp20" / "wr_s0" / "checkpoints" / "last.ckpt").unlink()
    FakeTrain(ws.runs / "tsp20" / "gd_s0", [5.0, 4.0, 3.0])  # finished: nothing to extend
    (ws.runs / "tsp20" / "gd_s0" / "checkpoints" / "last.ckpt").unlink()
    run = ["run", "--study", "tsp20", "--seeds", "0"]
    with pytest.raises(SystemExit) as stop:
        main(ws, [*run, "--methods", "gd", "wr"])
    message = str(stop.value)
    assert f"{ws.runs / 'tsp20' / 'wr_s0'}: 2 epochs done, but checkpoints/last.ckpt" in message
    assert f"finetune --study tsp20 --name finetune-<suffix> --init {tmp_path}" in message
    main(ws, [*run, "--methods", "gd"])  # all epochs done: returns without a chunk


def test_run_until_brings_every_run_to_that_epoch_and_stops(
    tmp_path: Path, monkeypatch, ws: Workspace
) -> None:
    """`--until N` trains each run to N epochs (not the study length) and then returns."""
    monkeypatch.setattr(sl_vs_si, "target_epochs", lambda study: 200)
    monkeypatch.setattr(sl_vs_si, "git_commit", lambda checkout: "abc")
    monkeypatch.setattr(time, "sleep", lambda seconds: None)
    FakeTrain(ws.runs / "tsp20" / "gd_s0", [5.0, 4.0])
    launched: list[tuple[str, list[str]]] = []

    def launch(folder: Path, args: list[str], threads: int, *_: object) -> FakeTrain:
        launched.append((folder.name, args))
        return FakeTrain(folder, [5.0, 4.0, 3.0])

    monkeypatch.setattr(sl_vs_si, "launch", launch)
    run = ["run", "--study", "tsp20", "--methods", "gd", "wr", "--seeds", "0", "--until", "3"]
    main(ws, [*run, "--turn-epochs", "5"])
    assert [(name, "trainer.max_epochs=3" in args) for name, args in launched] == [
        ("wr_s0", True),
        ("gd_s0", True),
    ]
    main(ws, run)  # both at 3: nothing more
    assert len(launched) == 2


def test_a_study_schedule_decays_every_run_from_one_epoch(
    tmp_path: Path, monkeypatch, ws: Workspace
) -> None:
    """`run --lr-decay --decay-from` is recorded once for the study; every later chunk of every
    run trains with it (also a rerun without the flags), nco-train composes it, the provenance
    and report name it, and a rerun with another schedule or half of one is refused."""
    import json

    length = [1]  # the study's epochs: one at the constant rate, then one more
    monkeypatch.setattr(sl_vs_si, "target_epochs", lambda study: length[0])
    monkeypatch.setattr(sl_vs_si, "git_commit", lambda checkout: "abc")
    monkeypatch.setattr(time, "sleep", lambda seconds: None)
    launched: list[list[str]] = []

    def launch(folder: Path, args: list[str], threads: int, *_: object) -> FakeTrain:
        launched.append(args)
        return FakeTrain(folder, [5.0, 4.0][: len(launched)])

    monkeypatch.setattr(sl_vs_si, "launch", launch)
    run = ["run", "--study", "tsp20", "--methods", "wor", "--seeds", "0", "--turn-epochs", "1"]
    main(ws, run)
    assert not any("lr_decay" in a for a in launched[0])
    length[0] = 2
    with pytest.raises(SystemExit, match="together"):
        main(ws, [*run, "--lr-decay", "0.9"])
    main(ws, [*run, "--lr-decay", "0.9", "--decay-from", "1"])
    assert json.loads((ws.runs / "tsp20" / "schedule.json").read_text())["from_epoch"] == 1
    assert ["training.lr_decay=0.9", "training.lr_decay_from=1"] == [
        a for a in launched[1] if "lr_decay" in a
    ]
    overrides = [a for a in launched[1] if not a.startswith("hydra.")]
    cfg = compose_train(overrides, tmp_path, tiny=False)
    assert (cfg.training.lr_decay, cfg.training.lr_decay_from) == (0.9, 1)
    assert "training.lr_decay_from=1" in sl_vs_si.train_args(
        study("tsp20", ws), "sl", 1, None
    )  # every arm
    main(ws, run)  # a rerun without the flags keeps the schedule (here: nothing left to do)
    assert len(launched) == 2
    with pytest.raises(SystemExit, match="decays its learning rate by 0.9 per epoch from epoch 1"):
        main(ws, [*run, "--lr-decay", "0.95", "--decay-from", "1"])
    train = {"instances_per_epoch": 128, "batches_per_epoch": 100, "batch_size": 256, "lr": 5e-4}
    told = provenance.provenance(study("tsp20", ws), "wor_s0", train, 1.0)
    assert told["training"].endswith("x 0.9 per epoch from epoch 1")
    assert "run --study tsp20 --lr-decay 0.9 --decay-from 1 --seeds 0" in told["command"]
    main(ws, ["report", "--study", "tsp20"])
    report = json.loads((ws.results / "tsp20.json").read_text())
    assert report["schedule"]["lr_decay"] == 0.9


def test_finetune_of_a_grown_checkpoint_trains_its_sizes(
    tmp_path: Path, monkeypatch, ws: Workspace
) -> None:
    """A checkpoint with more layers than the study's model is fine-tuned at its own size:
    the sizes are recorded once, passed to nco-train, and the composed model loads init.pt;
    the checkpoint it was grown from is recorded with its manifest (to place the curve)."""
    from omegaconf import OmegaConf

    from nco import checkpoint, registry

    composed = sl_vs_si.study_config(study("cvrp20", ws))
    model = OmegaConf.to_container(composed.model, resolve=True) | {"layers": 5}
    problem = OmegaConf.to_container(composed.problem, resolve=True)
    init = tmp_path / "grown.pt"
    small = tmp_path / "shipped" / "best.pt"
    small.parent.mkdir()
    (small.parent / "manifest.json").write_text('{"run": "data/reproduction/cvrp20/wr_s0 (x)"}')
    meta = {"grown": {"source": str(small)}}
    checkpoint.save(init, registry.build("policy", model, "test"), model, problem, meta)
    launched = []

    def launch(folder: Path, args: list[str], threads: int, *_: object) -> FakeTrain:
        launched.append(args)
        return FakeTrain(folder, [3.0])

    monkeypatch.setattr(sl_vs_si, "launch", launch)
    monkeypatch.setattr(sl_vs_si, "git_commit", lambda checkout: "abc")
    main(ws, ["finetune", "--study", "cvrp20", "--init", str(init), "--epochs", "1"])
    folder = ws.runs / "cvrp20" / "finetune"
    record = json.loads((folder / "finetune.json").read_text())
    assert record["model"] == {"layers": 5}
    assert record["init"]["grown"] == {
        "source": str(small),
        "manifest": {"run": "data/reproduction/cvrp20/wr_s0 (x)"},
    }
    assert "model.layers=5" in launched[-1]
    main(ws, ["finetune", "--study", "cvrp20", "--epochs", "2"])  # resumed: same sizes
    assert "model.layers=5" in launched[-1]
    overrides = [a for a in launched[-1] if not a.startswith(("hydra.", "init_checkpoint="))]
    cfg = compose_train(overrides, tmp_path, tiny=False)
    policy = registry.build("policy", OmegaConf.to_container(cfg.model, resolve=True), "test")
    policy.load_state_dict(checkpoint.load(folder / "init.pt").policy.state_dict())


def test_ship_a_finetune_names_the_checkpoint_it_started_from(
    tmp_path: Path, monkeypatch, ws: Workspace
) -> None:
    """`ship --run finetune` ships the fine-tune's best.pt; its manifest gives the command
    that continues the fine-tune and the starting checkpoint's own manifest facts."""
    runs = ws.runs / "tsp50"
    fake_run(runs / "finetune", [3.0, 1.5, 1.6], "ddd")
    setup = {"method": "gd", "lr": 2e-4, "batches_per_epoch": 256, "p_min": 0.95}
    record = {
        "study": "tsp50",
        "setup": setup | {"seed": 7, "epochs": 3},
        "init": {
            "source": "data/checkpoints/tsp20/best.pt",
            "sha256": "f00",
            "manifest": {
                "epochs_trained": 78,
                "wall_time_h": 1.9,
                "kool_tsp20_test": {"greedy_gap_pct": 1.65},
            },
        },
    }
    (runs / "finetune" / "finetune.json").write_text(json.dumps(record))

    def decode(cmd: list[str], **kw) -> None:
        out = Path(next(a for a in cmd if a.startswith("out="))[4:])
        gap = 0.3 if "search.beam_width=16" in cmd else 1.7
        info = {"reference_source": "exact"}
        n = int(next((a[6:] for a in cmd if a.startswith("limit=")), 10000))
        out.write_text(json.dumps({"mean_gap": gap, "num_instances": n, "info": info}))

    monkeypatch.setattr(subprocess, "run", decode)
    main(ws, ["ship", "--study", "tsp50", "--run", "finetune"])
    shipped = ws.shipped / "tsp50"
    assert (shipped / "best.pt").read_bytes() == b"finetune"
    manifest = json.loads((shipped / "manifest.json").read_text())
    assert manifest["command"].startswith(
        "nco-study finetune --study tsp50 --init data/checkpoints/tsp20"
    )
    assert "--lr 0.0002 --batches 256 --p-min 0.95" in manifest["command"]
    assert "search=gumbeldore" in manifest["command"]
    assert manifest["training"].startswith("fine-tune of data/checkpoints/tsp20/best.pt with")
    assert manifest["init"]["epochs_trained"] == 78
    assert manifest["init"]["kool_tsp20_test"]["greedy_gap_pct"] == 1.65
    assert manifest["target"]["reached"] is True and manifest["best_epoch"] == 1
    fake_run(runs / "finetune-anneal", [1.4, 1.2], "eee")  # a second stage from the first's best
    init = {"source": "data/reproduction/tsp50/finetune/best.pt", "sha256": "f01", "manifest": None}
    record |= {"init": init, "setup": setup | {"seed": 7, "epochs": 2, "lr_decay": 0.9}}
    (runs / "finetune-anneal" / "finetune.json").write_text(json.dumps(record))
    main(ws, ["ship", "--study", "tsp50", "--run", "finetune-anneal"])
    manifest = json.loads((shipped / "manifest.json").read_text())
    assert (
        "--name finetune-anneal --init data/reproduction/tsp50/finetune/best.pt"
        in (manifest["command"])
    )
    earlier = manifest["init"]  # the first fine-tune as a stage, with what it started from
    assert earlier["command"].startswith("nco-study finetune --study tsp50 ")
    assert (earlier["epochs_trained"], earlier["best_epoch"]) == (3, 1)
    assert earlier["init"]["epochs_trained"] == 78 and earlier["init"]["wall_time_h"] == 1.9
    assert manifest["wall_time_h_total"] == 1.9  # the fake runs record no wall time


def test_report_draws_a_finetune_from_the_study_run_it_started_from(
    tmp_path: Path,
    monkeypatch,
    ws: Workspace,
) -> None:
    """A fine-tune of a study run continues that run's curve after its best epoch; a study with
    only a fine-tune (its start from elsewhere) is reported from epoch 0."""
    runs = ws.runs / "cvrp20"
    fake_run(runs / "wr_s0", [20.0, 12.0, 13.0], "aaa")
    fake_run(runs / "finetune", [11.0, 9.0], "bbb")
    init = {"source": "data/checkpoints/cvrp20/best.pt", "sha256": "0"}
    init["manifest"] = {"run": "data/reproduction/cvrp20/wr_s0 (metrics.csv)"}
    record = {"setup": {"method": "gd"}, "init": init}
    (runs / "finetune" / "finetune.json").write_text(json.dumps(record))
    main(ws, ["report", "--study", "cvrp20"])
    report = json.loads((ws.results / "cvrp20.json").read_text())
    tune = report["finetunes"]["finetune"]
    assert tune["start"] == {"from": "wr_s0 epoch 1", "epoch": 2, "hours": 0.0, "grown": False}
    assert (tune["method"], tune["best_epoch"], tune["best_val_gap"]) == ("gd", 1, 9.0)
    assert "finetune" not in json.loads((ws.results / "cvrp20.json").read_text())["runs"]
    second = runs / "finetune-anneal"  # a second stage from the first fine-tune's best
    fake_run(second, [8.5, 8.0, 8.2], "eee")
    init2 = {"source": "data/reproduction/cvrp20/finetune/best.pt", "manifest": None}
    (second / "finetune.json").write_text(json.dumps({**record, "init": init2}))
    main(ws, ["report", "--study", "cvrp20"])
    tunes = json.loads((ws.results / "cvrp20.json").read_text())["finetunes"]
    assert tunes["finetune-anneal"]["start"]["from"] == "finetune epoch 1"
    assert tunes["finetune-anneal"]["start"]["epoch"] == 4  # after wr_s0's 2 and its 2 epochs
    grown = runs / "finetune-grown"  # from a file grown out of the shipped one (not in the repo)
    fake_run(grown, [8.4], "fff")
    init3 = {"source": "data/generated/grown/x.pt", "manifest": None, "grown": init}
    (grown / "finetune.json").write_text(json.dumps({**record, "init": init3}))
    main(ws, ["report", "--study", "cvrp20"])
    tunes = json.loads((ws.results / "cvrp20.json").read_text())["finetunes"]
    start = {"from": "wr_s0 epoch 1", "epoch": 2, "hours": 0.0, "grown": True}
    assert tunes["finetune-grown"]["start"] == start  # placed after the shipped file's run
    other = ws.runs / "tsp50" / "finetune"
    fake_run(other, [5.0, 4.0], "ccc")
    init["manifest"] = None
    (other / "finetune.json").write_text(json.dumps(record))
    main(ws, ["report", "--study", "tsp50"])
    report = json.loads((ws.results / "tsp50.json").read_text())
    tune = report["finetunes"]["finetune"]
    assert tune["start"]["epoch"] == 0 and tune["start"]["from"].endswith("best.pt")
    assert (ws.results / "tsp50.png").is_file()


def test_chunks_cache_validation_references_in_the_repository(monkeypatch) -> None:
    """A chunk solves its validation set once for every machine: the cache is committed."""
    monkeypatch.setenv("NCO_CACHE_DIR", "/elsewhere")
    cache = Workspace.at(SCRIPTS.parent).cache
    env = chunks.chunk_env(1, cache)
    assert env["NCO_CACHE_DIR"] == str(SCRIPTS.parent / "data" / "reproduction" / "cache")
    assert env["OMP_NUM_THREADS"] == "1"
    assert (cache / "references").is_dir()  # the committed entries


def test_the_script_runs_nco_study_with_the_checkout_as_root(tmp_path: Path) -> None:
    """`python scripts/reproduction.py <command>` (the command line of docs and running
    studies) is `nco-study --root <checkout> <command>`: a study with no runs is reported as
    missing under the checkout's data/reproduction."""
    mine = without_expert_data(tmp_path, "tsp20", "x.npz")
    renamed = Path(mine).with_name("no_such_study_yet.yaml")
    Path(mine).rename(renamed)
    proc = subprocess.run(
        [sys.executable, str(SCRIPTS / "reproduction.py"), "report", "--study", str(renamed)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0
    missing = SCRIPTS.parent / "data" / "reproduction" / "no_such_study_yet"
    assert f"nco-study report: {missing}: no runs yet" in proc.stderr


def test_chunks_name_the_commit_of_the_code_they_run(tmp_path: Path) -> None:
    """A chunk started in a checkout (e.g. a worktree kept for a long study) imports that
    checkout's nco, so its commit is recorded; elsewhere the installed nco's."""
    from nco.paths import SOURCE_ROOT

    worktree = tmp_path / "worktree"
    (worktree / "nco").mkdir(parents=True)
    (worktree / "nco" / "__init__.py").touch()
    assert chunks.code_checkout(worktree) == worktree
    assert chunks.code_checkout(tmp_path) == SOURCE_ROOT
    assert chunks.git_commit(tmp_path).startswith("nco ")  # not a git checkout


def test_a_chunk_outside_any_checkout_or_installation_records_its_code_as_unrecorded(
    tmp_path: Path, monkeypatch
) -> None:
    """A copy of the sources without git metadata (a GPU machine's copy of the working tree)
    and without an installed nco records 'unrecorded' instead of failing the chunk; with the
    package installed it records its version; in this checkout, the commit."""
    assert chunks.git_commit(tmp_path).startswith("nco ")  # .venv has nco installed

    def missing(name: str) -> str:
        raise chunks.importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(chunks.importlib.metadata, "version", missing)
    assert chunks.git_commit(tmp_path) == "unrecorded"
    monkeypatch.setenv("PATH", str(tmp_path))  # no git at all
    assert chunks.git_commit(tmp_path) == "unrecorded"
    monkeypatch.undo()
    assert len(chunks.git_commit().split("+")[0]) == 40
