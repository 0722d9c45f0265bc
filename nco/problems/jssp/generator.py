"""Random job shop instances in the style of Taillard (1993): Gumbeldore's training data."""

from __future__ import annotations

import torch

from nco.problems.jssp.types import JSSPInstances


def generate(
    num: int, sizes: list[tuple[int, int]], generator: torch.Generator | None = None
) -> JSSPInstances:
    """`num` instances of one (jobs, machines) size drawn uniformly from `sizes`: durations
    uniform in 1..99, each job's machine order a uniform permutation."""
    jobs, machines = sizes[0]
    if len(sizes) > 1:
        pick = int(torch.randint(len(sizes), (1,), generator=generator))
        jobs, machines = sizes[pick]
    durations = torch.randint(1, 100, (num, jobs, machines), generator=generator)
    order = torch.rand(num, jobs, machines, generator=generator).argsort(dim=-1)
    return JSSPInstances(durations=durations.to(torch.float64), machines=order)
