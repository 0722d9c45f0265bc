"""Euclidean TSP in the BQ tail sub-problem form."""

from nco.registry import register
from problems.tsp.env import TSPEnv
from problems.tsp.types import TSPInstances, TSPState

__all__ = ["TSPEnv", "TSPInstances", "TSPState"]

register("env", TSPEnv)
register("instances", TSPInstances)
