"""Euclidean TSP in the BQ tail sub-problem form."""

from nco.registry import register_problem
from problems.tsp.env import TSPEnv
from problems.tsp.problem import PROBLEM
from problems.tsp.types import TSPInstances, TSPState

__all__ = ["PROBLEM", "TSPEnv", "TSPInstances", "TSPState"]

register_problem(PROBLEM)
