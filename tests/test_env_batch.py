"""nco.env.Batch: gathering, scattering and concatenating immutable rows."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from nco.env import Batch, Env, cat
from nco.testing import check_env_protocol


@dataclasses.dataclass(frozen=True)
class Pair(Batch):
    """A two-field batch for the tests."""

    label: torch.Tensor  # (B,) long
    point: torch.Tensor  # (B, 2) float64


def pair(labels: list[int]) -> Pair:
    """Rows whose point is (label, -label), so every row is recognisable."""
    label = torch.tensor(labels)
    return Pair(label=label, point=torch.stack([label, -label], 1).double())


def test_index_with_repeats_and_reordering() -> None:
    """index gathers rows in the given order, repeats included, into a new batch."""
    batch = pair([10, 11, 12])
    out = batch.index(torch.tensor([2, 0, 2, 2]))
    assert isinstance(out, Pair)
    assert torch.equal(out.label, torch.tensor([12, 10, 12, 12]))
    assert torch.equal(out.point[:, 1], -out.label.double())
    assert len(out) == out.batch_size == 4


def test_put_replaces_rows_and_leaves_source_unchanged() -> None:
    """put returns a copy with the chosen rows replaced; neither input changes."""
    batch, rows = pair([1, 2, 3, 4]), pair([7, 9])
    out = batch.put(torch.tensor([3, 1]), rows)
    assert torch.equal(out.label, torch.tensor([1, 9, 3, 7]))
    assert torch.equal(out.point[:, 0], torch.tensor([1.0, 9.0, 3.0, 7.0]))
    assert torch.equal(batch.label, torch.tensor([1, 2, 3, 4]))
    assert torch.equal(rows.label, torch.tensor([7, 9]))


def test_cat_concatenates_in_order() -> None:
    """cat stacks batches of one type along the batch dimension."""
    out = cat([pair([1]), pair([2, 3]), pair([4])])
    assert torch.equal(out.label, torch.tensor([1, 2, 3, 4]))
    assert torch.equal(out.point[:, 1], torch.tensor([-1.0, -2.0, -3.0, -4.0]))


def test_cat_of_nothing_raises() -> None:
    """cat needs at least one batch to know the type."""
    with pytest.raises(ValueError, match="at least one batch"):
        cat([])


def test_batch_size_mismatch_raises() -> None:
    """Fields with different leading sizes are rejected at construction."""
    with pytest.raises(ValueError, match="disagree on batch size"):
        Pair(label=torch.zeros(3, dtype=torch.long), point=torch.zeros(2, 2))


def test_batch_is_frozen_and_to_keeps_values() -> None:
    """Fields cannot be reassigned, and to() returns an equal batch on the target device."""
    batch = pair([5, 6])
    with pytest.raises(dataclasses.FrozenInstanceError):
        batch.label = torch.zeros(2)  # type: ignore[misc]
    moved = batch.to("cpu")
    assert moved.device == torch.device("cpu")
    assert torch.equal(moved.label, batch.label) and torch.equal(moved.point, batch.point)


@dataclasses.dataclass(frozen=True)
class Budget(Batch):
    """Countdown instances: how much each row has to spend."""

    amount: torch.Tensor  # (B,) long


@dataclasses.dataclass(frozen=True)
class Spent(Batch):
    """Countdown states: what is left and how many steps were taken."""

    left: torch.Tensor  # (B,) long
    steps: torch.Tensor  # (B,) long


class CountdownEnv(Env):
    """Spend a budget in chunks of 1, 2 or 3 (action a spends a + 1); rows finish at different
    depths, which exercises the not-done-rows path of check_env_protocol."""

    def generate(self, num: int, generator: torch.Generator | None = None) -> Budget:
        return Budget(amount=torch.randint(1, 8, (num,), generator=generator))

    def reset(self, instances: Budget) -> Spent:
        return Spent(left=instances.amount.clone(), steps=torch.zeros_like(instances.amount))

    def step(self, state: Spent, actions: torch.Tensor) -> Spent:
        return Spent(left=state.left - actions - 1, steps=state.steps + 1)

    def action_mask(self, state: Spent) -> torch.Tensor:
        return torch.arange(3) < state.left.view(-1, 1)

    def is_done(self, state: Spent) -> torch.Tensor:
        return state.left == 0

    def objective(self, state: Spent) -> torch.Tensor:
        return -state.steps.double()

    def max_steps(self, instances: Budget) -> int:
        return int(instances.amount.max())


def test_check_env_protocol_steps_only_unfinished_rows() -> None:
    """Rows finishing at different depths are left alone once done: each row's actions spend
    exactly its budget, padded with -1, and its step count equals its number of actions."""
    env = CountdownEnv()
    instances = Budget(amount=torch.tensor([1, 7, 3, 6]))
    state, actions = check_env_protocol(env, instances, torch.Generator().manual_seed(0))
    taken = actions >= 0
    assert torch.equal((actions + 1).clamp_min(0).sum(1), instances.amount)
    assert torch.equal(state.steps, taken.sum(1))
    assert torch.equal(state.left, torch.zeros(4, dtype=torch.long))
    assert bool((taken[:, :-1] | ~taken[:, 1:]).all())  # padding only at the end
    assert len(set(taken.sum(1).tolist())) > 1


def test_check_env_protocol_enforces_max_steps() -> None:
    """A rollout that needs more than max_steps steps is reported."""
    env = CountdownEnv()
    with pytest.raises(AssertionError, match=r"rows \[0\] are not done after 2 steps"):
        check_env_protocol(env, Budget(amount=torch.tensor([7])), max_steps=2)
