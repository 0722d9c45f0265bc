"""Gomoku (five in a row) against a deterministic rule-based bot: the paper's toy problem (C.4)."""

from nco.registry import register
from problems.gomoku.env import GomokuEnv
from problems.gomoku.types import GomokuInstances, GomokuState

__all__ = ["GomokuEnv", "GomokuInstances", "GomokuState"]

register("env", GomokuEnv)
register("instances", GomokuInstances)
