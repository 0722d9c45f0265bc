"""shipped:jssp (the paper-size JSSP transformer of the CPU run) is the file its manifest names
and decodes Taillard's instances to the makespans of its committed Taillard results."""

from __future__ import annotations

import hashlib
import json

import pytest
import torch

from nco import checkpoint
from nco.datasets import load_dataset
from nco.decode import decode
from nco.inference import check_checkpoint, to_instances
from nco.paths import DATA_DIR

FOLDER = DATA_DIR / "checkpoints" / "jssp"
pytestmark = pytest.mark.skipif(not (FOLDER / "best.pt").is_file(), reason="jssp not shipped")


def test_shipped_jssp_is_the_evaluated_checkpoint() -> None:
    torch.set_num_threads(1)
    manifest = json.loads((FOLDER / "manifest.json").read_text())
    assert hashlib.sha256((FOLDER / "best.pt").read_bytes()).hexdigest() == manifest["sha256"]
    results = json.loads((DATA_DIR.parent / manifest["taillard_results"]).read_text())
    groups = results["table"]["greedy"]
    assert sorted(groups) == sorted(manifest["taillard_greedy_gap_pct"])
    for group, gap in manifest["taillard_greedy_gap_pct"].items():
        assert round(groups[group]["gap"], 1) == gap
    run = groups["15x15"]["runs"][0]
    loaded = checkpoint.load(check_checkpoint("shipped:jssp", "test"))
    head = load_dataset("taillard:15x15").head(3)
    instances = to_instances(loaded.env, head.arrays, head.name)
    sols = decode(loaded.policy, loaded.env, instances, {"method": "greedy"})
    makespans = loaded.env.cost(sols.best().objective).tolist()
    assert run["names"][:3] == ["ta01", "ta02", "ta03"]
    assert makespans == run["objectives"][:3]


def test_manifest_gaps_are_the_table_cells() -> None:
    """The manifest's Taillard figures are the cells of the merged Table 2 (data/results/
    jssp_table2.json), so neither can be updated without the other."""
    manifest = json.loads((FOLDER / "manifest.json").read_text())
    table = json.loads((DATA_DIR.parent / "data/results/jssp_table2.json").read_text())
    assert table["checkpoint"] == "data/checkpoints/jssp/best.pt"
    for method, key in (
        ("greedy", "taillard_greedy_gap_pct"),
        ("GD 32x4, p_min=0.8", "taillard_gd32x4_p08_gap_pct"),
    ):
        cells = {group: round(cell["gap"], 1) for group, cell in table["table"][method].items()}
        assert cells == manifest[key], method
