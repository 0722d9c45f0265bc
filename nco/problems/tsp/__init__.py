"""Euclidean TSP in the BQ tail sub-problem form."""

from nco.problems.tsp.am_env import AMTSPEnv
from nco.problems.tsp.env import TSPEnv
from nco.problems.tsp.problem import PROBLEM
from nco.problems.tsp.types import TSPInstances, TSPState
from nco.registry import register, register_problem

__all__ = ["PROBLEM", "TSPEnv", "TSPInstances", "TSPState"]

register_problem(PROBLEM)
register("env", AMTSPEnv)  # the Attention Model / POMO form (first node is an action)
