"""The trajectory buffer of Algorithm 1: instances with their best-known action sequences."""

from __future__ import annotations

import importlib
from typing import Any

import torch
from torch import nn

from nco.env import Batch, cat


class TrajectoryBuffer:
    """Instances and expert trajectories (actions Long[N, T], pad -1), oldest rows first.

    `capacity` bounds the number of rows kept (the oldest are dropped first); None keeps all.
    The state dict holds only tensors, strings and numbers, so it survives
    `torch.load(weights_only=True)` inside Lightning checkpoints.
    """

    def __init__(self, capacity: int | None = None) -> None:
        if capacity is not None and capacity < 1:
            raise ValueError(
                f"training config: expected buffer_capacity >= 1 or null, got {capacity}."
            )
        self.capacity = capacity
        self.instances: Batch | None = None
        self.actions: torch.Tensor | None = None

    def __len__(self) -> int:
        return 0 if self.actions is None else self.actions.shape[0]

    def add(self, instances: Batch, actions: torch.Tensor) -> None:
        """Append rows (moved to the CPU), then drop the oldest beyond `capacity`."""
        if actions.shape[0] != instances.batch_size:
            raise ValueError(
                f"TrajectoryBuffer.add: {instances.batch_size} instances but "
                f"{actions.shape[0]} action rows."
            )
        instances, actions = instances.to("cpu"), actions.cpu().long()
        if self.instances is not None and self.actions is not None:
            t = max(actions.shape[1], self.actions.shape[1])
            instances = cat([self.instances, instances])
            actions = torch.cat([_pad(self.actions, t), _pad(actions, t)])
        if self.capacity is not None and actions.shape[0] > self.capacity:
            keep = torch.arange(actions.shape[0] - self.capacity, actions.shape[0])
            instances, actions = instances.index(keep), actions[keep]
        self.instances, self.actions = instances, actions

    def clear(self) -> None:
        """Drop every row."""
        self.instances, self.actions = None, None

    def state_dict(self) -> dict[str, Any]:
        """Rows as plain tensors plus the instance class path."""
        if self.instances is None or self.actions is None:
            return {"capacity": self.capacity, "instance_type": "", "fields": {}, "actions": None}
        cls = type(self.instances)
        return {
            "capacity": self.capacity,
            "instance_type": f"{cls.__module__}:{cls.__qualname__}",
            "fields": dict(self.instances._items()),
            "actions": self.actions,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore rows saved by `state_dict`."""
        self.capacity = state["capacity"]
        if not state["instance_type"]:
            self.clear()
            return
        module, _, qualname = state["instance_type"].partition(":")
        cls = importlib.import_module(module)
        for part in qualname.split("."):
            cls = getattr(cls, part)
        self.instances = cls(**state["fields"])
        self.actions = state["actions"]


def _pad(actions: torch.Tensor, length: int) -> torch.Tensor:
    return nn.functional.pad(actions, (0, length - actions.shape[1]), value=-1)
