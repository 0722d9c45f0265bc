"""Capacitated vehicle routing in the BQ tail sub-problem form (Gumbeldore paper D.3)."""

from nco.problems.cvrp.am_env import AMCVRPEnv
from nco.problems.cvrp.env import CVRPEnv
from nco.problems.cvrp.problem import PROBLEM
from nco.problems.cvrp.types import CVRPInstances, CVRPState
from nco.registry import register, register_problem

__all__ = ["PROBLEM", "CVRPEnv", "CVRPInstances", "CVRPState"]

register_problem(PROBLEM)
register("env", AMCVRPEnv)  # the Attention Model / POMO / rl4co form (depot is an action)
