"""plot_game draws every played stone, numbered in move order, black first."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest
import torch
from matplotlib.colors import to_rgba

from nco.problems.gomoku import GomokuEnv
from nco.problems.gomoku.plot import plot_game
from nco.testing import check_env_protocol


def test_plot_game_numbers_every_stone_at_its_cell() -> None:
    """One numbered stone per ply of a replayed game, at (col, row), colours alternating."""
    env = GomokuEnv(6)
    instances = env.all_instances().index(torch.tensor([7, 20]))
    _, actions = check_env_protocol(env, instances, torch.Generator().manual_seed(0))
    _, plies = env.replay(instances, actions)
    row = plies[1].tolist()
    played = [p for p in row if p >= 0]
    ax = plot_game(row, 6, title="opening 20")
    labels = {int(t.get_text()): t.get_position() for t in ax.texts}
    assert sorted(labels) == list(range(1, len(played) + 1))
    for number, cell in enumerate(played, start=1):
        assert labels[number] == (cell % 6, cell // 6)
    faces = [p.get_facecolor() for p in ax.patches]
    assert faces[0] == to_rgba("black") and faces[1] == to_rgba("white")
    assert ax.get_title() == "opening 20"
    plt.close(ax.figure)


@pytest.mark.parametrize("plies", [[0, 0], [36], [-2, 3]])
def test_plot_game_rejects_bad_plies(plies: list[int]) -> None:
    """Repeated or off-board cells are refused (-1 is the only allowed padding)."""
    with pytest.raises(ValueError, match="plies"):
        plot_game(plies, 6)
