"""Decoders over the constructive-step protocol (docs/architecture.md)."""

from nco.search.decoders import beam_search, greedy, gumbeldore, nucleus_schedule, sample, sbs
from nco.search.solutions import Best, Solutions

__all__ = [
    "Best",
    "Solutions",
    "beam_search",
    "greedy",
    "gumbeldore",
    "nucleus_schedule",
    "sample",
    "sbs",
]
