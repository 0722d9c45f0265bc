"""Capacitated vehicle routing in the BQ tail sub-problem form (Gumbeldore paper D.3)."""

from nco.registry import register_problem
from problems.cvrp.env import CVRPEnv
from problems.cvrp.problem import PROBLEM
from problems.cvrp.types import CVRPInstances, CVRPState

__all__ = ["PROBLEM", "CVRPEnv", "CVRPInstances", "CVRPState"]

register_problem(PROBLEM)
