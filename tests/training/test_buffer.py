"""Trajectory buffer: append order, capacity, padding and state round trip."""

from __future__ import annotations

import pytest
import torch

from nco.problems.tsp import TSPInstances
from nco.training.buffer import TrajectoryBuffer


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


def sized_rows(start: int, num: int, nodes: int) -> tuple[TSPInstances, torch.Tensor]:
    """Like `rows`, but instances of `nodes` nodes (a second instance shape)."""
    ids = torch.arange(start, start + num, dtype=torch.float64)
    coords = ids.view(-1, 1, 1).expand(-1, nodes, 2).clone()
    return TSPInstances(coords=coords), ids.long().view(-1, 1).expand(-1, nodes - 1).clone()


def test_instance_shapes_are_grouped_and_capacity_spans_groups() -> None:
    """Different instance sizes (JSSP sizes per epoch) live in separate groups; the capacity
    drops the globally oldest rows; a state round trip keeps groups and ages."""
    buffer = TrajectoryBuffer(capacity=6)
    buffer.add(*sized_rows(0, 3, 4))
    buffer.add(*sized_rows(3, 2, 6))
    buffer.add(*sized_rows(5, 3, 4))
    assert len(buffer) == 6
    sizes = [
        (inst.coords.shape[1], inst.coords[:, 0, 0].long().tolist()) for inst, _ in buffer.groups
    ]
    assert sizes == [(4, [2, 5, 6, 7]), (6, [3, 4])]
    with pytest.raises(ValueError, match="several instance shapes"):
        _ = buffer.instances
    other = TrajectoryBuffer()
    other.load_state_dict(buffer.state_dict())
    other.add(*sized_rows(8, 1, 6))
    assert [g[0].coords[:, 0, 0].long().tolist() for g in other.groups] == [[5, 6, 7], [3, 4, 8]]


def test_batches_draw_from_every_group() -> None:
    """SubTrajectoryBatches yields batches of one shape each, from both groups."""
    from nco.problems.tsp import TSPEnv
    from nco.training.data import SubTrajectoryBatches

    buffer = TrajectoryBuffer()
    for start, nodes in ((0, 5), (10, 7)):
        inst = TSPEnv(nodes).generate(4, torch.Generator().manual_seed(start))
        buffer.add(inst, torch.arange(1, nodes).expand(4, -1).clone())
    batches = list(SubTrajectoryBatches(TSPEnv(5), buffer.groups, 30, 8, seed=0))
    widths = {states.coords.shape[1] for states, _ in batches}
    assert len(batches) == 30 and widths <= {4, 5, 6, 7} and max(widths) > 5 and min(widths) <= 5
