"""Supervised baseline: expert tours as TSPEnv actions, and SL training through the same loop."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from loop_helpers import Recorder, fit

from nco.decode import decode
from nco.problems.tsp import TSPEnv, TSPInstances
from nco.problems.tsp.env import tour_length
from nco.problems.tsp.expert import load_expert, tours_to_actions
from nco.problems.tsp.io import save_tsp_npz
from nco.problems.tsp.solvers import solve_lkh
from nco.training.runner import build


def test_tours_to_actions_rotates_to_node_zero() -> None:
    """Tours start anywhere; actions list the nodes after node 0, keeping the direction."""
    tours = torch.tensor([[2, 0, 3, 1], [0, 1, 2, 3]])
    assert tours_to_actions(tours).tolist() == [[3, 1, 2], [1, 2, 3]]


@pytest.mark.parametrize("tours", [[[0, 1, 1, 2]], [[0, 1, 2, 4]], [[0, 1]], [0, 1, 2]])
def test_tours_to_actions_rejects_non_permutations(tours) -> None:
    """Repeated or out-of-range nodes and wrong shapes raise ValueError."""
    with pytest.raises(ValueError, match="Expected"):
        tours_to_actions(torch.tensor(tours))


def expert_file(path, num: int = 8, n: int = 10, field: str = "tours") -> tuple:
    """An .npz of `num` random TSP`n` instances with LKH tours (rotated to start at node 3)."""
    coords = np.random.default_rng(0).random((num, n, 2))
    tours = np.stack([solve_lkh({"coords": c}, 1.0, 0).solution for c in coords])
    tours = np.roll(tours, -3, axis=1)
    data = tours if field == "tours" else tours_to_actions(tours).numpy()
    np.savez(path, coords=coords, **{field: data})
    return coords, tours


@pytest.mark.parametrize("field", ["tours", "actions"])
def test_load_expert_replays_the_tours(tmp_path, field) -> None:
    """Loaded actions replayed in TSPEnv give the expert tours' lengths."""
    coords, tours = expert_file(tmp_path / "e.npz", num=3, field=field)
    instances, actions = load_expert(tmp_path / "e.npz")
    env = TSPEnv(10)
    state = env.reset(instances)
    for t in range(actions.shape[1]):
        state = env.step(state, actions[:, t])
    expected = tour_length(torch.from_numpy(coords), torch.from_numpy(tours).long())
    assert torch.allclose(-env.objective(state), expected)


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"tours": np.zeros((2, 4), dtype=np.int64)}, "field 'coords' is missing"),
        ({"coords": np.zeros((2, 4, 3))}, "field 'coords' must be \\[N, n, 2\\]"),
        ({"coords": np.zeros((2, 4, 2))}, "field 'actions' \\[N, n-1\\] or 'tours'"),
        ({"coords": np.zeros((2, 4, 2)), "tours": np.zeros((2, 3), dtype=np.int64)}, "shape"),
        ({"coords": np.zeros((2, 4, 2)), "actions": np.zeros((2, 3))}, "must be integers"),
        ({"coords": np.zeros((1, 4, 2)), "tours": np.array([[0, 1, 1, 2]])}, "permutation"),
    ],
)
def test_load_expert_rejects_bad_files(tmp_path, arrays, message) -> None:
    """Missing or malformed fields raise ValueError naming the file and the field."""
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match=message) as err:
        load_expert(path)
    assert str(path) in str(err.value)


def test_sl_trains_on_the_fixed_expert_set(tiny_cfg, tmp_path) -> None:
    """mode=sl trains from the file: the buffer is the expert set and is never cleared.
    Validation reads a dataset file with reference costs, so the gap is logged."""
    coords, tours = expert_file(tmp_path / "expert.npz")
    refs = tour_length(torch.from_numpy(coords), torch.from_numpy(tours).long()).numpy()
    save_tsp_npz(tmp_path / "val.npz", coords, refs, "LKH-3")
    cfg = tiny_cfg(
        "mode=sl", f"sl_data={tmp_path / 'expert.npz'}", f"training.val_data={tmp_path / 'val.npz'}"
    )
    recorder = Recorder(improve=[True, True])
    module, dm = fit(cfg, recorder)
    val = TSPInstances(coords=torch.from_numpy(coords))
    cost = -decode(module.policy, TSPEnv(10), val, {"method": "greedy"}).best().objective
    expected = ((cost.numpy() - refs) / refs).mean() * 100
    assert module.last_val["val/gap"] == pytest.approx(expected, rel=1e-5)
    instances, actions = load_expert(tmp_path / "expert.npz")
    assert recorder.buffer_sizes == [8, 8]
    assert torch.equal(dm.buffer.actions, actions)
    assert torch.equal(dm.buffer.instances.coords, instances.coords)
    assert module.best_version == 2


def test_sl_without_data_raises(tiny_cfg) -> None:
    """mode=sl without sl_data is a configuration error."""
    with pytest.raises(ValueError, match="sl_data"):
        build(tiny_cfg("mode=sl"))


def test_sl_resume_reads_the_expert_file_again(tiny_cfg, tmp_path) -> None:
    """last.ckpt of an SL run does not copy the expert set; a resumed run has it all again."""
    expert_file(tmp_path / "expert.npz")
    first = tiny_cfg("mode=sl", f"sl_data={tmp_path / 'expert.npz'}", "trainer.max_epochs=1")
    fit(first, Recorder())
    last = Path(first.out_dir) / "checkpoints" / "last.ckpt"
    state = torch.load(last, weights_only=False)["TrajectoryDataModule"]
    assert state["buffer"] is None
    recorder = Recorder()
    fit(tiny_cfg("mode=sl", f"sl_data={tmp_path / 'expert.npz'}", f"ckpt_path={last}"), recorder)
    assert recorder.epochs == [1] and recorder.buffer_sizes == [8]
