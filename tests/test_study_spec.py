"""nco.study.spec: the shipped study files, a study file of one's own, and the refusals of bad
ones (each naming the file and the field)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nco.study.spec import (
    EpochsToTarget,
    SlVsSi,
    Workspace,
    load_epochs_to_target,
    load_sl_vs_si,
    load_study,
    study_names,
)


def test_shipped_studies_carry_the_papers_constants() -> None:
    """The four SL-vs-SI studies hold Kool et al.'s AM greedy gaps (Table 1) and share the
    arms, decoders and the paper's 1,024 sub-problems per sampled instance; gomoku holds the
    paper's C.4 setting as defaults."""
    assert study_names("sl_vs_si") == ["cvrp20", "cvrp50", "tsp20", "tsp50"]
    assert study_names("epochs_to_target") == ["gomoku"]
    targets = {name: load_sl_vs_si(name).target for name in study_names("sl_vs_si")}
    assert targets == {"tsp20": 0.34, "tsp50": 1.76, "cvrp20": 4.97, "cvrp50": 5.86}
    tsp50 = load_sl_vs_si("tsp50")
    assert (tsp50.experiment, tsp50.test, tsp50.overrides) == ("repro_tsp50", "kool:tsp50_test", [])
    assert list(tsp50.arms) == ["sl", "wr", "wor", "gd"] and tsp50.arms["sl"].overrides == [
        "mode=sl"
    ]
    assert tsp50.decoders["beam16"] == ["search=beam", "search.beam_width=16"]
    assert (tsp50.finetune_subproblems_per_instance, tsp50.finetune_lr) == (1024, 1e-4)
    assert "--solver lkh --time-limit 1" in tsp50.expert
    gomoku = load_epochs_to_target("gomoku")
    assert (gomoku.defaults["board"], gomoku.defaults["samples"]) == (9, 320)
    assert gomoku.variants["wr"].experiment == "gomoku_wr" and gomoku.fractions == (0.5, 0.75, 0.9)


def test_a_study_file_of_ones_own_merges_over_the_kinds_keys(tmp_path: Path) -> None:
    """A .yaml path is a study named by its stem; its keys merge over the kind's shared ones
    (a list replaces, a mapping adds and replaces key by key)."""
    path = tmp_path / "mine.yaml"
    path.write_text(
        "kind: sl_vs_si\nexperiment: tsp20_quick\noverrides: [problem.num_nodes=8]\n"
        "test: t.npz\nsl_data: e.npz\nexpert: --problem tsp\ntarget: {greedy_gap_pct: 2.5}\n"
        "decoders: {greedy: [search=greedy, limit=3], beam4: [search=beam, search.beam_width=4]}\n"
    )
    study = load_study(str(path))
    assert isinstance(study, SlVsSi) and study.name == "mine"
    assert study.decoders == {
        "greedy": ["search=greedy", "limit=3"],
        "beam16": ["search=beam", "search.beam_width=16"],
        "beam4": ["search=beam", "search.beam_width=4"],
    }
    assert study.target == 2.5 and study.overrides == ["problem.num_nodes=8"]
    assert list(study.arms) == ["sl", "wr", "wor", "gd"]  # the kind's
    assert not isinstance(study, EpochsToTarget)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("experiment: x\n", r"mine.yaml: field 'kind' is None, expected one of"),
        ("kind: sweep\n", r"field 'kind' is 'sweep'"),
        ("- a list\n", r"field 'kind' is None"),
        ("kind: sl_vs_si\nexperiment: x\n", r"mine.yaml: missing \['sl_data', 'expert', 'test'"),
        (
            "kind: sl_vs_si\nexperiment: x\nsl_data: e\nexpert: e\ntest: t\ntarget: 3\n",
            r"field 'target.greedy_gap_pct' must be a number",
        ),
        ("kind: epochs_to_target\nvariants: {}\n", r"missing \['defaults'"),
    ],
)
def test_bad_study_files_name_the_file_and_field(tmp_path: Path, text: str, message: str) -> None:
    """A missing or unknown kind, a missing field and a target that is not a number are refused."""
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        load_study(str(path))


def test_unknown_studies_and_wrong_kinds_are_refused(tmp_path: Path) -> None:
    """A name that is no shipped study lists them; a missing file is named; a command for one
    kind refuses a study of the other."""
    with pytest.raises(ValueError, match=r"study 'tsp7': expected one of \['cvrp20'"):
        load_study("tsp7")
    with pytest.raises(ValueError, match="nothing.yaml: no such study file"):
        load_study(str(tmp_path / "nothing.yaml"))
    with pytest.raises(ValueError, match="gomoku.yaml: expected kind sl_vs_si"):
        load_sl_vs_si("gomoku")
    with pytest.raises(ValueError, match="tsp20.yaml: expected kind epochs_to_target"):
        load_epochs_to_target("tsp20")


def test_workspace_layout_and_shown_paths(tmp_path: Path) -> None:
    """The standard folders under the root; paths inside it are shown relative to it."""
    ws = Workspace.at(tmp_path)
    assert ws.runs == tmp_path / "data" / "reproduction"
    assert ws.results == tmp_path / "data" / "results" / "reproduction"
    assert ws.shipped == tmp_path / "data" / "checkpoints" and ws.cache == ws.runs / "cache"
    assert ws.shown(ws.runs / "tsp20" / "gd_s0") == "data/reproduction/tsp20/gd_s0"
    assert ws.shown(Path("/elsewhere/x.pt")) == "/elsewhere/x.pt"
