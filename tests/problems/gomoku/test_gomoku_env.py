"""GomokuEnv: rules, the bot's replies inside step, termination, objectives, training batches."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from gomoku_reference import board_from, five_in_row

from nco.problems.gomoku import GomokuEnv, GomokuInstances, GomokuState
from nco.problems.gomoku.bot import expert_move
from nco.problems.gomoku.env import BOTS
from nco.testing import check_env_protocol


def state_from(rows: list[str]) -> GomokuState:
    """A white-to-move state from text rows: 'W' white (+1), 'B' black (-1), '.' empty."""
    board = board_from([r.replace("W", "X").replace("B", "O") for r in rows])
    return GomokuState(
        board=board,
        done=torch.zeros(1, dtype=torch.bool),
        winner=torch.zeros(1, dtype=torch.int8),
    )


def state_instances() -> GomokuInstances:
    """A single centre opening."""
    return GomokuInstances(opening=torch.tensor([40]))


def random_games(env: GomokuEnv, instances: GomokuInstances, seed: int) -> torch.Tensor:
    """White's moves Long[B, T] (pad -1) of complete games with uniformly random white play."""
    return check_env_protocol(env, instances, torch.Generator().manual_seed(seed))[1]


@pytest.mark.parametrize("kwargs", [{"board_size": 4}, {"learn_from": "black"}])
def test_rejects_bad_config(kwargs: dict) -> None:
    """Boards below 5x5 and unknown training targets are refused."""
    with pytest.raises(ValueError, match="GomokuEnv"):
        GomokuEnv(**kwargs)


def test_reset_places_the_opening_and_masks_it() -> None:
    """Black's opening stone is on the board and is the only masked cell."""
    env = GomokuEnv(9)
    state = env.reset(GomokuInstances(opening=torch.tensor([0, 40, 80])))
    flat = state.board.flatten(1)
    assert flat.sum(1).tolist() == [-1, -1, -1]
    assert flat[[0, 1, 2], [0, 40, 80]].tolist() == [-1, -1, -1]
    mask = env.action_mask(state)
    assert mask.sum(1).tolist() == [80, 80, 80]
    assert not mask[1, 40]
    assert not env.is_done(state).any()


@pytest.mark.parametrize("opening", [torch.tensor([-1]), torch.tensor([81]), torch.zeros(1, 1)])
def test_reset_rejects_bad_openings(opening: torch.Tensor) -> None:
    """Openings must be a 1-d tensor of cells on the board."""
    with pytest.raises(ValueError, match="opening"):
        GomokuEnv(9).reset(GomokuInstances(opening=opening.long()))


def test_generate_is_seeded_and_all_instances_covers_the_board() -> None:
    """Same seed, same openings; all_instances lists every cell once."""
    env = GomokuEnv(7)
    a = env.generate(50, torch.Generator().manual_seed(3)).opening
    b = env.generate(50, torch.Generator().manual_seed(3)).opening
    assert torch.equal(a, b)
    assert int(a.min()) >= 0 and int(a.max()) < 49
    assert env.all_instances().opening.tolist() == list(range(49))
    assert env.max_steps(env.all_instances()) == math.ceil(49 / 2)
    assert env.num_actions(env.all_instances()) == 49


def test_step_plays_white_then_the_bot() -> None:
    """One step adds white's stone and black's reply (the bot's move), leaving the input alone."""
    env = GomokuEnv(9)
    state = env.reset(GomokuInstances(opening=torch.tensor([40])))
    before = state.board.clone()
    new = env.step(state, torch.tensor([41]))
    assert torch.equal(state.board, before)
    assert int(new.board[0, 4, 5]) == 1
    black_view = -before.clone()
    black_view[0, 4, 5] = -1
    reply = int(expert_move(black_view)[0])
    assert int(new.board.flatten()[reply]) == -1
    assert int((new.board != 0).sum()) == 3


@pytest.mark.parametrize("action", [40, -1, 81])
def test_step_rejects_occupied_or_off_board_cells(action: int) -> None:
    """White may only play an empty cell on the board."""
    env = GomokuEnv(9)
    with pytest.raises(ValueError, match="empty cells"):
        env.step(env.reset(state_instances()), torch.tensor([action]))


def test_step_rejects_wrong_action_shape() -> None:
    """One action per row."""
    env = GomokuEnv(9)
    with pytest.raises(ValueError, match="shape"):
        env.step(env.reset(state_instances()), torch.tensor([1, 2]))


def test_white_five_ends_the_game_before_black_replies() -> None:
    """White completing five wins at once (+1); black does not move afterwards."""
    env = GomokuEnv(9)
    rows = ["WWWW.....", "BBB......", "........B", *["." * 9] * 6]
    state = state_from(rows)
    new = env.step(state, torch.tensor([4]))
    assert new.done.tolist() == [True]
    assert env.objective(new).tolist() == [1.0]
    assert int((new.board != 0).sum()) == int((state.board != 0).sum()) + 1
    assert not env.action_mask(new).any()


def test_overline_wins() -> None:
    """Six in a row (filling the gap of WW.WWW) wins for white."""
    env = GomokuEnv(9)
    rows = ["." * 9] * 3 + [".WW.WWW..", "BBBB.....", "........B", *["." * 9] * 3]
    new = env.step(state_from(rows), torch.tensor([3 * 9 + 3]))
    assert env.objective(new).tolist() == [1.0]


def test_black_wins_when_white_does_not_block() -> None:
    """The bot completes its four; the game ends with -1."""
    env = GomokuEnv(9)
    rows = ["BBBB.....", "WWW......", *["." * 9] * 7]
    new = env.step(state_from(rows), torch.tensor([8 * 9]))
    assert int(new.board[0, 0, 4]) == -1
    assert new.done.tolist() == [True]
    assert env.objective(new).tolist() == [-1.0]


def test_full_board_without_five_is_a_draw() -> None:
    """A 5x5 game that fills the board with no five scores 0."""
    pattern = ["BWBWB", "BWBWB", "WBWBW", "WBWBW", "BWBWB"]
    full = board_from([r.replace("W", "X").replace("B", "O") for r in pattern])[0].numpy()
    assert not five_in_row(full) and not five_in_row(-full)
    rows = [list(r) for r in pattern]
    rows[0][1] = "."  # a white cell, white plays it
    rows[4][4] = "."  # a black cell, the bot's only choice
    env = GomokuEnv(5)
    new = env.step(state_from(["".join(r) for r in rows]), torch.tensor([1]))
    assert new.done.tolist() == [True]
    assert env.objective(new).tolist() == [0.0]
    np.testing.assert_array_equal(new.board[0].numpy(), full)


def test_done_rows_ignore_actions() -> None:
    """Stepping a finished game (any action) changes nothing."""
    env = GomokuEnv(9)
    done = env.step(
        state_from(["WWWW.....", "BBB......", "........B", *["." * 9] * 6]), torch.tensor([4])
    )
    again = env.step(done, torch.tensor([-1]))
    assert torch.equal(again.board, done.board) and again.done.tolist() == [True]
    assert env.objective(again).tolist() == [1.0]


@pytest.mark.parametrize("size", [5, 6, 9])
def test_random_games_from_every_opening_terminate(size: int) -> None:
    """Random white play from all openings passes the protocol check; games end at different
    depths, and objectives are game results."""
    env = GomokuEnv(size)
    instances = env.all_instances()
    state, actions = check_env_protocol(env, instances, torch.Generator().manual_seed(size))
    assert bool(env.is_done(state).all())
    assert set(env.objective(state).tolist()) <= {-1.0, 0.0, 1.0}
    lengths = (actions >= 0).sum(1)
    assert int(lengths.min()) >= 1 and int(lengths.max()) <= env.max_steps(instances)
    if size == 9:
        assert len(set(lengths.tolist())) > 1
        assert env.objective(state).mean() < -0.9  # the bot beats random play


def test_replay_reproduces_the_games() -> None:
    """Replaying white's moves gives the same final boards and results; plies alternate."""
    env = GomokuEnv(7)
    instances = env.all_instances()
    state, actions = check_env_protocol(env, instances, torch.Generator().manual_seed(0))
    final, plies = env.replay(instances, actions)
    assert torch.equal(final.board, state.board) and torch.equal(final.winner, state.winner)
    assert torch.equal(plies[:, 1::2], actions)
    stones = (plies >= 0).sum(1)
    assert torch.equal(stones, (state.board != 0).flatten(1).sum(1))


def test_replay_rejects_incomplete_or_overlong_games() -> None:
    """Actions must end exactly when the game ends."""
    env = GomokuEnv(7)
    instances = env.all_instances()
    _, actions = check_env_protocol(env, instances, torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="complete games"):
        env.replay(instances, actions[:, :1])
    longer = torch.cat([actions, torch.zeros(49, 1, dtype=torch.long)], dim=1)
    with pytest.raises(ValueError, match="complete games"):
        env.replay(instances, longer)


def test_training_batch_white_targets() -> None:
    """learn_from='white': the board before white's j-th move (found by replay) and that move."""
    env = GomokuEnv(7, learn_from="white")
    instances = env.all_instances()
    actions = random_games(env, instances, seed=1)
    states, targets = env.training_batch(instances, actions, torch.Generator().manual_seed(0))
    stones = (states.board != 0).flatten(1).sum(1)
    j = (stones - 1) // 2
    assert torch.equal(stones, 2 * j + 1)  # white to move
    assert torch.equal(targets, actions[torch.arange(49), j])
    for row in range(0, 49, 6):
        state = env.reset(instances.index(torch.tensor([row])))
        for k in range(int(j[row])):
            state = env.step(state, actions[row, k : k + 1])
        assert torch.equal(state.board[0], states.board[row])
    assert bool(env.action_mask(states).gather(1, targets[:, None]).all())


def test_training_batch_winner_targets_black_replies() -> None:
    """learn_from='winner': in games black won, the board is black's view before its reply and
    the target is the bot's reply there; the batch is reproducible from the seed."""
    env = GomokuEnv(7)
    instances = env.all_instances()
    actions = random_games(env, instances, seed=1)
    final, _ = env.replay(instances, actions)
    black = final.winner == -1
    assert bool(black.any())
    states, targets = env.training_batch(instances, actions, torch.Generator().manual_seed(0))
    stones = (states.board != 0).flatten(1).sum(1)
    assert bool((stones[black] % 2 == 0).all()) and bool((stones[~black] % 2 == 1).all())
    assert torch.equal(BOTS[env.bot](states.board[black]), targets[black])
    again = env.training_batch(instances, actions, torch.Generator().manual_seed(0))
    assert torch.equal(again[0].board, states.board) and torch.equal(again[1], targets)


def test_training_batch_replay_cache_matches_fresh_replays(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cached replays give the same batches as a fresh env, duplicates are replayed once, the
    cache stays bounded, and an incomplete game is still rejected after its prefix was seen."""
    env = GomokuEnv(7)
    instances = env.all_instances()
    actions = random_games(env, instances, seed=2)
    rows = torch.tensor([5, 3, 5, 48, 0, 3])
    calls: list[int] = []
    replay = env.replay
    monkeypatch.setattr(env, "replay", lambda i, a: calls.append(a.shape[0]) or replay(i, a))
    env.training_batch(instances.index(rows), actions[rows], torch.Generator().manual_seed(1))
    assert calls == [4]  # rows 5 and 3 repeat
    warm = env.training_batch(instances, actions, torch.Generator().manual_seed(0))
    assert calls == [4, 45]
    fresh = GomokuEnv(7).training_batch(instances, actions, torch.Generator().manual_seed(0))
    assert torch.equal(warm[0].board, fresh[0].board) and torch.equal(warm[1], fresh[1])
    monkeypatch.setattr("nco.problems.gomoku.env.REPLAY_CACHE", 10)
    env.training_batch(instances, actions, torch.Generator().manual_seed(0))
    assert len(env._replays) == 10
    cut = actions.clone()
    cut[:, 1:] = -1
    with pytest.raises(ValueError, match="complete games"):
        env.training_batch(instances, cut, torch.Generator().manual_seed(0))


def test_bot_option_picks_blacks_rules() -> None:
    """bot='v1' (default, the paper's) and bot='rules' answer with their own move functions;
    an unknown bot is refused."""
    from nco.problems.gomoku import bot, bot_v1

    for name, move in (("v1", bot_v1.expert_move), ("rules", bot.expert_move)):
        env = GomokuEnv(7, bot=name)
        openings = env.all_instances()
        instances = openings.index(torch.nonzero(openings.opening != 24).squeeze(1))
        state = env.reset(instances)
        after = env.step(state, torch.full((state.batch_size,), 24))
        black = ((after.board == -1) & (state.board != -1)).flatten(1).float().argmax(1)
        view = -state.board.clone()
        view.view(state.batch_size, -1)[:, 24] = -1  # white's stone, seen from black's side
        assert torch.equal(black, move(view))
    assert not torch.equal(bot_v1.expert_move(view), bot.expert_move(view))  # they do differ
    with pytest.raises(ValueError, match="bot"):
        GomokuEnv(7, bot="alphazero")
