"""Policies that misbehave inside Ray workers, for the fault-handling tests.

Ray workers import this module by name, so the test session puts this folder on PYTHONPATH.
"""

from __future__ import annotations

import os

import torch

from nco.models.bq import BQPolicy
from nco.registry import add_plugin_package, register


class CrashOncePolicy(BQPolicy):
    """A BQ policy whose process exits hard on its first call, once across all workers.

    The first caller to create `marker` exits; every later call behaves normally.
    """

    def __init__(self, marker: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.marker = marker

    def forward(self, state) -> torch.Tensor:
        try:
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return super().forward(state)
        os._exit(1)


class FailingPolicy(BQPolicy):
    """A BQ policy that raises on every call."""

    def forward(self, state) -> torch.Tensor:
        raise ValueError("boom from the policy")


add_plugin_package("ray_helpers")  # outside models/ and problems/: registered like a plug-in
register("policy", CrashOncePolicy, FailingPolicy, reads=("tsp",))
