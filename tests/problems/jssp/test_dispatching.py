"""Dispatching rules: hand-computed schedules, active and feasible schedules, nco-baseline."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_dir

from nco.baselines import run
from nco.problems.jssp import JSSPEnv
from nco.problems.jssp.dispatching import (
    RULES,
    SCHEDULES,
    conflict_set,
    dispatch,
    nondelay_set,
    solve_pdr,
)
from nco.problems.jssp.schedule import check_schedule
from nco.problems.jssp.solvers import SOLVERS
from nco.problems.jssp.taillard import taillard_bounds, taillard_group
from nco.problems.jssp.types import make_instances

REPO = Path(__file__).resolve().parents[3]

# Worked by hand, step by step, for both candidate sets.
# Non-delay (candidates: next operations that can start at the smallest earliest start t*).
# Jobs as (machine, duration): j0 (0, 4) (1, 1); j1 (0, 4) (1, 3); j2 (0, 2) (1, 5).
FLOW_DURATIONS = np.array([[4, 1], [4, 3], [2, 5]])
FLOW_MACHINES = np.array([[0, 1], [0, 1], [0, 1]])
# spt: {j0, j1, j2} at 0: j2 (2); all at 2: j0 (4 = 4 < 5, tie to j0); j2; j1; j0; j1.   13
# mwkr: j1 (7 = 7 > 5, tie to j1); all at 4: j2 (7 > 5 > 3); j1; j0; j2; j0.             13
# mopnr: j0 (all 2); all at 4: j1 (2 = 2 > 1); j0; {j1, j2} at 8: j2 (2 > 1); j1; j2.     16
# fdd/mwkr: j2 (2/7 < 4/7 < 4/5); all at 2: j1 (4/7 < 4/5 < 7/5); j2; j0; j1; j0.         11
NONDELAY = {
    "spt": ([2, 0, 2, 1, 0, 1], 13),
    "mwkr": ([1, 2, 1, 0, 2, 0], 13),
    "mopnr": ([0, 1, 0, 2, 1, 2], 16),
    "fdd/mwkr": ([2, 1, 2, 0, 1, 0], 11),
}
# Giffler-Thompson active (C*: smallest earliest completion; candidates: next operations on
# its machine that start before C*).
# Jobs as (machine, duration): j0 (0, 3) (1, 6); j1 (0, 2) (1, 6); j2 (1, 4) (0, 1).
# First step for every rule: C* = 2 (j1 on m0), conflict {j0, j1}.
DURATIONS = np.array([[3, 6], [2, 6], [4, 1]])
MACHINES = np.array([[0, 1], [0, 1], [1, 0]])
# spt: j1 (p 2 < 3); {j1, j2} on m1 before 4: j2 (4 < 6); {j0, j2} on m0 before 5: j2 (1);
#   j0; {j0, j1} on m1 before 10: tie 6 = 6, j0; j1.                     Makespan 20.
# mwkr: j0 (9 > 8); {j0, j2} on m1 before 4: j0 (6 > 5); j1; {j1, j2} on m1 before 13: j1
#   (6 > 5); j2; j2.                                                       Makespan 20.
# mopnr: tie 2 = 2, j0; {j0, j2} on m1: j2 (2 > 1); {j1, j2} on m0 before 5: j1 (2 > 1); j2;
#   {j0, j1} on m1 before 10: tie, j0; j1.                                 Makespan 16.
# fdd/mwkr: j1 (2/8 < 3/9); {j1, j2} on m1: j2 (4/5 < 8/6); {j0, j2} on m0: j0 (3/9 < 5/1);
#   j2; {j0, j1} on m1 before 10: j1 (8/6 < 9/6); j0.                      Makespan 16.
ACTIVE = {
    "spt": ([1, 2, 2, 0, 0, 1], 20),
    "mwkr": ([0, 0, 1, 1, 2, 2], 20),
    "mopnr": ([0, 2, 1, 2, 0, 1], 16),
    "fdd/mwkr": ([1, 2, 0, 2, 1, 0], 16),
}
HAND = [
    (schedule, rule, durations, machines, *table[rule])
    for schedule, table, durations, machines in [
        ("nondelay", NONDELAY, FLOW_DURATIONS, FLOW_MACHINES),
        ("active", ACTIVE, DURATIONS, MACHINES),
    ]
    for rule in RULES
]


def is_active(durations: np.ndarray, machines: np.ndarray, start: np.ndarray) -> bool:
    """No operation could start earlier without delaying another: none starts later than its
    job and machine allow, and none fits into an idle gap earlier on its machine."""
    jobs, num_machines = durations.shape
    for m in range(num_machines):
        on_m = [(j, l) for j in range(jobs) for l in range(num_machines) if machines[j, l] == m]
        ops = sorted((start[j, l], j, l) for j, l in on_m)
        ends = [0.0] + [s + durations[j, l] for s, j, l in ops]  # ends[g]: end of op g - 1
        for k, (s, j, l) in enumerate(ops):
            ready = start[j, l - 1] + durations[j, l - 1] if l > 0 else 0.0
            if max(ends[k], ready) < s:
                return False
            for g in range(k):  # the idle gap before the g-th operation on m
                if max(ends[g], ready) + durations[j, l] <= ops[g][0]:
                    return False
    return True


@pytest.mark.parametrize(
    ("schedule", "rule", "durations", "machines", "sequence", "makespan"), HAND
)
def test_hand_computed_schedules(
    schedule: str,
    rule: str,
    durations: np.ndarray,
    machines: np.ndarray,
    sequence: list[int],
    makespan: int,
) -> None:
    """Each rule and candidate set reproduces its schedule worked out by hand on a 3 x 2
    instance."""
    assert dispatch(make_instances(durations, machines), rule, schedule)[0].tolist() == sequence
    instance = {"durations": durations, "machines": machines}
    result = solve_pdr(instance, 1.0, 0, rule, schedule)
    assert result.cost == makespan
    assert check_schedule(durations, machines, np.array(result.solution)) == makespan


def test_first_candidates() -> None:
    """At the root of the second instance, C* = 2 is j1's on machine 0: j0 and j1 compete in
    Giffler-Thompson's set, j2 (machine 1) does not; all three can start at t* = 0."""
    state = JSSPEnv().reset(make_instances(DURATIONS, MACHINES))
    assert conflict_set(state)[0].tolist() == [True, True, False]
    assert nondelay_set(state)[0].tolist() == [True, True, True]


@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
@pytest.mark.parametrize("group", ["15x15", "20x20"])
def test_taillard_schedules_are_active_feasible_and_bounded(group: str, schedule: str) -> None:
    """On a Taillard group every rule's schedule passes the checker, is active, is no shorter
    than the instance's lower bound, and batched dispatch equals one instance at a time."""
    instances, names, _ = taillard_group(group)
    bounds = taillard_bounds()
    env = JSSPEnv()
    for rule in RULES:
        batched = dispatch(instances, rule, schedule)
        starts = env.schedule(instances, batched).numpy()
        for i, name in enumerate(names[:3]):
            d, m = instances.durations[i].numpy(), instances.machines[i].numpy()
            makespan = check_schedule(d, m, starts[i])
            assert makespan >= float(bounds[name]["lower_bound"])
            assert is_active(d, m, starts[i])
            one = dispatch(instances.index(torch.tensor([i])), rule, schedule)[0]
            assert torch.equal(one, batched[i])


def idle_while_ready(durations: np.ndarray, machines: np.ndarray, start: np.ndarray) -> bool:
    """Whether some machine is idle at a time when an operation for it is ready (its job
    predecessor finished) but not yet started: the schedule is then not non-delay."""
    jobs, num_machines = durations.shape
    for m in range(num_machines):
        on_m = [(j, l) for j in range(jobs) for l in range(num_machines) if machines[j, l] == m]
        ops = sorted((start[j, l], j, l) for j, l in on_m)
        ends = [0.0] + [s + durations[j, l] for s, j, l in ops]  # ends[g]: end of op g - 1
        for k, (_, j, l) in enumerate(ops):
            ready = start[j, l - 1] + durations[j, l - 1] if l > 0 else 0.0
            if any(max(ends[g], ready) < ops[g][0] for g in range(k + 1)):
                return True
    return False


def test_nondelay_leaves_no_machine_idle() -> None:
    """On ta01 and ta02 the non-delay schedules never leave a machine idle while an operation
    is ready for it; the Giffler-Thompson schedules do (they are active, not non-delay)."""
    instances, _, _ = taillard_group("15x15")
    instances = instances.index(torch.arange(2))
    env = JSSPEnv()
    for rule in RULES:
        nondelay = env.schedule(instances, dispatch(instances, rule)).numpy()
        active = env.schedule(instances, dispatch(instances, rule, "active")).numpy()
        for i in range(2):
            d, m = instances.durations[i].numpy(), instances.machines[i].numpy()
            assert not idle_while_ready(d, m, nondelay[i])
            assert idle_while_ready(d, m, active[i])


def test_deterministic_and_case_insensitive() -> None:
    """The same instance gives the same schedule every time; rule names ignore case."""
    inst = {"durations": DURATIONS * 7 + 1, "machines": MACHINES}
    a = solve_pdr(inst, 1.0, 0, "FDD/MWKR")
    b = solve_pdr(inst, 5.0, 99, "fdd/mwkr")
    assert (a.cost, a.solution) == (b.cost, b.solution)


def test_unknown_rule_or_schedule_lists_the_valid_ones() -> None:
    """An unknown rule or candidate set raises ValueError naming every valid one."""
    inst = {"durations": DURATIONS, "machines": MACHINES}
    with pytest.raises(ValueError, match=r"expected one of \['fdd/mwkr', 'mopnr', 'mwkr', 'spt'\]"):
        solve_pdr(inst, 1.0, 0, "lpt")
    with pytest.raises(ValueError, match=r"expected one of \['active', 'nondelay'\]"):
        solve_pdr(inst, 1.0, 0, "spt", "semiactive")
    assert {f"{p}:{r}" for p in ("pdr", "pdr-gt") for r in RULES} <= set(SOLVERS)


def baseline_cfg(*overrides: str):
    with initialize_config_dir(config_dir=str(REPO / "configs"), version_base="1.3"):
        return compose("baseline", overrides=list(overrides))


def test_nco_baseline_runs_a_rule_on_taillard() -> None:
    """`nco-baseline problem=jssp solver=pdr rule=fdd/mwkr` on ta01: the method names the rule,
    the makespan is the checker's and at least the optimum 1231."""
    res = run(
        baseline_cfg(
            "problem=jssp", "solver=pdr", "rule=fdd/mwkr", "data=taillard:ta01", "workers=1"
        )
    )
    assert res.method == "pdr:fdd/mwkr" and res.names == ["ta01"]
    instances, _, _ = taillard_group("ta01")
    d, m = instances.durations[0].numpy(), instances.machines[0].numpy()
    assert res.objectives[0] == check_schedule(d, m, np.array(res.solutions[0])) >= 1231


@pytest.mark.parametrize("overrides", [["rule=lpt"], [], ["solver=cpsat", "rule=mwkr"]])
def test_nco_baseline_rejects_bad_rules(overrides: list[str]) -> None:
    """A missing or unknown rule, or a rule for a solver without rules, names the valid solvers."""
    cfg = baseline_cfg("problem=jssp", "solver=pdr", "data=taillard:ta01", *overrides)
    with pytest.raises(ValueError, match="expected one of .*'pdr:mwkr'"):
        run(cfg)
