"""Job shop scheduling: a schedule is a sequence of job indices (paper D.4)."""

from nco.problems.jssp.env import JSSPEnv
from nco.problems.jssp.problem import PROBLEM
from nco.problems.jssp.types import JSSPInstances, JSSPState, make_instances
from nco.registry import register_problem

__all__ = ["PROBLEM", "JSSPEnv", "JSSPInstances", "JSSPState", "make_instances"]

register_problem(PROBLEM)
