"""Priority dispatching rules (PDRs) for the JSSP, the classical baselines of L2D's Table 2.

A rule dispatches one operation at a time on `JSSPEnv` (append-only: an operation starts at
max(end of its job's previous operation, end of the last operation on its machine), its
earliest start est). At each of the J*M steps the candidates are some of the unfinished jobs'
next operations, and the rule's priority picks one of them (the smallest value; ties go to the
lowest job index). Two candidate sets, both giving active schedules (no operation can start
earlier without delaying another):

- `nondelay` (solvers `pdr:<rule>`, the default): the operations whose earliest start equals
  the smallest earliest start t*, on any machine. No machine is left idle while an operation
  could start on it. For rules whose priority depends only on the operation's own job (all
  four below), this is the same schedule as Giffler-Thompson's non-delay variant, which
  restricts the candidates to one machine where t* is attained.
- `active` (solvers `pdr-gt:<rule>`): Giffler and Thompson's (1960) conflict set. C* is the
  smallest earliest completion est + p, m* the machine of the operation that attains it (the
  lowest job index among equal ones), and the candidates are the operations on m* with
  est < C*. Choosing among them can generate every active schedule, so a rule may also start
  an operation later than t*.

Priorities, for the next operation o = (j, l) of job j (as in L2D, Zhang et al. 2020, and in
Sels et al. 2012; release dates are 0):

- `spt`: shortest processing time, p(j, l).
- `mwkr`: most work remaining, the largest sum of p(j, l..M-1) (o itself included).
- `mopnr`: most operations remaining, the largest M - l (o included).
- `fdd/mwkr`: smallest flow due date over work remaining, sum p(j, 0..l) / sum p(j, l..M-1);
  the flow due date is the completion o would have if job j never waited.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

import numpy as np
import torch

from nco.problems.jssp.env import JSSPEnv
from nco.problems.jssp.types import JSSPInstances, JSSPState, make_instances
from nco.solver import SolverResult


def _work(state: JSSPState) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per job (B, J): the next operation's duration, the work from it to the end, and the
    work up to and including it."""
    m = state.durations.shape[2]
    nxt = state.next_op.clamp(max=m - 1)
    p = state.durations.gather(2, nxt.unsqueeze(-1)).squeeze(-1)
    todo = torch.arange(m, device=nxt.device) >= state.next_op.unsqueeze(-1)
    remaining = (state.durations * todo).sum(-1)
    done_incl = state.durations.sum(-1) - remaining + p
    return p, remaining, done_incl


def _spt(state: JSSPState) -> torch.Tensor:
    return _work(state)[0]


def _mwkr(state: JSSPState) -> torch.Tensor:
    return -_work(state)[1]


def _mopnr(state: JSSPState) -> torch.Tensor:
    return (state.next_op - state.durations.shape[2]).to(torch.float64)


def _fdd_mwkr(state: JSSPState) -> torch.Tensor:
    _, remaining, done_incl = _work(state)
    return done_incl / remaining.clamp(min=torch.finfo(remaining.dtype).tiny)


# Rule name -> priority Float[B, J] of each job's next operation; the smallest is dispatched.
RULES: dict[str, Callable[[JSSPState], torch.Tensor]] = {
    "spt": _spt,
    "mwkr": _mwkr,
    "mopnr": _mopnr,
    "fdd/mwkr": _fdd_mwkr,
}


def check_rule(rule: str) -> str:
    """The canonical (lower-case) name of `rule`; ValueError listing the valid ones."""
    name = str(rule).lower()
    if name not in RULES:
        raise ValueError(f"Unknown dispatching rule {rule!r}; expected one of {sorted(RULES)}.")
    return name


def _next_ops(state: JSSPState) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per job (B, J): the machine, earliest start and earliest completion (inf once the job
    is finished) of its next operation."""
    m = state.durations.shape[2]
    nxt = state.next_op.clamp(max=m - 1).unsqueeze(-1)
    machine = state.machines.gather(2, nxt).squeeze(-1)
    est = torch.maximum(state.job_ready, state.machine_ready.gather(1, machine))
    completion = est + state.durations.gather(2, nxt).squeeze(-1)
    return machine, est, completion.masked_fill(state.next_op >= m, float("inf"))


def nondelay_set(state: JSSPState) -> torch.Tensor:
    """Bool[B, J]: the jobs whose next operation can start at the earliest start t*."""
    _, est, completion = _next_ops(state)
    unfinished = completion < float("inf")
    earliest = est.masked_fill(~unfinished, float("inf")).amin(dim=1, keepdim=True)
    return unfinished & (est == earliest)


def conflict_set(state: JSSPState) -> torch.Tensor:
    """Bool[B, J]: the jobs whose next operation is in Giffler and Thompson's conflict set."""
    machine, est, completion = _next_ops(state)
    first = completion.argmin(dim=1, keepdim=True)  # lowest job index among the smallest
    on_machine = machine == machine.gather(1, first)
    return (completion < float("inf")) & on_machine & (est < completion.gather(1, first))


# Candidate set name -> Bool[B, J] of the jobs a rule may dispatch.
SCHEDULES: dict[str, Callable[[JSSPState], torch.Tensor]] = {
    "nondelay": nondelay_set,
    "active": conflict_set,
}


def dispatch(instances: JSSPInstances, rule: str, schedule: str = "nondelay") -> torch.Tensor:
    """Job sequences Long[B, J*M] of `rule`'s schedules (`schedule`: a key of SCHEDULES) of a
    batch of one size."""
    priority = RULES[check_rule(rule)]
    if schedule not in SCHEDULES:
        raise ValueError(f"Unknown schedule {schedule!r}; expected one of {sorted(SCHEDULES)}.")
    candidates = SCHEDULES[schedule]
    env = JSSPEnv()
    state = env.reset(instances)
    actions = []
    for _ in range(env.max_steps(instances)):
        score = priority(state).masked_fill(~candidates(state), float("inf"))
        action = score.argmin(dim=1)  # first minimum: the lowest job index wins ties
        actions.append(action)
        state = env.step(state, action)
    return torch.stack(actions, dim=1)


def solve_pdr(
    instance: dict[str, np.ndarray],
    time_limit: float,
    seed: int,
    rule: str,
    schedule: str = "nondelay",
) -> SolverResult:
    """One instance by dispatching rule `rule` (nco-baseline's `pdr:<rule>` and
    `pdr-gt:<rule>` solvers); the solution holds the start times (J, M) as lists.
    Deterministic: `time_limit` and `seed` are accepted for the solver interface and unused."""
    name = check_rule(rule)
    if "durations" not in instance or "machines" not in instance:
        raise ValueError("solve_pdr: instance needs fields 'durations' and 'machines' (J, M).")
    start_time = time.perf_counter()
    instances = make_instances(instance["durations"], instance["machines"], source="solve_pdr")
    actions = dispatch(instances, name, schedule)
    start = JSSPEnv().schedule(instances, actions)[0]
    makespan = float((start + instances.durations[0]).max())
    solution = start.to(torch.int64) if bool((start == start.round()).all()) else start
    return SolverResult(
        cost=makespan,
        solution=solution.tolist(),
        time_s=time.perf_counter() - start_time,
        status=f"PDR {name} {schedule}",
    )


def pdr_solvers() -> dict[str, Callable[..., SolverResult]]:
    """`pdr:<rule>` (non-delay) and `pdr-gt:<rule>` (Giffler-Thompson active) for every rule,
    in the form of `SOLVERS` (problems/jssp/solvers.py)."""
    prefixes = {"pdr": "nondelay", "pdr-gt": "active"}
    return {
        f"{prefix}:{rule}": functools.partial(solve_pdr, rule=rule, schedule=schedule)
        for prefix, schedule in prefixes.items()
        for rule in RULES
    }
