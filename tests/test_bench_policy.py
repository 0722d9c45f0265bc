"""benchmarks/bench_policy.py: tiny models time one call per depth, count the linear layers'
multiply-accumulates as computed by hand, and compare the packed JSSP transformer with the
unpacked one."""

from __future__ import annotations

import json

import pytest

import nco.models.jssp_transformer as jssp_transformer
from tests.script_loader import load_script


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("bench") / "policy.json"
    args = ["--tiny", "--rows", "4", "--tsp-nodes", "10", "--jssp-size", "4", "3"]
    args += ["--repeats", "2", "--warmup", "0", "--threads", "1", "--packing"]
    load_script("bench_policy").main([*args, "--out", str(out)])
    return json.loads(out.read_text())


def test_every_model_and_depth_is_timed(report: dict) -> None:
    """One row per model and depth, steps a quarter / half / three quarters of the episode."""
    rows = [(r["model"], r["step"]) for r in report["results"]]
    assert rows == [("bq_tsp10", s) for s in (2, 4, 7)] + [("jssp_4x3", s) for s in (3, 6, 9)]
    for r in report["results"]:
        assert r["rows"] == 4 and r["precision"] == "fp32"
        assert len(r["s_all"] if "s_all" in r else r["packed_s_all"]) == 2
        assert r["s_per_call"] > 0 and r["rows_per_s"] == pytest.approx(4 / r["s_per_call"])
        assert 0 <= r["attention_share"] < 1
    assert report["pack_below"] == jssp_transformer.PACK_BELOW


def test_linear_macs_match_the_layer_sizes(report: dict) -> None:
    """BQ tiny (d 32, ff 64, 2 layers) at the root + 2 steps of TSP10: 2 + 7 tokens, each
    through embed (2 x 32), per layer qkv, out, ff (32 x 96 + 32 x 32 + 2 x 32 x 64), then
    the head (32 x 1) on the 7 candidates; 4 rows."""
    per_layer = 32 * 96 + 32 * 32 + 2 * 32 * 64
    expected = 4 * (9 * (2 * 32 + 2 * per_layer) + 7 * 32)
    assert report["results"][0]["linear_macs"] == expected


def test_packing_is_compared_on_the_jssp_rows(report: dict) -> None:
    """JSSP rows carry both timings, the ratio, fewer MACs packed, and equal logits."""
    for r in report["results"][3:]:
        assert r["packing_speedup"] == pytest.approx(r["unpacked_s"] / r["packed_s"])
        assert r["packed_linear_macs"] < r["unpacked_linear_macs"]
        assert r["max_logit_diff"] < 1e-5
        assert r["live_fraction"] == pytest.approx(1 - r["step"] / 12)
        assert r["packed"] == (r["live_fraction"] < jssp_transformer.PACK_BELOW)
        chosen = r["packed_s"] if r["packed"] else r["unpacked_s"]
        assert r["s_per_call"] == chosen
