"""Gomoku (five in a row) against a deterministic rule-based bot: the paper's toy problem (C.4)."""

from nco.problem import Problem
from nco.problems.gomoku.env import GomokuEnv
from nco.problems.gomoku.types import GomokuInstances, GomokuState
from nco.registry import register_problem

__all__ = ["PROBLEM", "GomokuEnv", "GomokuInstances", "GomokuState"]

PROBLEM = Problem(
    name="gomoku", env=GomokuEnv, instances=GomokuInstances, default_model="default_gomoku"
)
register_problem(PROBLEM)
