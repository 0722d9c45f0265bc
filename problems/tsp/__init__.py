"""Euclidean TSP in the BQ tail sub-problem form."""

from problems.tsp.env import TSPEnv
from problems.tsp.types import TSPInstances, TSPState

__all__ = ["TSPEnv", "TSPInstances", "TSPState"]
