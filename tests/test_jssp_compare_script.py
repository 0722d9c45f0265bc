"""scripts/jssp_compare.py: checkpoints side by side on fresh random instances, against a rule."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.script_loader import SCRIPTS

SMALL = Path(__file__).resolve().parents[1] / "data" / "checkpoints" / "jssp_small" / "best.pt"


def compare(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable,
        str(SCRIPTS / "jssp_compare.py"),
        "--out",
        str(tmp_path / "c.json"),
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)


def test_the_same_checkpoint_twice_differs_by_nothing_and_is_measured_against_the_rule(
    tmp_path: Path,
) -> None:
    run = compare(tmp_path, "--checkpoints", f"a={SMALL}", f"b={SMALL}", "--sizes", "4x3", "6x6",
                  "--num", "6", "--rule", "spt")  # fmt: skip
    assert run.returncode == 0, run.stderr
    result = json.loads((tmp_path / "c.json").read_text())
    assert list(result["sizes"]) == ["4x3", "6x6"] and result["rule"] == "spt"
    for row in result["sizes"].values():
        a, b = row["checkpoints"]["a"], row["checkpoints"]["b"]
        assert a["mean_makespan"] == b["mean_makespan"] > 0
        assert row["pairs"]["a-b"] == {"mean_points": 0.0, "stderr": 0.0}
    assert "6x6: vs spt" in run.stdout


def test_bad_sizes_missing_files_and_repeated_names_are_refused(tmp_path: Path) -> None:
    assert (
        "expected a size JxM"
        in compare(tmp_path, "--checkpoints", str(SMALL), "--sizes", "15").stderr
    )
    assert "no such checkpoint file" in compare(tmp_path, "--checkpoints", "x=nope.pt").stderr
    same = compare(tmp_path, "--checkpoints", f"a={SMALL}", f"a={SMALL}")
    assert same.returncode == 2 and "names must differ" in same.stderr


def test_earlier_results_join_without_decoding_and_must_be_on_the_same_instances(
    tmp_path: Path,
) -> None:
    first = compare(tmp_path, "--checkpoints", f"a={SMALL}", "--sizes", "4x3", "6x6", "--num", "6")
    assert first.returncode == 0, first.stderr
    (tmp_path / "a.json").write_text((tmp_path / "c.json").read_text())
    later = compare(tmp_path, "--checkpoints", f"b={SMALL}", "--sizes", "6x6", "--num", "6",
                    "--with", "a.json")  # fmt: skip
    assert later.returncode == 0, later.stderr
    row = json.loads((tmp_path / "c.json").read_text())["sizes"]["6x6"]
    assert row["checkpoints"]["a"]["from"] == "--with"
    first_a = json.loads((tmp_path / "a.json").read_text())["sizes"]["6x6"]["checkpoints"]["a"]
    assert row["checkpoints"]["a"]["wall_s"] == first_a["wall_s"]  # carried, not re-timed
    assert row["checkpoints"]["a"]["makespans"] == row["checkpoints"]["b"]["makespans"]
    assert row["pairs"] == {"b-a": {"mean_points": 0.0, "stderr": 0.0}}
    # other instances, a size the earlier run did not decode, a name given twice: refused
    seed = compare(tmp_path, "--checkpoints", f"b={SMALL}", "--sizes", "6x6", "--num", "6",
                   "--seed", "1", "--with", "a.json")  # fmt: skip
    assert seed.returncode == 1 and "seed is 2026, this run's is 1" in seed.stderr
    other = compare(tmp_path, "--checkpoints", f"b={SMALL}", "--sizes", "5x5", "--num", "6",
                    "--with", "a.json")  # fmt: skip
    assert other.returncode == 1 and "no per-instance makespans for 5x5" in other.stderr
    twice = compare(tmp_path, "--checkpoints", f"a={SMALL}", "--sizes", "6x6", "--num", "6",
                    "--with", "a.json")  # fmt: skip
    assert twice.returncode == 2 and "names must differ" in twice.stderr


def test_search_compares_decoders_of_one_checkpoint_on_the_same_instances(tmp_path: Path) -> None:
    """`--search` decodes with another decoder, seeded (a rerun gives the same makespans); the
    output names each entry's decoder, and an unknown decoder is refused."""
    greedy = compare(tmp_path, "--checkpoints", f"greedy={SMALL}", "--sizes", "6x6", "--num", "6")
    assert greedy.returncode == 0, greedy.stderr
    (tmp_path / "g.json").write_text((tmp_path / "c.json").read_text())
    runs = []
    for _ in range(2):
        sbs = compare(tmp_path, "--checkpoints", f"sbs={SMALL}", "--sizes", "6x6", "--num", "6",
                      "--search", "method=sbs", "beam_width=8", "--with", "g.json")  # fmt: skip
        assert sbs.returncode == 0, sbs.stderr
        runs.append(json.loads((tmp_path / "c.json").read_text()))
    assert runs[0]["search"] == {"sbs": "sbs(beam_width=8)", "greedy": "greedy"}
    row = runs[0]["sizes"]["6x6"]["checkpoints"]
    assert row["sbs"]["makespans"] == runs[1]["sizes"]["6x6"]["checkpoints"]["sbs"]["makespans"]
    assert row["sbs"]["makespans"] != row["greedy"]["makespans"]
    bad = compare(tmp_path, "--checkpoints", str(SMALL), "--search", "method=nope")
    assert bad.returncode == 2 and "unknown method 'nope'" in bad.stderr
