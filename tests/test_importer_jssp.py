"""nco-import model=jssp: the imported policy gives the authors' JSSP logits and schedules.

Oracle: their jssp/network.py with seeded random weights (tests/reference_code.py) on the states
their jssp/trajectory.py keeps (`_add_job_idx_to_schedule`, `trajectories_to_batch`), restated.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from nco import checkpoint
from nco.problems.jssp import JSSPEnv, JSSPInstances
from nco.search import greedy
from tests.reference_code import (
    import_saved,
    reference_module,
    requires_reference,
    small_reference,
)

pytestmark = requires_reference


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> tuple[torch.nn.Module, Path]:
    """Their JSSP network (d 16, 2 job/machine pairs, 4 heads, ff 32) and its nco import."""
    network = "jssp.network.JSSPPolicyNetwork"
    net = small_reference("jssp.config.JSSPConfig", network, 2, dim=16, blocks=4, heads=4, ff=32)
    return net, import_saved(net, "jssp", tmp_path_factory.mktemp("jssp"), heads=4)


class ReferenceState:
    """One instance's state as their jssp/trajectory.py keeps it (re-stated here: importing that
    module pulls in their Gomoku config, which needs easydict). Notably a finished job keeps
    the machine of its last operation, so its earliest start still enters the minimum."""

    def __init__(self, durations: torch.Tensor, machines: torch.Tensor) -> None:
        alibi = reference_module("jssp.network").ALiBiPositionalEncoding
        jobs, ops = durations.shape
        self.durations, self.machines = durations.float(), machines
        self.job_free, self.machine_free = torch.zeros(jobs), torch.zeros(ops)
        self.earliest = torch.zeros(jobs)
        self.next_op = torch.zeros(jobs, dtype=torch.long)
        self.next_machine = machines[:, 0].clone()
        self.finished = torch.zeros(jobs, dtype=torch.bool)
        self.job_ops_mask = alibi.get_position_matrix(ops)[None].repeat(jobs, 1, 1)
        flat = machines.reshape(-1)
        self.ops_machines_mask = flat[:, None] != flat[None, :]
        self.sequence: list[int] = []

    def add(self, job: int) -> None:
        """Schedule the next operation of `job` at its earliest start."""
        ops = self.durations.shape[1]
        op = int(self.next_op[job])
        end = self.earliest[job] + self.durations[job, op]
        self.job_free[job] = end
        self.machine_free[self.machines[job, op]] = end
        self.job_ops_mask[job, :, op] = float("-inf")
        self.job_ops_mask[job, op, op] = 0.0
        flat = job * ops + op
        self.ops_machines_mask[:, flat] = True
        self.ops_machines_mask[flat, flat] = False
        if op < ops - 1:
            self.next_op[job] = op + 1
            self.next_machine[job] = self.machines[job, op + 1]
        else:
            self.finished[job] = True
        self.earliest = torch.maximum(self.job_free, self.machine_free[self.next_machine])
        self.sequence.append(job)


def reference_logits(net: torch.nn.Module, states: list[ReferenceState]) -> torch.Tensor:
    """Their network on the batch their `Trajectory.trajectories_to_batch` forms."""
    ops = states[0].durations.shape[1]
    earliest = torch.stack([s.earliest for s in states])
    earliest = (earliest - earliest.min(1, keepdim=True).values)[:, :, None, None]
    durations = torch.stack([s.durations for s in states])[..., None]
    batch = {
        "operations": torch.cat([durations, earliest.repeat(1, 1, ops, 1)], 3) / 100.0,
        "job_ops_mask": torch.stack([s.job_ops_mask for s in states]),
        "ops_machines_mask": torch.stack([s.ops_machines_mask for s in states]),
        "jobs_next_op_idx": torch.stack([s.next_op for s in states])[:, :, None],
        "action_mask": torch.stack([s.finished for s in states]),
    }
    with torch.no_grad():
        return net(batch)


def reference_states(instances: JSSPInstances) -> list[ReferenceState]:
    pairs = zip(instances.durations, instances.machines, strict=True)
    return [ReferenceState(d, m) for d, m in pairs]


CASES = [(3, 4, 0), (5, 4, 9), (6, 6, 20), (6, 6, 34), (6, 6, 35), (4, 7, 26)]


@pytest.mark.parametrize(("jobs", "machines", "steps"), CASES)
def test_logits_equal_the_reference_network(imported, jobs: int, machines: int, steps: int) -> None:
    """Same logits (1e-5, fp32; same -inf) on random partial schedules: the first step, the
    middle, two operations and one operation left."""
    net, path = imported
    gen = torch.Generator().manual_seed(steps)
    env = JSSPEnv(jobs, machines)
    instances = env.generate(6, gen)
    state, theirs = env.reset(instances), reference_states(instances)
    for _ in range(steps):
        picks = torch.multinomial(env.action_mask(state).double(), 1, generator=gen)[:, 0]
        state = env.step(state, picks)
        for ref, job in zip(theirs, picks.tolist(), strict=True):
            ref.add(job)
    with torch.no_grad():
        ours = checkpoint.load(path).policy(state)
    torch.testing.assert_close(ours, reference_logits(net, theirs), atol=1e-5, rtol=1e-5)


def test_greedy_schedules_equal_the_reference_decode(imported) -> None:
    """nco's greedy decoder gives the job sequences and makespans of an argmax loop over their
    network on 20 JSSP 6x6 (every step decided by the network)."""
    net, path = imported
    loaded = checkpoint.load(path)
    instances = JSSPEnv(6, 6).generate(20, torch.Generator().manual_seed(5))
    theirs = reference_states(instances)
    for _ in range(36):
        picks = reference_logits(net, theirs).argmax(1).tolist()
        for ref, job in zip(theirs, picks, strict=True):
            ref.add(job)
    best = greedy(loaded.policy, loaded.env, instances).best()
    assert best.actions.tolist() == [ref.sequence for ref in theirs]
    makespans = [float(ref.machine_free.max()) for ref in theirs]
    assert (-best.objective).tolist() == pytest.approx(makespans)
    assert loaded.model["form"] == "paper" and loaded.model["pairs"] == 2
