"""The JSSP Table 2 script and the JSSP experiment configs."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from script_loader import load_script

from nco import checkpoint
from nco.problems.jssp.taillard import taillard_group

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"


def upper_bounds() -> dict[str, float]:
    """Best-known upper bounds read straight from the CSV."""
    with open(ROOT / "data/jssp/taillard_bounds.csv") as f:
        return {row["name"]: float(row["upper_bound"]) for row in csv.DictReader(f)}


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random-weight tiny JSSP transformer saved with nco.checkpoint.save."""
    torch.manual_seed(0)
    model = OmegaConf.to_container(OmegaConf.load(CONFIGS / "model/jssp_transformer_tiny.yaml"))
    problem = {
        "name": "jssp",
        "env": {"_target_": "nco.problems.jssp.JSSPEnv", "num_jobs": 15, "num_machines": 15},
    }
    path = tmp_path_factory.mktemp("ckpt") / "tiny.pt"
    checkpoint.save(path, instantiate(model), model, problem, {"mode": "test"})
    return path


def test_table_gaps_match_bounds_and_schedule(tiny_checkpoint: Path, tmp_path: Path) -> None:
    """Greedy on ta01: the JSON gap is (makespan - ub) / ub, the makespan is that of the
    decoded schedule, and the markdown cell shows the same numbers."""
    script = load_script("jssp_table2")
    out = tmp_path / "t2"
    result = script.main(
        [
            f"checkpoint={tiny_checkpoint}",
            f"out={out}",
            "--groups",
            "15x15",
            "--limit",
            "1",
            "--methods",
            "greedy",
        ]
    )
    stored = json.loads(out.with_suffix(".json").read_text())
    assert stored == json.loads(json.dumps(result))
    run = stored["table"]["greedy"]["15x15"]["runs"][0]
    assert run["names"] == ["ta01"]
    ub = upper_bounds()["ta01"]
    assert run["references"] == [ub] and ub == 1231
    makespan = run["objectives"][0]
    assert makespan >= ub and makespan == int(makespan)
    assert run["gaps"][0] == pytest.approx((makespan - ub) / ub)
    assert stored["table"]["greedy"]["15x15"]["gap"] == pytest.approx(100 * (makespan - ub) / ub)

    loaded = checkpoint.load(tiny_checkpoint)
    instances, names, _ = taillard_group("ta01")
    with torch.no_grad():
        state = loaded.env.reset(instances)
        while not bool(loaded.env.is_done(state).all()):
            logits = loaded.policy(state).masked_fill(~loaded.env.action_mask(state), -torch.inf)
            state = loaded.env.step(state, logits.argmax(-1))
    assert float(loaded.env.cost(loaded.env.objective(state))[0]) == makespan

    rows = out.with_suffix(".md").read_text().splitlines()
    assert rows[0].startswith("| Method | 15x15 Gap | 15x15 Time |")
    gap_cell = rows[2].split("|")[2].strip()
    assert gap_cell == f"{100 * (makespan - ub) / ub:.1f}%"


def test_chunks_join_resume_and_refuse(
    tiny_checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--chunk 1` gives the one-run cell's numbers; a cell stopped after its first chunk
    continues from the kept chunk on rerun; a kept chunk of another seed is refused."""
    script = load_script("jssp_table2")
    base = [f"checkpoint={tiny_checkpoint}", "--groups", "15x15", "--limit", "2"]
    whole = script.main([*base, f"out={tmp_path / 'whole'}", "--methods", "greedy"])
    out = tmp_path / "cell"
    parts = tmp_path / "cell.parts"
    decoded: list[int] = []
    real_run = script.run

    def stop_after_one(cfg: DictConfig) -> Any:  # the second chunk's run is stopped, as by Ctrl-C
        if decoded:
            raise KeyboardInterrupt
        decoded.append(cfg.offset)
        return real_run(cfg)

    monkeypatch.setattr(script, "run", stop_after_one)
    with pytest.raises(KeyboardInterrupt):
        script.main([*base, f"out={out}", "--methods", "greedy", "--chunk", "1"])
    assert decoded == [0] and [p.name for p in parts.iterdir()] == [
        "greedy_15x15_seed1234_0+1.json"
    ]
    assert not out.with_suffix(".json").exists()

    def count(cfg: DictConfig) -> Any:
        decoded.append(cfg.offset)
        return real_run(cfg)

    monkeypatch.setattr(script, "run", count)
    chunked = script.main([*base, f"out={out}", "--methods", "greedy", "--chunk", "1"])
    assert decoded == [0, 1]  # only the second instance was decoded again
    run, one = chunked["table"]["greedy"]["15x15"]["runs"][0], whole["table"]["greedy"]["15x15"]
    assert run["names"] == ["ta01", "ta02"] == one["runs"][0]["names"]
    assert run["objectives"] == one["runs"][0]["objectives"]
    assert chunked["table"]["greedy"]["15x15"]["gap"] == pytest.approx(one["gap"])
    assert chunked["chunk"] == 1 and not parts.exists()

    monkeypatch.setattr(script, "run", real_run)
    other = script.parse_args([*base, f"out={tmp_path / 'other'}", "--chunk", "1", "--seed", "7"])
    script.chunk(other, "15x15", "sbs16", 7, 0, 1)  # kept as other.parts/..._seed7_0+1.json
    stale = tmp_path / "stale.parts" / "sbs16_15x15_seed1234_0+1.json"
    stale.parent.mkdir()
    (tmp_path / "other.parts" / "sbs16_15x15_seed7_0+1.json").rename(stale)
    with pytest.raises(ValueError, match=r"stale.parts/sbs16_15x15_seed1234_0\+1.json.*'seed'"):
        script.main([*base, f"out={tmp_path / 'stale'}", "--methods", "sbs16", "--chunk", "1"])
    with pytest.raises(ValueError, match="--chunk"):
        script.parse_args([*base, "out=x", "--chunk", "0"])


def test_kept_chunks_belong_to_the_file_not_its_path(
    tiny_checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chunk decoded from a copy of the checkpoint (a CPU cell run from /tmp) is taken as it is
    by the same command on the original file (a GPU window's checkout); a file with the same meta
    but other weights is refused by its sha256."""
    script = load_script("jssp_table2")
    copy = tmp_path / "copy" / "best.pt"
    copy.parent.mkdir()
    copy.write_bytes(tiny_checkpoint.read_bytes())
    base = ["--groups", "15x15", "--limit", "1", "--methods", "greedy", "--chunk", "1"]
    out = tmp_path / "cell"
    args = script.parse_args([f"checkpoint={copy}", f"out={out}", *base])
    kept = script.chunk(args, "15x15", "greedy", 1234, 0, 1)
    part = tmp_path / "cell.parts" / "greedy_15x15_seed1234_0+1.json"
    stored = json.loads(part.read_text())["info"]
    assert stored["checkpoint"] == str(copy)
    assert stored["checkpoint_sha256"] == script.checkpoint_sha256(str(tiny_checkpoint))

    payload = torch.load(copy, weights_only=True)  # the same meta, one weight changed
    name = next(iter(payload["weights"]))
    payload["weights"][name] = payload["weights"][name] + 1.0
    other = tmp_path / "other.pt"
    torch.save(payload, other)
    with pytest.raises(ValueError, match=r"greedy_15x15_seed1234_0\+1.json.*'checkpoint_sha256'"):
        script.main([f"checkpoint={other}", f"out={out}", *base])

    monkeypatch.setattr(script, "run", lambda cfg: pytest.fail("a kept chunk was decoded again"))
    merged = script.main([f"checkpoint={tiny_checkpoint}", f"out={out}", *base])
    assert merged["table"]["greedy"]["15x15"]["runs"][0]["objectives"] == kept.objectives


def test_baseline_rows_and_bad_input(tmp_path: Path) -> None:
    """A results JSON becomes a row labelled with its time limit; unknown groups, methods and
    non-Taillard baselines raise ValueError."""
    script = load_script("jssp_table2")
    results = {
        "problem": "jssp",
        "dataset": "taillard:15x15",
        "method": "cpsat",
        "num_instances": 2,
        "objectives": [1250.0, 1244.0],
        "references": [1231.0, 1244.0],
        "gaps": [19 / 1231, 0.0],
        "mean_cost": 1247.0,
        "mean_gap": 50 * 19 / 1231,
        "wall_time_s": 20.0,
        "info": {"time_limit": 10.0},
    }
    path = tmp_path / "cp.json"
    path.write_text(json.dumps(results))
    rows = script.baseline_rows([str(path)])
    assert rows["cpsat, 10 s"]["15x15"]["gap"] == pytest.approx(50 * 19 / 1231)
    text = script.markdown(rows, ["15x15", "20x15"])
    assert "| cpsat, 10 s | 0.8% | 20.0s | - | - |" in text

    with pytest.raises(ValueError, match="groups"):
        script.parse_args(["checkpoint=x", "out=y", "--groups", "15x16"])
    with pytest.raises(ValueError, match="methods"):
        script.parse_args(["checkpoint=x", "out=y", "--methods", "beam8"])
    results["method"] = "pdr:fdd/mwkr"  # nco-baseline records a time limit for rules too
    path.write_text(json.dumps(results))
    assert list(script.baseline_rows([str(path)])) == ["pdr:fdd/mwkr"]
    results["dataset"] = "kool:tsp20_test"
    path.write_text(json.dumps(results))
    with pytest.raises(ValueError, match="taillard"):
        script.baseline_rows([str(path)])


def test_gumbeldore_rows_differ_in_the_nucleus_only() -> None:
    """Table 2's GD row grows the nucleus from p_min 0.8 (the caption); the appendix C.3 row
    keeps p=0.8 in every round; both are Gumbeldore 32 x 4 with sigma 0.05."""
    script = load_script("jssp_table2")
    args = script.parse_args(["checkpoint=x.pt", "out=y"])
    grown = script.compose_cell(args, "15x15", "gd32x4", 1, 0, None).search
    constant = script.compose_cell(args, "15x15", "gd32x4p", 1, 0, None).search
    assert (grown.p_min, grown.top_p) == (0.8, None)
    assert (constant.p_min, constant.top_p) == (1.0, 0.8)
    for search in (grown, constant):
        assert search.method == "gumbeldore"
        assert (search.beam_width, search.rounds, search.sigma) == (32, 4, 0.05)
    assert "gd32x4p" in script.STOCHASTIC


# a label as docs/jssp.md writes one: "=" inside a value must not be read as key=value
LABEL = "best.pt (= the run's epoch 51, sha256 90de...; a copy at /tmp/x.pt) on one thread"


def test_key_value_tokens_name_options_only() -> None:
    """`key=value` becomes `--key value` only where key is an option; values keep their "="."""
    script = load_script("jssp_table2")
    args = script.parse_args(["checkpoint=x.pt", "out=y", "--label", "a=b (= c)", "batch_size=3"])
    assert (args.checkpoint, args.out, args.label, args.batch_size) == ("x.pt", "y", "a=b (= c)", 3)
    assert script.parse_args(["checkpoint=x.pt", "out=y", f"label={LABEL}"]).label == LABEL
    with pytest.raises(SystemExit):
        script.parse_args(["checkpoint=x.pt", "out=y", "colour=red"])


def run_cells(
    *args: str, results: Path, label: str = "", **extra: str
) -> subprocess.CompletedProcess[str]:
    """scripts/jssp_cells.sh with this interpreter, first instance of each group only; `extra`
    are more environment variables (SEED, REPEATS)."""
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "RESULTS": str(results),
        "LIMIT": "1",
        "LABEL": label,
        **extra,
    }
    return subprocess.run(
        ["bash", str(ROOT / "scripts/jssp_cells.sh"), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=results,
        check=False,
    )


def test_cells_script_runs_skips_and_rejects(tiny_checkpoint: Path, tmp_path: Path) -> None:
    """Each cell becomes its own table2 output named by method, group and tag; a rerun skips
    the cells done; a malformed cell is refused before any cell runs."""
    done = run_cells(str(tiny_checkpoint), "t", "greedy:15x15", results=tmp_path)
    assert done.returncode == 0, done.stderr
    cell = json.loads((tmp_path / "taillard_greedy_15x15_t.json").read_text())
    run = cell["table"]["greedy"]["15x15"]["runs"][0]
    assert run["names"] == ["ta01"] and run["objectives"][0] >= upper_bounds()["ta01"]
    assert cell["checkpoint"] == str(tiny_checkpoint)
    labelled = run_cells(str(tiny_checkpoint), "t", "greedy:20x15", results=tmp_path, label=LABEL)
    assert labelled.returncode == 0, labelled.stderr
    cell = json.loads((tmp_path / "taillard_greedy_20x15_t.json").read_text())
    assert cell["checkpoint"] == LABEL
    again = run_cells(str(tiny_checkpoint), "t", "greedy:15x15", results=tmp_path)
    assert again.returncode == 0 and "skip:" in again.stdout
    bad = run_cells(str(tiny_checkpoint), "t", "beam16:20x15", "greedy@15x15", results=tmp_path)
    assert bad.returncode == 2 and "greedy@15x15" in bad.stderr
    assert not (tmp_path / "taillard_beam16_20x15_t.json").exists()
    for spec in ("beam8:15x15", "greedy:15x16"):
        unknown = run_cells(str(tiny_checkpoint), "t", "beam16:20x15", spec, results=tmp_path)
        assert unknown.returncode == 2 and spec in unknown.stderr
    assert not (tmp_path / "taillard_beam16_20x15_t.json").exists()
    missing = run_cells(str(tmp_path / "none.pt"), "t", "greedy:15x15", results=tmp_path)
    assert missing.returncode == 2 and "none.pt" in missing.stderr
    more = run_cells(
        str(tiny_checkpoint), "s1240", "sbs16:15x15", results=tmp_path, SEED="1240", REPEATS="2"
    )
    assert more.returncode == 0, more.stderr
    runs = json.loads((tmp_path / "taillard_sbs16_15x15_s1240.json").read_text())["table"]
    assert [run["seed"] for run in runs["SBS 16, p=0.8"]["15x15"]["runs"]] == [1240, 1241]


def test_shards_fill_parts_then_merge(
    tiny_checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two `--shard` processes of SBS 16 x 2 repeats on two instances split the four chunks
    between them, write no table, and the unsharded command then merges without decoding: the
    same numbers as one unsharded chunked run (same seeds per chunk); a bad --shard is refused."""
    script = load_script("jssp_table2")
    base = [f"checkpoint={tiny_checkpoint}", "--groups", "15x15", "--limit", "2"]
    base += ["--methods", "sbs16", "--repeats", "2"]
    out = tmp_path / "cell"
    first = script.main([*base, f"out={out}", "--chunk", "1", "--shard", "0/2"])
    assert first == {"shard": [0, 2], "chunks": 4, "missing": 2}
    assert sorted(p.name for p in (tmp_path / "cell.parts").iterdir()) == [
        "sbs16_15x15_seed1234_0+1.json",
        "sbs16_15x15_seed1235_0+1.json",
    ]
    assert not out.with_suffix(".json").exists()
    assert script.main([*base, f"out={out}", "--chunk", "1", "--shard", "1/2"])["missing"] == 0
    with monkeypatch.context() as patch:
        patch.setattr(script, "run", lambda cfg: pytest.fail("the merge decoded a chunk again"))
        merged = script.main([*base, f"out={out}", "--chunk", "1"])
    whole = script.main([*base, f"out={tmp_path / 'whole'}", "--chunk", "1"])
    cells = [table["table"]["SBS 16, p=0.8"]["15x15"] for table in (merged, whole)]
    objectives = [[run["objectives"] for run in cell["runs"]] for cell in cells]
    assert objectives[0] == objectives[1]
    assert not (tmp_path / "cell.parts").exists()
    for bad in ("2/2", "1", "a/2"):
        with pytest.raises(ValueError, match="--shard"):
            script.parse_args([*base, "out=x", "--chunk", "1", "--shard", bad])
    with pytest.raises(ValueError, match="needs --chunk"):
        script.parse_args([*base, "out=x", "--shard", "0/2"])


def test_cells_script_shards(tiny_checkpoint: Path, tmp_path: Path) -> None:
    """SHARDS=2 decodes a cell's chunks in two processes and merges them into the cell's JSON."""
    done = run_cells(
        str(tiny_checkpoint), "t", "greedy:15x15", results=tmp_path, SHARDS="2", LIMIT="2"
    )
    assert done.returncode == 0, done.stderr
    assert "shard 0/2" in done.stdout and "shard 1/2" in done.stdout
    run = json.loads((tmp_path / "taillard_greedy_15x15_t.json").read_text())["table"]["greedy"]
    assert run["15x15"]["runs"][0]["names"] == ["ta01", "ta02"]
    assert not (tmp_path / "taillard_greedy_15x15_t.parts").exists()


def test_merge_and_published_rows(tiny_checkpoint: Path, tmp_path: Path) -> None:
    """A table assembled from an earlier output (no decoding) keeps its cells and names their
    file; the published rows are the paper's; another checkpoint's output and a cell in two
    files are refused."""
    script = load_script("jssp_table2")
    first = tmp_path / "first"
    common = [f"checkpoint={tiny_checkpoint}", "--groups", "15x15", "--limit", "1"]
    done = script.main([*common, f"out={first}", "--methods", "greedy"])
    out = tmp_path / "assembled"
    table = script.main(
        [*common, f"out={out}", "--methods", "--merge", f"{first}.json", "--published"]
    )["table"]
    greedy = table["greedy"]["15x15"]
    assert greedy["gap"] == done["table"]["greedy"]["15x15"]["gap"]
    assert greedy["source"] == f"{first}.json"
    assert table["SI GD, greedy (published)"]["15x15"] == {"gap": 9.6, "time": "1s"}
    assert table["L2D, greedy (published)"]["100x20"]["gap"] == 13.6
    text = out.with_suffix(".md").read_text()
    assert "| SI GD, GD 32x4 (published) | 5.0% | 4s |" in text

    with pytest.raises(ValueError, match="two --merge files"):
        script.merged_rows([f"{first}.json", f"{first}.json"], str(tiny_checkpoint))
    with pytest.raises(ValueError, match="checkpoint"):
        script.merged_rows([f"{first}.json"], "another.pt")
    (tmp_path / "other.json").write_text('{"problem": "jssp"}')
    with pytest.raises(ValueError, match="no output of this script"):
        script.merged_rows([str(tmp_path / "other.json")], str(tiny_checkpoint))


def test_arm_rows_of_another_checkpoint(tiny_checkpoint: Path, tmp_path: Path) -> None:
    """`--arm NAME FILE...` adds another checkpoint's rows under its name, each cell naming its
    file; an arm mixing checkpoints, or without files, is refused."""
    script = load_script("jssp_table2")
    common = [f"checkpoint={tiny_checkpoint}", "--groups", "15x15", "--limit", "1"]
    wor, other = tmp_path / "wor", tmp_path / "other"
    done = script.main([*common, f"out={wor}", "--methods", "greedy", "--label", "wor.pt"])
    script.main([*common, f"out={other}", "--methods", "beam16", "--label", "gd.pt"])
    out = tmp_path / "both"
    result = script.main([*common, f"out={out}", "--methods", "--arm", "SI WOR", f"{wor}.json"])
    cell = result["table"]["SI WOR, greedy"]["15x15"]
    assert cell["gap"] == done["table"]["greedy"]["15x15"]["gap"]
    assert cell["source"] == f"{wor}.json"
    assert result["arms"] == {"SI WOR": [f"{wor}.json"]}
    assert "| SI WOR, greedy |" in out.with_suffix(".md").read_text()
    with pytest.raises(ValueError, match="checkpoint"):
        script.main(
            [*common, f"out={out}", "--methods", "--arm", "x", f"{wor}.json", f"{other}.json"]
        )
    with pytest.raises(ValueError, match="--arm needs a name"):
        script.main([*common, f"out={out}", "--methods", "--arm", "SI WOR"])


def test_merge_refuses_an_older_file_of_the_same_path(
    tiny_checkpoint: Path, tmp_path: Path
) -> None:
    """A label's sha256 mark must be the merged checkpoint's: outputs of the file shipped before
    under the same path stay out of the table (also through `main`), and an arm takes only the
    files of its first file's checkpoint."""
    script = load_script("jssp_table2")
    sha = hashlib.sha256(tiny_checkpoint.read_bytes()).hexdigest()
    common = [f"checkpoint={tiny_checkpoint}", "--groups", "15x15", "--limit", "1"]
    now, old = tmp_path / "now", tmp_path / "old"
    for out, mark in ((now, sha[:8]), (old, "cb52b44c")):
        label = f"{tiny_checkpoint} (= epoch 1, sha256 {mark}...) on one thread"
        script.main([*common, f"out={out}", "--methods", "greedy", "--label", label])
    assert "greedy" in script.merged_rows([f"{now}.json"], str(tiny_checkpoint), sha)
    with pytest.raises(ValueError, match=f"sha256 {sha[:8]}"):
        script.merged_rows([f"{old}.json"], str(tiny_checkpoint), sha)
    with pytest.raises(ValueError, match="expected"):
        script.main([*common, f"out={tmp_path / 't'}", "--methods", "--merge", f"{old}.json"])
    arm = script.arm_rows([["before", f"{old}.json"]])
    assert arm["before, greedy"]["15x15"]["source"] == f"{old}.json"
    with pytest.raises(ValueError, match="expected"):
        script.arm_rows([["before", f"{old}.json", f"{now}.json"]])


def test_merge_joins_repeats_of_other_seeds(tiny_checkpoint: Path, tmp_path: Path) -> None:
    """Repeats of a stochastic cell run apart (other seeds, other files) join into one cell of
    their mean; the same seed twice, or other instances, are refused."""
    script = load_script("jssp_table2")
    common = [f"checkpoint={tiny_checkpoint}", "--groups", "15x15", "--methods", "sbs16"]
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    script.main([*common, "--limit", "2", f"out={a}"])
    script.main([*common, "--limit", "2", f"out={b}", "--seed", "1235", "--repeats", "2"])
    script.main([*common, "--limit", "1", f"out={c}", "--seed", "1240"])
    joined = script.merged_rows([f"{a}.json", f"{b}.json"], str(tiny_checkpoint))
    cell = joined["SBS 16, p=0.8"]["15x15"]
    assert [run["seed"] for run in cell["runs"]] == [1234, 1235, 1236]
    assert cell["gap"] == pytest.approx(np.mean([run["mean_gap"] for run in cell["runs"]]))
    assert cell["source"] == f"{a}.json, {b}.json"
    assert "(mean of 3)" in script.markdown(joined, ["15x15"])
    with pytest.raises(ValueError, match="two --merge files"):
        script.merged_rows([f"{a}.json", f"{b}.json", f"{a}.json"], str(tiny_checkpoint))
    with pytest.raises(ValueError, match="other instances"):
        script.merged_rows([f"{a}.json", f"{c}.json"], str(tiny_checkpoint))


def compose_train(overrides: list[str]):
    """The composed nco-train config (configs/train.yaml) with `overrides`."""
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        return compose(config_name="train", overrides=overrides)


def test_paper_experiment_config() -> None:
    """jssp_gumbeldore holds the settings of appendix D.4.3 and builds the paper-size model."""
    cfg = compose_train(["experiment=jssp_gumbeldore"])
    assert OmegaConf.to_container(cfg.problem.env.sizes) == [[15, 10], [15, 15], [15, 20]]
    assert (cfg.search.method, cfg.search.beam_width, cfg.search.rounds) == ("gumbeldore", 32, 4)
    assert (cfg.search.sigma, cfg.search.p_min, cfg.search["update"]) == (0.05, 1.0, "global")
    assert dict(cfg.training.p_min_schedule) == {0: 1.0, 50: 0.95}
    t = cfg.training
    assert (t.instances_per_epoch, t.batches_per_epoch, t.batch_size, t.lr) == (
        512,
        1000,
        512,
        2e-4,
    )
    assert (cfg.trainer.max_epochs, cfg.trainer.gradient_clip_val) == (100, 1.0)
    policy = instantiate(cfg.model)
    assert (cfg.model.dim, cfg.model.pairs, cfg.model.heads, cfg.model.ff_dim) == (64, 3, 8, 256)
    env = instantiate(cfg.problem.env)
    sizes = {
        tuple(env.generate(1, torch.Generator().manual_seed(s)).durations.shape[1:])
        for s in range(20)
    }
    assert sizes == {(15, 10), (15, 15), (15, 20)}
    state = env.reset(env.generate(2, torch.Generator().manual_seed(0)))
    assert policy(state).shape == (2, 15)


def test_small_experiment_builds(tmp_path: Path) -> None:
    """jssp_small composes and builds trainer, module and data module on 6 x 6 instances."""
    from nco.training.runner import build

    cfg = compose_train(
        [
            "experiment=jssp_small",
            f"out_dir={tmp_path}",
            "~logger",
            "training.val_instances=4",
            "training.val_gap=false",
        ]
    )
    trainer, module, datamodule = build(cfg)
    assert trainer.max_epochs == cfg.trainer.max_epochs
    assert datamodule.val_instances.durations.shape == (4, 6, 6)
    assert module.env.sizes == [(6, 6)]
    assert cfg.search.sigma == 0.05
