"""Batched job shop instances and partial schedules."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from nco.env import Batch


@dataclasses.dataclass(frozen=True)
class JSSPInstances(Batch):
    """Job shop instances of one size J x M: job j runs its l-th operation on `machines[j, l]`.

    Every job visits every machine exactly once, so each row of `machines` is a permutation.
    """

    durations: torch.Tensor  # (N, J, M) float64, processing times > 0
    machines: torch.Tensor  # (N, J, M) long, 0-based machine of each operation


@dataclasses.dataclass(frozen=True)
class JSSPState(Batch):
    """A partial schedule: the first `next_op[j]` operations of each job are scheduled.

    The availability times are the tail sub-problem of paper D.4.1; `start` keeps the start time
    of every scheduled operation so that the full schedule can be read off a finished state.
    """

    durations: torch.Tensor  # (B, J, M) float64
    machines: torch.Tensor  # (B, J, M) long
    next_op: torch.Tensor  # (B, J) long, index of the next unscheduled operation (M if finished)
    job_ready: torch.Tensor  # (B, J) float64, end of the job's last scheduled operation
    machine_ready: torch.Tensor  # (B, M) float64, end of the machine's last scheduled operation
    start: torch.Tensor  # (B, J, M) float64, start times; -1 where not yet scheduled


def make_instances(
    durations: np.ndarray | torch.Tensor | list,
    machines: np.ndarray | torch.Tensor | list,
    source: str = "instances",
) -> JSSPInstances:
    """Validated `JSSPInstances` from (N, J, M) or (J, M) arrays of durations and 0-based machines.

    `source` (a file name, say) starts every error message.
    """
    d = torch.as_tensor(np.asarray(durations, dtype=np.float64))
    m_arr = np.asarray(machines)
    if d.dim() == 2:
        d, m_arr = d.unsqueeze(0), m_arr[None]
    if d.dim() != 3 or m_arr.shape != tuple(d.shape):
        raise ValueError(
            f"{source}: expected durations and machines of equal shape (N, J, M) or (J, M), "
            f"got {tuple(d.shape)} and {m_arr.shape}."
        )
    if 0 in d.shape[1:]:
        raise ValueError(
            f"{source}: expected at least one job and one machine, got {tuple(d.shape)}."
        )
    if not bool(torch.isfinite(d).all()) or not bool((d > 0).all()):
        raise ValueError(f"{source}: field durations must hold finite values > 0.")
    if not np.issubdtype(m_arr.dtype, np.integer):
        rounded = np.rint(m_arr)
        if not np.array_equal(rounded, m_arr):
            raise ValueError(f"{source}: field machines must hold integers.")
        m_arr = rounded
    m = torch.as_tensor(m_arr.astype(np.int64))
    ident = torch.arange(m.shape[-1]).expand_as(m)
    if not bool((m.sort(dim=-1).values == ident).all()):
        raise ValueError(
            f"{source}: field machines must list every machine 0..M-1 exactly once per job."
        )
    return JSSPInstances(durations=d, machines=m)
