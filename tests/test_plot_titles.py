"""Plots wrap a long title (nco-solve's names the checkpoint and every search parameter) inside
the image instead of cutting it off at both edges."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from nco.problems.cvrp.plot import plot_routes
from nco.problems.jssp.plot import plot_gantt
from nco.problems.tsp.plot import plot_tour

TITLE = (
    "my_instance: best.pt gumbeldore(beam_width=32, rounds=4, sigma=0.05, p_min=0.8, "
    "update=global, top_p=None, baseline=None, advantage=sum), cost 1234.5"
)
COORDS = np.random.default_rng(0).random((6, 2))
PLOTS: dict[str, Callable[[Path], None]] = {
    "tsp": lambda p: plot_tour(COORDS, [0, 2, 4, 1, 3, 5], p, title=TITLE),
    "cvrp": lambda p: plot_routes(COORDS[0], COORDS[1:], [[1, 2], [3, 4, 5]], p, title=TITLE),
    "jssp": lambda p: plot_gantt(
        np.array([[3, 2], [1, 4]]), np.array([[0, 1], [1, 0]]), np.array([[0, 3], [0, 5]]), p, TITLE
    ),
}


@pytest.mark.parametrize("name", PLOTS)
def test_long_title_stays_inside_the_image(name: str, tmp_path: Path) -> None:
    """The outermost pixel columns of the title's band are background, so no character of the
    title was clipped at the left or right edge."""
    path = tmp_path / "plot.png"
    PLOTS[name](path)
    image = imread(path)[..., :3]
    band = image[: image.shape[0] // 6]  # the title is drawn above the axes
    edges = np.concatenate([band[:, :3], band[:, -3:]], axis=1)
    assert edges.min() > 0.9, "title text reaches the image's edge"
