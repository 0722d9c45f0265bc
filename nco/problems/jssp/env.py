"""Job shop scheduling as a sequence of job choices (paper D.4.1)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from nco.env import Env
from nco.problems.jssp.generator import generate
from nco.problems.jssp.types import JSSPInstances, JSSPState


def _schedule_next(state: JSSPState, actions: torch.Tensor) -> None:
    """Schedule the next operation of job `actions[b]` in every row, writing into `state`'s tensors.

    The operation starts at max(job ready, machine ready) (eq. 31); both become its end (eq. 32).
    """
    rows = torch.arange(actions.shape[0], device=actions.device)
    op = state.next_op[rows, actions]
    machine = state.machines[rows, actions, op]
    begin = torch.maximum(state.job_ready[rows, actions], state.machine_ready[rows, machine])
    end = begin + state.durations[rows, actions, op]
    state.start[rows, actions, op] = begin
    state.job_ready[rows, actions] = end
    state.machine_ready[rows, machine] = end
    state.next_op[rows, actions] = op + 1


class JSSPEnv(Env[JSSPInstances, JSSPState]):
    """Job shop scheduling with makespan objective; actions are job indices (A = J).

    Choosing job j schedules its next operation at the earliest time its job and machine are
    both free. Unfinished jobs are feasible; an episode takes J * M steps. Objective: minus
    the makespan. `generate` draws Taillard-style instances (durations 1..99, a random machine
    order per job) of size `num_jobs` x `num_machines`, or of one size per call drawn uniformly
    from `sizes` when given. `reset` accepts instances of any size (one size per batch).
    """

    name = "jssp"

    def __init__(
        self,
        num_jobs: int = 15,
        num_machines: int = 15,
        sizes: Sequence[Sequence[int]] | None = None,
    ) -> None:
        pairs = [(num_jobs, num_machines)] if sizes is None else [tuple(s) for s in sizes]
        if not pairs or any(len(p) != 2 or min(p) < 1 for p in pairs):
            raise ValueError(
                f"Expected num_jobs, num_machines >= 1 and sizes as [jobs, machines] pairs, "
                f"got num_jobs={num_jobs}, num_machines={num_machines}, sizes={sizes}."
            )
        self.num_jobs = num_jobs
        self.num_machines = num_machines
        self.sizes = [(int(j), int(m)) for j, m in pairs]

    def generate(self, num: int, generator: torch.Generator | None = None) -> JSSPInstances:
        """Taillard-style instances of one of `sizes` (`generator.generate`)."""
        return generate(num, list(self.sizes), generator)

    def reset(self, instances: JSSPInstances) -> JSSPState:
        b, j, m = instances.durations.shape
        dev = instances.durations.device
        return JSSPState(
            durations=instances.durations,
            machines=instances.machines,
            next_op=torch.zeros(b, j, dtype=torch.long, device=dev),
            job_ready=torch.zeros(b, j, dtype=torch.float64, device=dev),
            machine_ready=torch.zeros(b, m, dtype=torch.float64, device=dev),
            start=torch.full((b, j, m), -1.0, dtype=torch.float64, device=dev),
        )

    def step(self, state: JSSPState, actions: torch.Tensor) -> JSSPState:
        b, j, m = state.durations.shape
        actions = actions.to(state.next_op.device)
        feasible = (actions >= 0) & (actions < j)
        if bool(feasible.all()):
            feasible = state.next_op.gather(1, actions.view(-1, 1)).squeeze(1) < m
        if not bool(feasible.all()):
            raise ValueError("JSSPEnv.step: every action must be the index of an unfinished job.")
        new = JSSPState(
            durations=state.durations,
            machines=state.machines,
            next_op=state.next_op.clone(),
            job_ready=state.job_ready.clone(),
            machine_ready=state.machine_ready.clone(),
            start=state.start.clone(),
        )
        _schedule_next(new, actions)
        return new

    def action_mask(self, state: JSSPState) -> torch.Tensor:
        return state.next_op < state.durations.shape[2]

    def is_done(self, state: JSSPState) -> torch.Tensor:
        return (state.next_op == state.durations.shape[2]).all(dim=1)

    def objective(self, state: JSSPState) -> torch.Tensor:
        """Minus the makespan (the latest machine availability)."""
        return -state.machine_ready.amax(dim=1)

    def max_steps(self, instances: JSSPInstances) -> int:
        return instances.durations.shape[1] * instances.durations.shape[2]

    def replay(self, instances: JSSPInstances, actions: torch.Tensor) -> JSSPState:
        """The state after the job sequences `actions` Long[B, T] (no padding) from the root.

        Faster than repeated `step`: one set of buffers is updated in place, without checks
        beyond the sequence being a valid prefix, which is verified once at the end.
        """
        state = self.reset(instances)
        actions = actions.to(state.next_op.device)
        if actions.dim() != 2 or actions.shape[0] != state.batch_size:
            raise ValueError(
                f"JSSPEnv.replay: expected actions of shape ({state.batch_size}, T), "
                f"got {tuple(actions.shape)}."
            )
        j, m = state.durations.shape[1:]
        if bool(((actions < 0) | (actions >= j)).any()):
            raise ValueError(f"JSSPEnv.replay: actions must be job indices in 0..{j - 1}.")
        if actions.shape[1] > 0:
            counts = torch.zeros_like(state.next_op).scatter_add_(
                1, actions, torch.ones_like(actions)
            )
            if bool((counts > m).any()):
                raise ValueError(f"JSSPEnv.replay: a job occurs more than {m} times.")
        for t in range(actions.shape[1]):
            _schedule_next(state, actions[:, t])
        return state

    def schedule(self, instances: JSSPInstances, actions: torch.Tensor) -> torch.Tensor:
        """Start times (B, J, M) of the complete schedules that the job sequences encode."""
        if actions.shape[-1] != self.max_steps(instances):
            raise ValueError(
                f"JSSPEnv.schedule: expected complete sequences of length J*M = "
                f"{self.max_steps(instances)}, got {actions.shape[-1]}."
            )
        return self.replay(instances, actions).start

    def training_batch(
        self,
        instances: JSSPInstances,
        actions: torch.Tensor,
        generator: torch.Generator | None = None,
    ) -> tuple[JSSPState, torch.Tensor]:
        """States after a random prefix of the expert sequences and the expert's next job.

        One prefix length q - 1 per batch with q uniform in 1..J*M-1 (paper D.4.3); the final,
        forced step is never a target. No augmentation.
        """
        total = self.max_steps(instances)
        if actions.shape[1] < total or bool((actions[:, :total] < 0).any()):
            raise ValueError(
                f"JSSPEnv.training_batch: expected complete sequences of length {total} per row."
            )
        t = int(torch.randint(0, max(total - 1, 1), (1,), generator=generator))
        state = self.replay(instances, actions[:, :t])
        return state, actions[:, t].to(state.next_op.device)
