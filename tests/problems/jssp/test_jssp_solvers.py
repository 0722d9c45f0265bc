"""CP-SAT baseline: proves known optima, returns checkable schedules, rejects bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nco.problems.jssp import JSSPEnv
from nco.problems.jssp.schedule import check_schedule, schedule_to_sequence
from nco.problems.jssp.solvers import SOLVERS, solve_cpsat
from nco.solver import SolverResult

# Fisher & Thompson's ft06 (6 x 6, optimum 55), machines 0-based.
FT06_DURATIONS = np.array(
    [
        [1, 3, 6, 7, 3, 6],
        [8, 5, 10, 10, 10, 4],
        [5, 4, 8, 9, 1, 7],
        [5, 5, 5, 3, 8, 9],
        [9, 3, 5, 4, 3, 1],
        [3, 3, 9, 10, 4, 1],
    ]
)
FT06_MACHINES = np.array(
    [
        [2, 0, 1, 3, 5, 4],
        [1, 2, 4, 5, 0, 3],
        [2, 3, 5, 0, 1, 4],
        [1, 0, 2, 3, 4, 5],
        [2, 1, 4, 5, 0, 3],
        [1, 3, 5, 0, 4, 2],
    ]
)


def all_sequences(jobs: int, machines: int) -> list[list[int]]:
    """Every distinct job sequence with each job `machines` times (multiset permutations)."""
    out: list[list[int]] = []

    def extend(prefix: list[int], left: list[int]) -> None:
        if not any(left):
            out.append(prefix)
        for j in range(jobs):
            if left[j]:
                left[j] -= 1
                extend(prefix + [j], left)
                left[j] += 1

    extend([], [machines] * jobs)
    return out


def test_cpsat_proves_ft06_optimum() -> None:
    """CP-SAT proves ft06 = 55; its schedule passes the checker with that makespan."""
    result = solve_cpsat({"durations": FT06_DURATIONS, "machines": FT06_MACHINES}, 30.0, 0)
    assert isinstance(result, SolverResult)
    assert result.cost == 55 and result.bound == 55 and result.optimal is True
    assert result.status == "OPTIMAL"
    assert check_schedule(FT06_DURATIONS, FT06_MACHINES, np.array(result.solution)) == 55


def test_cpsat_matches_brute_force_and_replays_as_a_sequence() -> None:
    """On a random 3 x 3 instance CP-SAT's optimum equals the best of all 1680 job sequences,
    and its schedule turned into a sequence replays to the same makespan in the env."""
    env = JSSPEnv(3, 3)
    instances = env.generate(1, torch.Generator().manual_seed(5))
    sequences = torch.tensor(all_sequences(3, 3))
    assert len(sequences) == 1680
    batch = instances.index(torch.zeros(len(sequences), dtype=torch.long))
    makespans = (env.schedule(batch, sequences) + batch.durations).amax(dim=(1, 2))
    best = makespans.min().item()
    inst = {k: getattr(instances, k)[0].numpy() for k in ("durations", "machines")}
    result = SOLVERS["cpsat"](inst, 10.0, 1)
    assert result.cost == best and result.optimal is True
    seq = torch.tensor(schedule_to_sequence(np.array(result.solution))).view(1, -1)
    assert -env.objective(env.replay(instances, seq)).item() == best


@pytest.mark.parametrize(
    ("instance", "message"),
    [
        ({"durations": FT06_DURATIONS}, "needs fields"),
        ({"durations": FT06_DURATIONS + 0.5, "machines": FT06_MACHINES}, "positive integers"),
        ({"durations": FT06_DURATIONS, "machines": FT06_MACHINES[:3]}, "one shape"),
    ],
)
def test_cpsat_rejects_bad_instances(instance: dict, message: str) -> None:
    """Missing fields, fractional durations and shape mismatches raise ValueError."""
    with pytest.raises(ValueError, match=message):
        solve_cpsat(instance, 1.0, 0)
