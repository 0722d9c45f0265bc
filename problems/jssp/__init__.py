"""Job shop scheduling: a schedule is a sequence of job indices (paper D.4)."""

from nco.registry import register
from problems.jssp.env import JSSPEnv
from problems.jssp.types import JSSPInstances, JSSPState, make_instances

__all__ = ["JSSPEnv", "JSSPInstances", "JSSPState", "make_instances"]

register("env", JSSPEnv)
register("instances", JSSPInstances)
