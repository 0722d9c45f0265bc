"""Gomoku's descriptor: no dataset files or classical solvers; the opponent is in the env."""

from __future__ import annotations

from nco.problem import Problem
from nco.problems.gomoku.env import GomokuEnv
from nco.problems.gomoku.types import GomokuInstances

PROBLEM = Problem(
    name="gomoku", env=GomokuEnv, instances=GomokuInstances, default_model="default_gomoku"
)
