"""Job shop scheduling: a schedule is a sequence of job indices (paper D.4)."""

from nco.registry import register_problem
from problems.jssp.env import JSSPEnv
from problems.jssp.problem import PROBLEM
from problems.jssp.types import JSSPInstances, JSSPState, make_instances

__all__ = ["PROBLEM", "JSSPEnv", "JSSPInstances", "JSSPState", "make_instances"]

register_problem(PROBLEM)
