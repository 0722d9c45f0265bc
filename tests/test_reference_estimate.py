"""scripts/reference_estimate.py: full-set mean of partial CVRP references via the radial bound."""

import json

import numpy as np
import pytest
from script_loader import load_script

from nco.datasets import save_npz


def random_cvrp(seed: int, num: int) -> dict[str, np.ndarray]:
    """`num` random CVRP10 instances with capacity 20, as dataset arrays."""
    rng = np.random.default_rng(seed)
    return {
        "depot": rng.uniform(size=(num, 2)),
        "locs": rng.uniform(size=(num, 10, 2)),
        "demands": rng.integers(1, 10, size=(num, 10)),
        "capacity": np.full(num, 20),
    }


def test_radial_bound_by_hand() -> None:
    bound = load_script("reference_estimate").radial_bound
    arrays = {
        "depot": np.array([[0.0, 0.0]]),
        "locs": np.array([[[3.0, 4.0], [0.0, 1.0]]]),
        "demands": np.array([[2, 1]]),
        "capacity": np.array([10]),
    }
    assert bound(arrays) == pytest.approx([2 * (5 * 2 + 1 * 1) / 10])


def test_estimate_corrects_a_biased_subset() -> None:
    """References missing for the largest bounds: the known mean is far off, the fit is not."""
    estimate = load_script("reference_estimate").estimate
    rng = np.random.default_rng(0)
    bound = rng.uniform(5, 15, 4000)
    cost = 2.0 + 1.2 * bound + rng.normal(0, 0.2, 4000)
    refs = np.where(bound < 11, cost, np.nan)
    out = estimate(bound, refs)
    assert out["with_references"] == int((bound < 11).sum())
    assert abs(out["known_mean"] - cost.mean()) > 1.0
    assert 0 < out["standard_error"] < 0.02
    assert abs(out["estimated_mean"] - cost.mean()) < 4 * out["standard_error"]
    assert out["slope"] == pytest.approx(1.2, abs=0.02)
    assert out["r2"] > 0.95


def test_estimate_with_all_references_is_their_mean() -> None:
    estimate = load_script("reference_estimate").estimate
    refs = np.array([3.0, 5.0, 4.0, 6.0])
    out = estimate(np.array([1.0, 2.0, 3.0, 4.0]), refs)
    assert out["estimated_mean"] == pytest.approx(4.5)
    assert out["standard_error"] == 0.0


def test_estimate_needs_three_references() -> None:
    estimate = load_script("reference_estimate").estimate
    with pytest.raises(ValueError, match="at least 3"):
        estimate(np.arange(5.0), np.array([1.0, 2.0, np.nan, np.nan, np.nan]))


def test_main_writes_json_and_plot(tmp_path) -> None:
    arrays = random_cvrp(1, 6)
    arrays["reference_costs"] = 1.0 + load_script("reference_estimate").radial_bound(arrays)
    data = tmp_path / "tiny.npz"
    save_npz(data, arrays)
    out, png = tmp_path / "est.json", tmp_path / "est.png"
    args = ["--data", str(data), "--published", "5", "--out", str(out), "--plot", str(png)]
    result = load_script("reference_estimate").main(args)
    saved = json.loads(out.read_text())
    assert saved == result
    assert saved["r2"] == pytest.approx(1.0)
    mean = float(arrays["reference_costs"].mean())
    assert saved["estimated_mean"] == pytest.approx(mean)
    assert saved["gap_to_published"] == pytest.approx(100 * (mean / 5 - 1))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_main_rejects_a_tsp_set(tmp_path) -> None:
    data = tmp_path / "tsp.npz"
    save_npz(data, {"coords": np.random.default_rng(2).uniform(size=(3, 10, 2))})
    with pytest.raises(ValueError):
        load_script("reference_estimate").main(["--data", str(data)])


def test_main_without_references_says_where_they_come_from(tmp_path) -> None:
    data = tmp_path / "norefs.npz"
    save_npz(data, random_cvrp(3, 3))
    with pytest.raises(SystemExit, match="reference_costs"):
        load_script("reference_estimate").main(["--data", str(data)])
