"""Schedules as start times: an independent feasibility checker and conversion to job sequences.

The checker shares no code with `JSSPEnv`, so tests can use it to verify the environment.
"""

from __future__ import annotations

import numpy as np


def schedule_arrays(
    durations: np.ndarray, machines: np.ndarray, start: np.ndarray, caller: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Durations and starts as float64 and machines as given, checked to share one (J, M) shape."""
    p = np.asarray(durations, dtype=np.float64)
    mach = np.asarray(machines)
    s = np.asarray(start, dtype=np.float64)
    if p.ndim != 2 or mach.shape != p.shape or s.shape != p.shape:
        raise ValueError(
            f"{caller}: expected durations, machines and start of one shape (J, M), "
            f"got {p.shape}, {mach.shape} and {s.shape}."
        )
    return p, mach, s


def check_schedule(durations: np.ndarray, machines: np.ndarray, start: np.ndarray) -> float:
    """The makespan of a schedule given by start times (J, M); ValueError describing any violation.

    Checks that every operation is scheduled exactly once at a finite time >= 0, that each job's
    operations run in order (each starts after its predecessor ends), and that no two operations
    overlap on a machine. Operation (j, l) runs on `machines[j, l]` from `start[j, l]` for
    `durations[j, l]`.
    """
    p, mach, s = schedule_arrays(durations, machines, start, "check_schedule")
    jobs, num_machines = p.shape
    for j in range(jobs):
        if sorted(int(x) for x in mach[j]) != list(range(num_machines)):
            raise ValueError(f"check_schedule: job {j} does not visit each machine exactly once.")
        for l in range(num_machines):
            if not np.isfinite(s[j, l]) or s[j, l] < 0:
                raise ValueError(
                    f"check_schedule: operation {l} of job {j} is not scheduled (start {s[j, l]})."
                )
        for l in range(1, num_machines):
            ready = s[j, l - 1] + p[j, l - 1]
            if s[j, l] < ready:
                raise ValueError(
                    f"check_schedule: precedence violated in job {j}: operation {l} starts at "
                    f"{s[j, l]} before operation {l - 1} ends at {ready}."
                )
    for m in range(num_machines):
        ops = sorted(
            (s[j, l], j, l) for j in range(jobs) for l in range(num_machines) if mach[j, l] == m
        )
        for (s0, j0, l0), (s1, j1, l1) in zip(ops[:-1], ops[1:], strict=True):
            end = s0 + p[j0, l0]
            if s1 < end:
                raise ValueError(
                    f"check_schedule: machine {m} runs operation {l0} of job {j0} until {end} "
                    f"and operation {l1} of job {j1} from {s1}: they overlap."
                )
    return float((s + p).max())


def schedule_to_sequence(start: np.ndarray) -> np.ndarray:
    """A job sequence (J*M,) whose earliest-start replay is no later anywhere than `start` (J, M).

    Operations are listed by start time (ties by job); replaying the sequence starts every
    operation at or before its given start, so a feasible schedule's makespan never grows. This
    turns solver schedules into expert trajectories.
    """
    s = np.asarray(start, dtype=np.float64)
    if s.ndim != 2:
        raise ValueError(f"schedule_to_sequence: expected start times (J, M), got {s.shape}.")
    jobs, ops = np.meshgrid(np.arange(s.shape[0]), np.arange(s.shape[1]), indexing="ij")
    order = np.lexsort((ops.ravel(), jobs.ravel(), s.ravel()))
    return jobs.ravel()[order]
