"""Epochs-to-target studies (`nco-study epochs --study gomoku`, which scripts/gomoku_epochs.py
runs): epochs to all wins and to the win milestones, run statuses, snapshots of partial runs,
and resuming a run by rerunning the same command."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from nco.cli.study import epochs_setting, parser
from nco.cli.study import main as study_main
from nco.study import epochs
from nco.study.epochs import EpochsStudy


def main(root: Path, argv: list[str]) -> None:
    """`nco-study --root <root> epochs --study gomoku argv`."""
    study_main(["--root", str(root), "epochs", "--study", "gomoku", *argv])


def parse(argv: list[str]) -> EpochsStudy:
    """The gomoku study that `nco-study epochs --study gomoku argv` runs."""
    return epochs_setting(parser().parse_args(["epochs", "--study", "gomoku", *argv]))


def write_metrics(path: Path, wins: list[float]) -> None:
    """A Lightning-style CSV: validation rows and sampling rows per epoch, as nco-train logs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    keys = ["epoch", *epochs.METRICS]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=keys)
        writer.writeheader()
        for e, w in enumerate(wins):
            writer.writerow({"epoch": e, "val/wins": w, "val/draws": 9 - w})
            row = {"sample/objective": 0.5, "time/sampling_s": 2.0, "time/training_s": 1.0}
            writer.writerow({"epoch": e, **row})


def args_for(tmp_path: Path, *extra: str) -> EpochsStudy:
    """Parsed arguments of a 3x3 study (9 openings) writing under tmp_path/study."""
    return parse(["--board", "3", "--out", str(tmp_path / "study"), *extra])


def metrics_of(args: EpochsStudy, variant: str, seed: int) -> Path:
    return args.run_dir(variant, seed) / "logs" / "metrics.csv"


def test_statuses_milestones_and_censored_means(tmp_path: Path) -> None:
    """Runs are solved, censored (at --max-epochs), running or unfinished; milestones and the
    mean over solved runs are per variant."""
    args = args_for(tmp_path, "--max-epochs", "5", "--variants", "wr")
    write_metrics(metrics_of(args, "wr", 0), [0, 5, 7, 8, 8])  # censored at the cap
    write_metrics(metrics_of(args, "wr", 1), [4, 5, 9])  # solved at epoch 3
    write_metrics(metrics_of(args, "wr", 2), [1, 2])  # stopped early
    runs = [epochs.collect(args, "wr", s) for s in (0, 1, 2)]
    assert [r["status"] for r in runs] == ["censored", "solved", "unfinished"]
    assert epochs.collect(args, "wr", 2, running=True)["status"] == "running"
    assert [epochs.finished(r) for r in runs] == [True, True, False]
    assert runs[0]["epochs_to_all_wins"] is None and runs[1]["epochs_to_all_wins"] == 3
    # 0.5 of 9 cells -> 5 wins, 0.75 -> 7, 0.9 -> 9 (ceil)
    assert runs[0]["epochs_to_wins_fraction"] == {"0.5": 2, "0.75": 3, "0.9": None}
    summary = epochs.summarize(args, runs[:2])["wr"]
    assert summary["solved_runs"] == 1 and summary["mean_epochs_solved_runs"] == 3
    assert summary["epochs_to_wins_fraction"]["0.5"] == {
        "epochs": [2, 2],
        "mean_epochs_reached_runs": 2.0,
    }
    # the solved run counts as all wins after it stopped
    assert summary["mean_wins_per_epoch"] == [2.0, 5.0, 8.0, 8.5, 8.5]
    assert summary["mean_sampling_s_per_epoch"] == 2.0


def test_partial_runs_average_over_the_runs_that_reached_the_epoch(tmp_path: Path) -> None:
    """A snapshot of unfinished runs: epoch e averages the runs with an epoch e (no padding)."""
    args = args_for(tmp_path, "--variants", "gd")
    write_metrics(metrics_of(args, "gd", 0), [0, 2, 4, 6])
    write_metrics(metrics_of(args, "gd", 1), [2, 4])
    runs = [epochs.collect(args, "gd", s) for s in (0, 1)]
    summary = epochs.summarize(args, runs)["gd"]
    assert summary["mean_wins_per_epoch"] == [1.0, 3.0, 4.0, 6.0]
    assert summary["status"] == ["unfinished", "unfinished"]


def test_a_snapshot_between_a_validation_row_and_its_timing_row(tmp_path: Path) -> None:
    """A running run's metrics.csv can hold an epoch's validation row before its timing row
    (Lightning writes them apart); the snapshot averages the timings of the runs that have one."""
    args = args_for(tmp_path, "--variants", "gd")
    write_metrics(metrics_of(args, "gd", 0), [2, 4])
    path = metrics_of(args, "gd", 1)
    path.parent.mkdir(parents=True)
    path.write_text("epoch,val/wins,val/draws\n0,3,6\n")
    runs = [epochs.collect(args, "gd", s, running=True) for s in (0, 1)]
    summary = epochs.summarize(args, runs)["gd"]
    assert summary["mean_wins_per_epoch"] == [2.5, 4.0]
    assert summary["mean_sampling_s_per_epoch"] == 2.0
    assert summary["mean_training_s_per_epoch"] == 1.0
    alone = epochs.summarize(args, runs[1:])["gd"]
    assert alone["mean_sampling_s_per_epoch"] is None


def test_rerun_trains_only_unfinished_runs_and_writes_a_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """main() skips solved and censored runs, continues the others, and writes JSON + PNG."""
    args = args_for(tmp_path)
    write_metrics(metrics_of(args, "gd_mean", 0), [9])  # solved
    write_metrics(metrics_of(args, "wr", 0), [1, 2])  # unfinished: continued
    calls = []

    class Finished:
        """A run that has ended well (what Popen.poll reports)."""

        returncode = 0

        def poll(self) -> int:
            return 0

    def fake_launch(a: EpochsStudy, variant: str, seed: int) -> Finished:
        calls.append((variant, seed))
        write_metrics(metrics_of(a, variant, seed), [1, 2, 9])
        return Finished()

    monkeypatch.setattr(epochs, "launch", fake_launch)
    monkeypatch.setattr(epochs, "POLL_S", 0.0)
    main(tmp_path, ["--board", "3", "--seeds", "0", "--out", str(tmp_path / "study")])
    assert calls == [("wr", 0)]
    result = json.loads((tmp_path / "study.json").read_text())
    assert result["summary"]["wr"]["epochs_to_all_wins"] == [3]
    assert result["summary"]["gd_mean"]["status"] == ["solved"]
    assert (tmp_path / "study.png").stat().st_size > 0


def test_overrides_split_the_budget_and_name_the_experiment(tmp_path: Path) -> None:
    """320 games: WR 320 samples; Gumbeldore 32 x 10; extra Hydra overrides come last."""
    args = parse(["--out", str(tmp_path), "--", "model=gomoku_net_v0"])
    gd = epochs.overrides(args, "gd_mean")
    assert gd[0] == "experiment=gomoku_gumbeldore_mean" and gd[-1] == "model=gomoku_net_v0"
    assert "search.beam_width=32" in gd and "search.rounds=10" in gd
    assert "search.num_samples=320" in epochs.overrides(args, "wr")
    assert "trainer.max_epochs=300" in gd


def test_rerunning_the_command_continues_a_real_run(tmp_path: Path) -> None:
    """A tiny 5x5 Gumbeldore run of 1 epoch, then the same command with --max-epochs 2: the
    run resumes from its last.ckpt and metrics.csv holds epochs 0 and 1, each once."""
    base = ["--board", "5", "--samples", "4", "--rounds", "2", "--seeds", "0"]
    base += ["--variants", "gd_mean", "--out", str(tmp_path / "tiny"), "--snapshot-s", "1"]
    extra = ["--", "model=gomoku_net_tiny", "training.batches_per_epoch=2"]
    extra += ["training.batch_size=8", "search.batch_size=25", "trainer.log_every_n_steps=1"]
    main(tmp_path, [*base, "--max-epochs", "1", *extra])
    args = parse([*base, "--max-epochs", "2"])
    assert epochs.collect(args, "gd_mean", 0)["epochs_done"] == 1
    ckpt = args.run_dir("gd_mean", 0) / "checkpoints" / "last.ckpt"
    assert ckpt.is_file()
    main(tmp_path, [*base, "--max-epochs", "2", *extra])
    with open(metrics_of(args, "gd_mean", 0)) as f:
        validated = [int(r["epoch"]) for r in csv.DictReader(f) if r.get("val/wins")]
    assert validated == [0, 1]
    log = (tmp_path / "tiny" / "gd_mean_seed0.log").read_text()
    assert log.count("nco.cli.train") == 2
    result = json.loads((tmp_path / "tiny.json").read_text())
    assert result["runs"][0]["status"] in ("censored", "solved")


def test_parallel_runs_keep_that_many_going_and_stop_on_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--parallel 2 starts two runs before either ends and the third when one slot frees; a run
    that fails stops the script with its log named, ending the run still going."""
    events: list[str] = []

    class Run:
        """A run that ends after `polls` checks with `code`."""

        def __init__(self, name: str, polls: int, code: int) -> None:
            self.name, self.polls, self.returncode = name, polls, None
            self.code = code

        def poll(self) -> int | None:
            self.polls -= 1
            if self.polls <= 0 and self.returncode is None:
                self.returncode = self.code
                events.append(f"end {self.name}")
            return self.returncode

        def terminate(self) -> None:
            events.append(f"terminate {self.name}")

        def wait(self) -> int:
            return 0

    plan = {("gd_mean", 0): (1, 0), ("wr", 0): (3, 0), ("gd_mean", 1): (1, 1)}

    def fake_launch(a: EpochsStudy, variant: str, seed: int) -> Run:
        events.append(f"start {variant}{seed}")
        return Run(f"{variant}{seed}", *plan[(variant, seed)])

    monkeypatch.setattr(epochs, "launch", fake_launch)
    monkeypatch.setattr(epochs, "POLL_S", 0.0)
    out = tmp_path / "study"
    with pytest.raises(
        SystemExit, match="gd_mean seed 1: nco-train failed, see .*gd_mean_seed1.log"
    ):
        main(tmp_path, ["--board", "3", "--seeds", "0", "1", "--parallel", "2", "--out", str(out)])
    assert events == [
        "start gd_mean0",
        "start wr0",
        "end gd_mean0",
        "start gd_mean1",
        "end gd_mean1",
        "terminate wr0",
    ]


def test_snapshot_reads_every_run_in_the_study_folder(tmp_path: Path) -> None:
    """Runs started by other invocations (other variants or seeds) are in the snapshot too,
    ordered by seed then variant; folders that are not runs are ignored."""
    args = args_for(tmp_path, "--variants", "wr", "--seeds", "0")
    write_metrics(metrics_of(args, "gd_mean_first", 3), [9])
    write_metrics(metrics_of(args, "wr", 0), [1, 2])
    write_metrics(metrics_of(args, "gd", 0), [3])
    (args.out / "runs" / "notes_seedx").mkdir()
    result = epochs.write_snapshot(args, running={("wr", 0)})
    runs = [(r["variant"], r["seed"], r["status"]) for r in result["runs"]]
    assert runs == [("wr", 0, "running"), ("gd", 0, "unfinished"), ("gd_mean_first", 3, "solved")]
    assert result["seeds"] == [0, 3]
    assert list(result["experiments"]) == ["wr", "gd", "gd_mean_first"]


def run_of(variant: str, epochs: int | None, done: int = 100) -> dict:
    """A finished run record: solved at `epochs`, or censored after `done` epochs (None)."""
    status = "censored" if epochs is None else "solved"
    return {"variant": variant, "status": status, "epochs_to_all_wins": epochs,
            "epochs_done": done if epochs is None else epochs}  # fmt: skip


def test_pair_scores_follow_gehans_rules_for_censored_runs() -> None:
    """Solved vs solved compares epochs; solved vs censored is decided only when the solved run
    finished no later than the censored one stopped; two censored runs are undecided."""
    assert epochs.faster(run_of("a", 40), run_of("b", 50)) == 1
    assert epochs.faster(run_of("a", 50), run_of("b", 50)) == 0
    assert epochs.faster(run_of("a", 100), run_of("b", None, done=100)) == 1
    assert epochs.faster(run_of("a", 150), run_of("b", None, done=100)) == 0
    assert epochs.faster(run_of("a", None, done=100), run_of("b", 60)) == -1
    assert epochs.faster(run_of("a", None), run_of("b", None)) == 0


def test_comparison_is_exact_for_small_groups_and_seeded_for_large() -> None:
    """3 vs 3 fully separated runs: U = -9, P(faster) = 0, exact p = 2 / C(6, 3) = 0.1. With 12 vs
    12 runs the p-value comes from seeded relabellings: reproducible and never 0."""
    slow = [run_of("wr", None), run_of("wr", 59), run_of("wr", 41)]
    fast = [run_of("gd", 39), run_of("gd", 40), run_of("gd", 38)]
    result = epochs.compare(slow, fast, 20000)
    assert result == {"runs": [3, 3], "gehan_u": -9, "prob_faster": 0.0, "p_value": 0.1,
                      "exact": True}  # fmt: skip
    assert epochs.compare(fast, slow, 20000)["prob_faster"] == 1.0
    big_slow = [run_of("wr", 50 + i) for i in range(12)]
    big_fast = [run_of("gd", 30 + i) for i in range(12)]
    first = epochs.compare(big_fast, big_slow, 20000)
    assert not first["exact"] and first == epochs.compare(big_fast, big_slow, 20000)
    assert 0 < first["p_value"] < 1e-3 and first["prob_faster"] == 1.0
    mixed = epochs.compare(big_fast[::2] + big_slow[::2], big_fast[1::2] + big_slow[1::2], 20000)
    assert mixed["p_value"] > 0.5


def test_median_counts_censored_runs_as_slowest(tmp_path: Path) -> None:
    """The median over finished runs treats censored runs as slower than any solved one and is
    None when it falls on a censored run; unfinished runs do not count."""
    runs = [run_of("wr", 41), run_of("wr", 59), run_of("wr", None)]
    assert epochs.median_epochs(runs) == 59
    assert epochs.median_epochs([*runs, run_of("wr", 45)]) == 52
    assert epochs.median_epochs([run_of("wr", 41), run_of("wr", None), run_of("wr", None)]) is None
    unfinished = {**run_of("wr", None, done=10), "status": "unfinished"}
    assert epochs.median_epochs([run_of("wr", 41), unfinished]) == 41
    args = args_for(tmp_path, "--max-epochs", "4", "--variants", "wr")
    write_metrics(metrics_of(args, "wr", 0), [0, 5, 9])
    write_metrics(metrics_of(args, "wr", 1), [4, 5, 9])
    write_metrics(metrics_of(args, "wr", 2), [1, 2, 3, 3])  # censored
    summary = epochs.summarize(args, [epochs.collect(args, "wr", s) for s in range(3)])["wr"]
    assert summary["median_epochs"] == 3 and summary["censored_runs"] == 1
    assert summary["std_epochs_solved_runs"] == 0.0


def test_report_only_rewrites_the_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--report reads the runs so far and writes JSON (with the comparisons) and PNG, and
    trains nothing, even for unfinished runs."""
    args = args_for(tmp_path, "--max-epochs", "3")
    write_metrics(metrics_of(args, "wr", 0), [1, 2, 3])  # censored
    write_metrics(metrics_of(args, "gd_mean_first", 0), [4, 9])  # solved
    write_metrics(metrics_of(args, "gd_mean", 0), [1])  # unfinished

    def no_launch(*_: object) -> None:
        raise AssertionError("--report must not train")

    monkeypatch.setattr(epochs, "launch", no_launch)
    main(tmp_path, ["--board", "3", "--max-epochs", "3", "--report", "--out", str(args.out)])
    result = json.loads((tmp_path / "study.json").read_text())
    assert result["comparisons"]["wr vs gd_mean_first"]["prob_faster"] == 0.0
    assert result["summary"]["gd_mean"]["status"] == ["unfinished"]
    assert (tmp_path / "study.png").stat().st_size > 0


def test_markdown_lists_every_run_and_comparison(tmp_path: Path) -> None:
    """The Markdown report marks solved, censored and running runs, the spread over solved runs
    and a median that falls on a censored run, and one row per pair of variants (here U = -2, and
    8 of the 10 splits of the 5 runs into 3 + 2 give |U| >= 2)."""
    args = args_for(tmp_path, "--max-epochs", "3")
    write_metrics(metrics_of(args, "wr", 0), [1, 2, 3])  # censored
    write_metrics(metrics_of(args, "wr", 1), [1, 2, 3])  # censored
    write_metrics(metrics_of(args, "wr", 2), [9])  # solved at 1
    write_metrics(metrics_of(args, "gd_mean_first", 0), [4, 9])  # solved at 2
    write_metrics(metrics_of(args, "gd_mean_first", 1), [3, 9])  # solved at 2
    write_metrics(metrics_of(args, "gd_mean_first", 2), [1])  # training now
    text = epochs.markdown(epochs.write_snapshot(args, running={("gd_mean_first", 2)}))
    rows = {line.split(" | ")[0].strip("| "): line for line in text.splitlines()}
    assert rows["wr"] == "| wr | 0: > 3, 1: > 3, 2: 1 | 1 of 3 | 1.0 | censored | 9 |"
    assert rows["gd_mean_first"] == (
        "| gd_mean_first | 0: 2, 1: 2, 2: (1) | 2 of 2 | 2.0 +- 0.0 | 2.0 | 9 |"
    )
    assert rows["wr vs gd_mean_first"] == "| wr vs gd_mean_first | 3 / 2 | 0.33 | 0.8 (exact) |"
