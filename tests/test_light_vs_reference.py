"""benchmarks/light_vs_reference.py --nco-from: nco's costs taken from a results JSON only
when it is of the same set and decoder (the comparison with the authors' code itself needs
their snapshot and runs by hand)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from script_loader import BENCHMARKS, load_script


def results(path: Path, **change) -> Path:
    """A results JSON as scripts/eval_in_parts.py writes it: POMO x8 x 100 starts, 3 costs."""
    data = {
        "dataset": "kool:tsp100_test",
        "objectives": [7.5, 7.9, 8.1],
        "info": {
            "search": {"method": "greedy", "augment": 8, "starts": 100},
            "offset": 0,
            "checkpoint": "data/checkpoints/pomo_tsp100/best.pt",
        },
    }
    for key, value in change.items():
        if key in ("search", "offset", "checkpoint"):
            data["info"][key] = value
        else:
            data[key] = value
    path.write_text(json.dumps(data))
    return path


def test_costs_of_the_same_set_and_decoder(tmp_path: Path) -> None:
    bench = load_script("light_vs_reference", BENCHMARKS)
    costs, ckpt = bench._nco_from(results(tmp_path / "r.json"), "tsp", 100, "aug8", 2)
    assert costs == [7.5, 7.9]
    assert ckpt == bench.ROOT / "data/checkpoints/pomo_tsp100/best.pt"  # what a recheck decodes


@pytest.mark.parametrize(
    ("change", "mode", "num", "message"),
    [
        ({"dataset": "kool:tsp50_test"}, "aug8", 3, "expected results on kool:tsp100_test"),
        ({"offset": 500}, "aug8", 3, "from instance 0"),
        ({}, "multistart", 3, "expected greedy with"),
        ({"search": {"method": "beam", "augment": 8, "starts": 100}}, "aug8", 3, "greedy with"),
        ({}, "aug8", 4, "fewer than --num 4"),
        ({"checkpoint": None}, "aug8", 3, "expected info.checkpoint"),
    ],
)
def test_other_results_are_refused(tmp_path: Path, change, mode, num, message) -> None:
    bench = load_script("light_vs_reference", BENCHMARKS)
    with pytest.raises(SystemExit, match=message):
        bench._nco_from(results(tmp_path / "r.json", **change), "tsp", 100, mode, num)
