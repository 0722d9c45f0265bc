"""Capacitated vehicle routing in the BQ tail sub-problem form (Gumbeldore paper D.3)."""

from nco.registry import register
from problems.cvrp.env import CVRPEnv
from problems.cvrp.types import CVRPInstances, CVRPState

__all__ = ["CVRPEnv", "CVRPInstances", "CVRPState"]

register("env", CVRPEnv)
register("instances", CVRPInstances)
