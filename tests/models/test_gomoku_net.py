"""GomokuNet: one logit per cell from the mover's view, trainable, batch-independent in eval."""

from __future__ import annotations

from pathlib import Path

import hydra.utils
import pytest
import torch
from omegaconf import OmegaConf

from models.gomoku_net import GomokuNet
from nco.search import greedy
from problems.gomoku import GomokuEnv, GomokuState

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def random_states(num: int, size: int, seed: int) -> GomokuState:
    """Boards with a random third of the cells taken by either player."""
    gen = torch.Generator().manual_seed(seed)
    board = torch.randint(-1, 2, (num, size, size), generator=gen).to(torch.int8)
    board[torch.rand(num, size, size, generator=gen) < 0.66] = 0
    return GomokuState(
        board=board,
        done=torch.zeros(num, dtype=torch.bool),
        winner=torch.zeros(num, dtype=torch.int8),
    )


def test_one_logit_per_cell_and_perspective_matters() -> None:
    """Logits are Float[B, N*N]; swapping the mover's and the opponent's stones changes them."""
    torch.manual_seed(0)
    net = GomokuNet(board_size=7, channels=8).eval()
    states = random_states(5, 7, seed=0)
    logits = net(states)
    assert logits.shape == (5, 49) and logits.dtype == torch.float32
    swapped = GomokuState(board=-states.board, done=states.done, winner=states.winner)
    assert not torch.allclose(net(swapped), logits)


def test_eval_outputs_do_not_depend_on_the_batch() -> None:
    """In eval mode a row's logits are the same alone, in a batch, or repeated."""
    torch.manual_seed(0)
    net = GomokuNet(board_size=7, channels=8).eval()
    states = random_states(6, 7, seed=1)
    full = net(states)
    alone = net(states.index(torch.tensor([3])))
    repeated = net(states.index(torch.tensor([3, 3, 0])))
    torch.testing.assert_close(alone[0], full[3])
    torch.testing.assert_close(repeated[1], full[3])
    torch.testing.assert_close(repeated[2], full[0])


def test_fits_a_fixed_target_in_a_few_steps() -> None:
    """Adam fits one target cell per board for 8 boards: loss falls and argmax hits the targets."""
    torch.manual_seed(0)
    net = GomokuNet(board_size=7, channels=16)
    states = random_states(8, 7, seed=2)
    empty = (states.board == 0).flatten(1)
    targets = torch.multinomial(empty.float(), 1, generator=torch.Generator().manual_seed(0))
    targets = targets.squeeze(1)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    losses = []
    for _ in range(60):
        loss = torch.nn.functional.cross_entropy(net(states), targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0]
    net.eval()
    assert torch.equal(net(states).argmax(1), targets)


@pytest.mark.parametrize(
    "kwargs",
    [{"board_size": 4}, {"channels": 0}, {"blocks": -1}, {"head_channels": 0}],
)
def test_rejects_bad_config(kwargs: dict) -> None:
    """Sizes below their minimum are refused at construction."""
    with pytest.raises(ValueError, match="GomokuNet"):
        GomokuNet(**kwargs)


def test_rejects_boards_of_another_size() -> None:
    """A 9x9 net refuses 7x7 boards."""
    with pytest.raises(ValueError, match="9x9"):
        GomokuNet(board_size=9)(random_states(2, 7, seed=0))


@pytest.mark.parametrize("name,channels", [("gomoku_net.yaml", 32), ("gomoku_net_tiny.yaml", 8)])
def test_hydra_configs_instantiate_with_the_problem(name: str, channels: int) -> None:
    """The model configs build a net whose board size follows problem.board_size (9 alone)."""
    alone = hydra.utils.instantiate(OmegaConf.load(CONFIGS / "model" / name))
    assert isinstance(alone, GomokuNet) and alone.board_size == 9
    assert alone.stem[0][0].out_channels == channels
    cfg = OmegaConf.create(
        {"problem": OmegaConf.load(CONFIGS / "problem" / "gomoku.yaml"), "model": {}}
    )
    cfg.problem.board_size = 7
    cfg.model = OmegaConf.load(CONFIGS / "model" / name)
    env = hydra.utils.instantiate(cfg.problem.env)
    net = hydra.utils.instantiate(cfg.model)
    assert isinstance(env, GomokuEnv) and env.board_size == 7 and net.board_size == 7


def test_greedy_games_replay_to_the_same_results() -> None:
    """Greedy decoding over all openings of 7x7 plays complete games whose replay agrees."""
    torch.manual_seed(0)
    env = GomokuEnv(7)
    net = GomokuNet(board_size=7, channels=8).eval()
    instances = env.all_openings()
    with torch.no_grad():
        best = greedy(net, env, instances).best()
    final, _ = env.replay(instances, best.actions)
    torch.testing.assert_close(env.objective(final), best.objective)
