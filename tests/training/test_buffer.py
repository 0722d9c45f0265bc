"""Trajectory buffer: append order, capacity, padding and state round trip."""

from __future__ import annotations

import pytest
import torch

from nco.training.buffer import TrajectoryBuffer
from problems.tsp import TSPInstances


def rows(start: int, num: int, steps: int = 3) -> tuple[TSPInstances, torch.Tensor]:
    """`num` instances whose coordinates encode their id `start + i`, with matching actions."""
    ids = torch.arange(start, start + num, dtype=torch.float64)
    coords = ids.view(-1, 1, 1).expand(-1, 4, 2).clone()
    actions = ids.long().view(-1, 1).expand(-1, steps).clone()
    return TSPInstances(coords=coords), actions


def ids(buffer: TrajectoryBuffer) -> list[int]:
    """The row ids held, oldest first."""
    assert buffer.instances is not None
    return buffer.instances.coords[:, 0, 0].long().tolist()


def test_add_keeps_order_and_capacity_drops_oldest() -> None:
    """Rows are appended in order; beyond capacity the oldest go first."""
    buffer = TrajectoryBuffer(capacity=5)
    buffer.add(*rows(0, 3))
    buffer.add(*rows(3, 4))
    assert len(buffer) == 5
    assert ids(buffer) == [2, 3, 4, 5, 6]
    assert buffer.actions is not None and buffer.actions[:, 0].tolist() == [2, 3, 4, 5, 6]


def test_unbounded_grows_and_clear_empties() -> None:
    """Without capacity every row stays; clear() removes all."""
    buffer = TrajectoryBuffer()
    for i in range(3):
        buffer.add(*rows(4 * i, 4))
    assert ids(buffer) == list(range(12))
    buffer.clear()
    assert len(buffer) == 0 and buffer.instances is None


def test_shorter_sequences_are_padded() -> None:
    """Action rows of different lengths share one tensor, padded with -1."""
    buffer = TrajectoryBuffer()
    buffer.add(*rows(0, 1, steps=2))
    buffer.add(*rows(1, 1, steps=4))
    assert buffer.actions is not None
    assert buffer.actions.tolist() == [[0, 0, -1, -1], [1, 1, 1, 1]]


def test_state_dict_round_trip_survives_weights_only(tmp_path) -> None:
    """state_dict, torch.save, torch.load(weights_only=True), load_state_dict: same rows."""
    buffer = TrajectoryBuffer(capacity=10)
    buffer.add(*rows(0, 6))
    torch.save(buffer.state_dict(), tmp_path / "b.pt")
    other = TrajectoryBuffer()
    other.load_state_dict(torch.load(tmp_path / "b.pt", weights_only=True))
    assert other.capacity == 10
    assert isinstance(other.instances, TSPInstances)
    assert ids(other) == ids(buffer)
    assert torch.equal(other.actions, buffer.actions)
    empty = TrajectoryBuffer()
    empty.load_state_dict(TrajectoryBuffer().state_dict())
    assert len(empty) == 0


@pytest.mark.parametrize("capacity", [0, -3])
def test_bad_capacity_raises(capacity: int) -> None:
    """A non-positive capacity is rejected."""
    with pytest.raises(ValueError, match="buffer_capacity"):
        TrajectoryBuffer(capacity)


def test_mismatched_rows_raise() -> None:
    """Instances and actions must have the same number of rows."""
    instances, actions = rows(0, 3)
    with pytest.raises(ValueError, match="3 instances but 2 action rows"):
        TrajectoryBuffer().add(instances, actions[:2])
