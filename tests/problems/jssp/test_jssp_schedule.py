"""The independent schedule checker: accepts feasible schedules, names each kind of violation."""

from __future__ import annotations

import numpy as np
import pytest

from nco.problems.jssp.schedule import check_schedule, schedule_to_sequence

# Job 0: (m0, 3) (m1, 2) (m2, 2); job 1: (m0, 2) (m2, 1) (m1, 4).
DURATIONS = np.array([[3, 2, 2], [2, 1, 4]])
MACHINES = np.array([[0, 1, 2], [0, 2, 1]])
FEASIBLE = np.array([[0, 3, 6], [3, 5, 6]])


def test_feasible_schedule_gives_makespan() -> None:
    """A hand-checked feasible schedule has makespan 10 (job 1 ends at 6 + 4)."""
    assert check_schedule(DURATIONS, MACHINES, FEASIBLE) == 10.0


def test_idle_time_is_allowed() -> None:
    """Delaying operations keeps a schedule feasible; the makespan grows accordingly."""
    late = FEASIBLE + np.array([[0, 0, 5], [0, 0, 0]])
    assert check_schedule(DURATIONS, MACHINES, late) == 13.0


@pytest.mark.parametrize(
    ("start", "message"),
    [
        ([[0, 2, 6], [3, 5, 6]], "precedence violated in job 0"),
        ([[0, 3, 6], [2, 5, 6]], "machine 0 runs operation 0 of job 0 until 3.0"),
        ([[0, 3, 5], [3, 5, 6]], "precedence|overlap"),
        ([[0, 3, 6], [3, 5, -1]], "operation 2 of job 1 is not scheduled"),
        ([[0, 3, np.nan], [3, 5, 6]], "operation 2 of job 0 is not scheduled"),
    ],
)
def test_violations_raise(start: list[list[float]], message: str) -> None:
    """Precedence, machine overlap and unscheduled operations each raise a ValueError."""
    with pytest.raises(ValueError, match=message):
        check_schedule(DURATIONS, MACHINES, np.array(start, dtype=np.float64))


def test_machine_overlap_across_jobs() -> None:
    """Two operations on machine 2 overlapping in time are rejected even with precedence met."""
    start = np.array([[0, 3, 5], [3, 5, 8]])  # job 0 op 2 on m2 in [5, 7), job 1 op 1 in [5, 6)
    with pytest.raises(ValueError, match="machine 2 .* overlap"):
        check_schedule(DURATIONS, MACHINES, start)


def test_bad_shapes_and_machine_orders() -> None:
    """Mismatched shapes and a job visiting a machine twice raise ValueError."""
    with pytest.raises(ValueError, match="one shape"):
        check_schedule(DURATIONS, MACHINES, FEASIBLE[:, :2])
    with pytest.raises(ValueError, match="exactly once"):
        check_schedule(DURATIONS, np.array([[0, 0, 2], [0, 2, 1]]), FEASIBLE)


def test_schedule_to_sequence_orders_by_start() -> None:
    """Operations come out by start time, ties broken by job index."""
    assert schedule_to_sequence(FEASIBLE).tolist() == [0, 0, 1, 1, 0, 1]
