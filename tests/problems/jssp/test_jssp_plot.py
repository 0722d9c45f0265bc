"""Gantt charts are written as PNG files for any schedule."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from nco.problems.jssp import JSSPEnv
from nco.problems.jssp.plot import plot_gantt
from nco.testing import check_env_protocol


def test_gantt_png_is_written(tmp_path: Path) -> None:
    """A random complete schedule is drawn to a non-trivial PNG file."""
    env = JSSPEnv(4, 3)
    instances = env.generate(1, torch.Generator().manual_seed(0))
    state, _ = check_env_protocol(env, instances, torch.Generator().manual_seed(0))
    path = tmp_path / "gantt.png"
    plot_gantt(instances.durations[0], instances.machines[0], state.start[0], path, title="demo")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000


def test_gantt_rejects_mismatched_shapes(tmp_path: Path) -> None:
    """Arrays of different shapes raise ValueError."""
    with pytest.raises(ValueError, match="one shape"):
        plot_gantt(np.ones((2, 3)), np.zeros((2, 3)), np.zeros((2, 2)), tmp_path / "x.png")
