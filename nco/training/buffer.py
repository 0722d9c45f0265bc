"""The trajectory buffer of Algorithm 1: instances with their best-known action sequences.

Rows are kept in groups of equal instance shape (e.g. JSSP 15x10 and 15x15 when the size is
drawn per epoch), since instances of different sizes cannot share one batch tensor.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from nco import registry
from nco.env import Batch, cat


def _shape_key(instances: Batch) -> tuple:
    return tuple(tuple(v.shape[1:]) for _, v in instances._items())


class TrajectoryBuffer:
    """Instances and expert trajectories (actions Long[N, T], pad -1), oldest rows first.

    `capacity` bounds the number of rows kept over all groups (the oldest are dropped first);
    None keeps all. The state dict holds only tensors, strings, numbers and lists, so it
    survives `torch.load(weights_only=True)` inside Lightning checkpoints.
    """

    def __init__(self, capacity: int | None = None) -> None:
        if capacity is not None and capacity < 1:
            raise ValueError(
                f"training config: expected buffer_capacity >= 1 or null, got {capacity}."
            )
        self.capacity = capacity
        self._groups: list[tuple[Batch, torch.Tensor, torch.Tensor]] = []  # instances, actions, age
        self._counter = 0

    def __len__(self) -> int:
        return sum(a.shape[0] for _, a, _ in self._groups)

    @property
    def groups(self) -> list[tuple[Batch, torch.Tensor]]:
        """(instances, actions) per instance shape, in order of first appearance."""
        return [(inst, acts) for inst, acts, _ in self._groups]

    @property
    def instances(self) -> Batch | None:
        """All instances when the buffer holds one shape (None when empty)."""
        return self._single()[0]

    @property
    def actions(self) -> torch.Tensor | None:
        """All trajectories when the buffer holds one shape (None when empty)."""
        return self._single()[1]

    def _single(self) -> tuple[Batch | None, torch.Tensor | None]:
        if not self._groups:
            return None, None
        if len(self._groups) > 1:
            raise ValueError("TrajectoryBuffer holds several instance shapes; use .groups.")
        return self._groups[0][0], self._groups[0][1]

    def add(self, instances: Batch, actions: torch.Tensor) -> None:
        """Append rows (moved to the CPU), then drop the oldest beyond `capacity`."""
        if actions.shape[0] != instances.batch_size:
            raise ValueError(
                f"TrajectoryBuffer.add: {instances.batch_size} instances but "
                f"{actions.shape[0]} action rows."
            )
        instances, actions = instances.to("cpu"), actions.cpu().long()
        n = actions.shape[0]
        age = torch.arange(self._counter, self._counter + n)
        self._counter += n
        key = _shape_key(instances)
        for i, (old_inst, old_acts, old_age) in enumerate(self._groups):
            if _shape_key(old_inst) == key:
                t = max(actions.shape[1], old_acts.shape[1])
                self._groups[i] = (
                    cat([old_inst, instances]),
                    torch.cat([_pad(old_acts, t), _pad(actions, t)]),
                    torch.cat([old_age, age]),
                )
                break
        else:
            self._groups.append((instances, actions, age))
        self._trim()

    def _trim(self) -> None:
        total = len(self)
        if self.capacity is None or total <= self.capacity:
            return
        ages = torch.cat([age for _, _, age in self._groups])
        cutoff = ages.sort().values[total - self.capacity]  # keep ages >= cutoff
        kept = []
        for inst, acts, age in self._groups:
            keep = (age >= cutoff).nonzero().squeeze(1)
            if keep.numel():
                kept.append((inst.index(keep), acts[keep], age[keep]))
        self._groups = kept

    def clear(self) -> None:
        """Drop every row."""
        self._groups = []

    def state_dict(self) -> dict[str, Any]:
        """Rows as plain tensors per group plus the instance class path."""
        if not self._groups:
            return {"capacity": self.capacity, "instance_type": "", "groups": [], "counter": 0}
        cls = type(self._groups[0][0])
        return {
            "capacity": self.capacity,
            "instance_type": f"{cls.__module__}:{cls.__qualname__}",
            "groups": [
                {"fields": dict(inst._items()), "actions": acts, "age": age}
                for inst, acts, age in self._groups
            ],
            "counter": self._counter,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore rows saved by `state_dict`."""
        self.capacity = state["capacity"]
        self._counter = int(state.get("counter", 0))
        if not state["instance_type"]:
            self.clear()
            return
        cls = registry.resolve("instances", state["instance_type"], "buffer.instance_type")
        self._groups = [(cls(**g["fields"]), g["actions"], g["age"]) for g in state["groups"]]


def _pad(actions: torch.Tensor, length: int) -> torch.Tensor:
    return nn.functional.pad(actions, (0, length - actions.shape[1]), value=-1)
