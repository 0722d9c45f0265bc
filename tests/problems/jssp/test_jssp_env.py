"""JSSPEnv: hand-computed schedules, the independent checker, masks, errors, training prefixes."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf

from nco.problems.jssp import JSSPEnv, JSSPInstances, make_instances
from nco.problems.jssp.schedule import check_schedule, schedule_to_sequence
from nco.registry import get_problem
from nco.testing import check_env_protocol

CONFIGS = Path(__file__).resolve().parents[3] / "configs" / "problem"

# Job 0: (m0, 3) (m1, 2) (m2, 2); job 1: (m0, 2) (m2, 1) (m1, 4).
TWO_BY_THREE = make_instances([[3, 2, 2], [2, 1, 4]], [[0, 1, 2], [0, 2, 1]])


@pytest.mark.parametrize(
    ("sequence", "start", "makespan"),
    [
        ([0, 1, 0, 1, 0, 1], [[0, 3, 6], [3, 5, 6]], 10.0),
        ([1, 0, 1, 1, 0, 0], [[2, 7, 9], [0, 2, 3]], 11.0),
    ],
)
def test_hand_computed_schedules(sequence: list[int], start: list[list[int]], makespan: float):
    """Stepping a sequence gives the start times and makespan worked out by hand (eq. 31-32)."""
    env = JSSPEnv(2, 3)
    state = env.reset(TWO_BY_THREE)
    for job in sequence:
        assert not bool(env.is_done(state).all())
        state = env.step(state, torch.tensor([job]))
    assert bool(env.is_done(state).all())
    assert state.start[0].tolist() == start
    assert env.objective(state).item() == -makespan
    assert env.cost(env.objective(state)).item() == makespan


def test_random_rollouts_agree_with_checker_and_replay() -> None:
    """Random episodes: the checker accepts every schedule with the env's makespan; replay and
    `schedule` reproduce the stepped start times exactly."""
    env = JSSPEnv(5, 4)
    gen = torch.Generator().manual_seed(1)
    instances = env.generate(6, gen)
    state, actions = check_env_protocol(env, instances, gen)
    assert actions.shape == (6, 20) and bool((actions >= 0).all())
    for row in range(6):
        makespan = check_schedule(
            instances.durations[row].numpy(), instances.machines[row].numpy(), state.start[row]
        )
        assert makespan == -env.objective(state)[row].item()
    assert torch.equal(env.schedule(instances, actions), state.start)
    replayed = env.replay(instances, actions)
    for field in dataclasses.fields(state):
        assert torch.equal(getattr(replayed, field.name), getattr(state, field.name))


def test_schedule_to_sequence_reproduces_env_schedules() -> None:
    """Sorting an env schedule's operations by start time gives a sequence replaying to it."""
    env = JSSPEnv(4, 5)
    gen = torch.Generator().manual_seed(2)
    instances = env.generate(4, gen)
    state, _ = check_env_protocol(env, instances, gen)
    sequences = torch.tensor(np.stack([schedule_to_sequence(s) for s in state.start.numpy()]))
    assert torch.equal(env.schedule(instances, sequences), state.start)


def test_masks_and_done() -> None:
    """Finished jobs are masked, unfinished ones feasible; done only after all J*M steps."""
    env = JSSPEnv(2, 3)
    state = env.reset(TWO_BY_THREE)
    for _ in range(3):
        state = env.step(state, torch.tensor([1]))
    assert env.action_mask(state).tolist() == [[True, False]]
    assert env.is_done(state).tolist() == [False]
    assert env.max_steps(TWO_BY_THREE) == 6


def test_step_does_not_mutate_and_rejects_bad_actions() -> None:
    """`step` leaves its input alone; finished or out-of-range jobs raise ValueError."""
    env = JSSPEnv(2, 3)
    root = env.reset(TWO_BY_THREE)
    state = root
    for _ in range(3):
        state = env.step(state, torch.tensor([0]))
    assert root.next_op.tolist() == [[0, 0]] and bool((root.start == -1).all())
    with pytest.raises(ValueError, match="unfinished job"):
        env.step(state, torch.tensor([0]))
    with pytest.raises(ValueError, match="unfinished job"):
        env.step(state, torch.tensor([2]))
    with pytest.raises(ValueError, match="more than 3 times"):
        env.replay(TWO_BY_THREE, torch.tensor([[0, 0, 0, 0]]))


def test_generate_distribution_and_seeding() -> None:
    """Durations are integers in 1..99, machine orders permutations; same seed, same instances."""
    env = JSSPEnv(7, 5)
    a = env.generate(50, torch.Generator().manual_seed(0))
    b = env.generate(50, torch.Generator().manual_seed(0))
    c = env.generate(50, torch.Generator().manual_seed(1))
    assert torch.equal(a.durations, b.durations) and torch.equal(a.machines, b.machines)
    assert not torch.equal(a.durations, c.durations)
    assert a.durations.dtype == torch.float64 and a.durations.shape == (50, 7, 5)
    assert a.durations.min() == 1 and a.durations.max() == 99
    assert torch.equal(a.durations, a.durations.round())
    assert torch.equal(a.machines.sort(-1).values, torch.arange(5).expand(50, 7, 5))
    make_instances(a.durations, a.machines)  # passes validation


def test_sizes_draw_one_size_per_batch() -> None:
    """With `sizes`, each call draws one of the listed sizes and all of them occur."""
    env = JSSPEnv(sizes=[(3, 2), (4, 5)])
    gen = torch.Generator().manual_seed(0)
    shapes = {tuple(env.generate(2, gen).durations.shape[1:]) for _ in range(20)}
    assert shapes == {(3, 2), (4, 5)}


@pytest.mark.parametrize(
    "kwargs",
    [{"num_jobs": 0}, {"num_machines": -1}, {"sizes": []}, {"sizes": [(3, 2, 1)]}],
)
def test_bad_constructor_arguments(kwargs: dict) -> None:
    """Non-positive sizes and malformed `sizes` raise ValueError."""
    with pytest.raises(ValueError, match="Expected num_jobs"):
        JSSPEnv(**kwargs)


def test_training_batch_is_a_replayed_prefix() -> None:
    """The state is the replay of a prefix of length t in 0..J*M-2 and the target is action t;
    the same generator seed gives the same batch."""
    env = JSSPEnv(3, 2)
    gen = torch.Generator().manual_seed(4)
    instances = env.generate(5, gen)
    _, actions = check_env_protocol(env, instances, gen)
    lengths = set()
    for seed in range(60):
        state, target = env.training_batch(instances, actions, torch.Generator().manual_seed(seed))
        t = int(state.next_op.sum(1)[0])
        assert bool((state.next_op.sum(1) == t).all())
        lengths.add(t)
        assert torch.equal(target, actions[:, t])
        assert torch.equal(state.start, env.replay(instances, actions[:, :t]).start)
        assert bool(env.action_mask(state).gather(1, target.view(-1, 1)).all())
    assert lengths == set(range(5))
    again, target_again = env.training_batch(instances, actions, torch.Generator().manual_seed(7))
    first, target_first = env.training_batch(instances, actions, torch.Generator().manual_seed(7))
    assert torch.equal(again.start, first.start) and torch.equal(target_again, target_first)


def test_training_batch_rejects_incomplete_sequences() -> None:
    """Padded (incomplete) expert sequences raise ValueError."""
    env = JSSPEnv(2, 3)
    with pytest.raises(ValueError, match="complete sequences"):
        env.training_batch(TWO_BY_THREE, torch.tensor([[0, 1, 0, 1, 0, -1]]))


def test_state_indexing_keeps_instances_of_one_size() -> None:
    """`index` with repeats duplicates rows of every field, so beams can share a state."""
    env = JSSPEnv(2, 3)
    state = env.step(env.reset(TWO_BY_THREE), torch.tensor([1]))
    beams = env.index(state, torch.tensor([0, 0, 0]))
    assert beams.batch_size == 3 and isinstance(beams.durations, torch.Tensor)
    stepped = env.step(beams, torch.tensor([0, 1, 1]))
    assert stepped.start[:, :, 0].tolist() == [[2, 0], [-1, 0], [-1, 0]]


@pytest.mark.parametrize(("name", "size"), [("jssp.yaml", (15, 10)), ("jssp_small.yaml", (6, 4))])
def test_problem_configs_instantiate(name: str, size: tuple[int, int]) -> None:
    """The problem configs build a JSSPEnv generating instances of a configured size and name
    a reference solver the JSSP descriptor has."""
    cfg = OmegaConf.create({"problem": OmegaConf.load(CONFIGS / name)})
    assert callable(get_problem("jssp").solver(cfg.problem.reference_solver))
    env = instantiate(cfg.problem.env)
    assert isinstance(env, JSSPEnv) and size in env.sizes
    instances = env.generate(2, torch.Generator().manual_seed(0))
    assert isinstance(instances, JSSPInstances)
    assert tuple(instances.durations.shape[1:]) in env.sizes
