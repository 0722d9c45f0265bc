"""L2D's published dispatching-rule figures on Taillard (data/results/jssp_pdr/l2d_published.json)
are transcribed consistently, and the checks data/results/jssp_pdr/README.md states hold."""

from __future__ import annotations

import json
import re
from statistics import mean

import pytest

from nco.paths import DATA_DIR
from nco.problems.jssp.taillard import taillard_bounds

FOLDER = DATA_DIR / "results" / "jssp_pdr"
GROUPS = ["15x15", "20x15", "20x20", "30x15", "30x20", "50x15", "50x20", "100x20"]
RULES = {"spt": "SPT", "mwkr": "MWKR", "mopnr": "MOPNR", "fdd/mwkr": "FDD/MWKR"}
pytestmark = pytest.mark.skipif(
    not (FOLDER / "l2d_published.json").is_file(), reason="no L2D figures"
)


@pytest.fixture(scope="module")
def published() -> dict:
    return json.loads((FOLDER / "l2d_published.json").read_text())


def test_table_means_are_the_per_instance_gaps(published: dict) -> None:
    """Table 3's group means follow from the supplement's makespans and L2D's upper bounds, so
    neither table was mistyped (to the published rounding of 0.1 point)."""
    instances = published["instances"]
    assert sorted(instances) == [f"ta{i:02d}" for i in range(1, 81)]
    for rule in RULES:
        for group in GROUPS:
            rows = [v for v in instances.values() if v["group"] == group]
            assert len(rows) == 10
            gap = mean(100 * (v[rule] / v["ub_l2d"] - 1) for v in rows)
            assert gap == pytest.approx(published["table3_gap_pct"][rule][group], abs=0.051)


def test_makespans_respect_bounds_and_lose_to_nondelay_rules(published: dict) -> None:
    """Every L2D makespan is at least the instance's lower bound, and nco's non-delay rule is
    shorter on every instance (the README's claim)."""
    bounds = taillard_bounds()
    for name, row in published["instances"].items():
        assert min(row[r] for r in RULES) >= float(bounds[name]["lower_bound"]), name
    for rule in RULES:
        for group in GROUPS:
            ours = json.loads((FOLDER / f"pdr_{rule.replace('/', '_')}_{group}.json").read_text())
            for name, makespan in zip(ours["names"], ours["objectives"], strict=True):
                assert makespan < published["instances"][name][rule], (rule, name)


def test_readme_rows_are_the_json(published: dict) -> None:
    text = (FOLDER / "README.md").read_text()
    for rule, label in RULES.items():
        line = re.search(rf"^\| {re.escape(label)} \(L2D\) \|(.*)\|$", text, re.M)
        assert line is not None, label
        cells = [float(c.strip().rstrip("%")) for c in line.group(1).split("|")]
        assert cells == [published["table3_gap_pct"][rule][g] for g in GROUPS], label


def test_l2d_greedy_row_is_the_one_table2_quotes(published: dict) -> None:
    """L2D's own greedy gaps in its Table 3 are the L2D row of the Gumbeldore paper's Table 2
    (data/jssp/taillard_table2_published.json): two transcriptions of one source agree."""
    table2 = json.loads((DATA_DIR / "jssp" / "taillard_table2_published.json").read_text())
    quoted = {group: cell["gap"] for group, cell in table2["rows"]["L2D, greedy"].items()}
    assert quoted == published["table3_l2d_greedy_gap_pct"]["gaps"]
