"""Gomoku (five in a row) against a deterministic rule-based bot: the paper's toy problem (C.4)."""

from nco.problems.gomoku.env import GomokuEnv
from nco.problems.gomoku.problem import PROBLEM
from nco.problems.gomoku.types import GomokuInstances, GomokuState
from nco.registry import register_problem

__all__ = ["PROBLEM", "GomokuEnv", "GomokuInstances", "GomokuState"]

register_problem(PROBLEM)
