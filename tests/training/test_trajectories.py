"""Teacher-forced imitation of whole trajectories (nco.training.trajectories)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from conftest import compose_train

from nco.models.am import AMTSPPolicy
from nco.models.bq import BQPolicy
from nco.models.pomo import POMOCVRPPolicy, POMOTSPPolicy
from nco.problems.cvrp.am_env import AMCVRPEnv
from nco.problems.tsp.am_env import AMTSPEnv
from nco.training import SelfImprovementModule
from nco.training.runner import run
from nco.training.trajectories import (
    TrajectoryBatches,
    augment_setting,
    check_imitation,
    trajectory_loss,
)


def random_tours(b: int, n: int, gen: torch.Generator) -> torch.Tensor:
    return torch.stack([torch.randperm(n, generator=gen) for _ in range(b)])


@pytest.mark.parametrize(
    "make",
    [
        lambda: POMOTSPPolicy(embed_dim=16, num_heads=2, head_dim=8, num_layers=1, ff_hidden=32),
        lambda: AMTSPPolicy(embed_dim=16, num_heads=2, num_layers=1, ff_hidden=32),
    ],
)
def test_loss_equals_the_mean_of_the_per_prefix_losses(make) -> None:
    """With equal lengths, the teacher-forced loss is the mean over prefix lengths t of the
    sub-trajectory loss (`SelfImprovementModule.loss`, which re-encodes per state) at t; the
    gradients agree too."""
    torch.manual_seed(0)
    env, policy = AMTSPEnv(7), make().eval()
    gen = torch.Generator().manual_seed(1)
    instances = env.generate(3, gen)
    actions = random_tours(3, 7, gen)
    module = SelfImprovementModule(policy, env)
    per_prefix = []
    state = env.reset(instances)
    for t in range(7):
        per_prefix.append(module.loss(state, actions[:, t]))
        state = env.step(state, actions[:, t])
    old = torch.stack(per_prefix).mean()
    new = trajectory_loss(policy, env, instances, actions)
    torch.testing.assert_close(new, old, rtol=1e-5, atol=1e-6)
    grad_old = torch.autograd.grad(old, list(policy.parameters()), allow_unused=True)
    grad_new = torch.autograd.grad(new, list(policy.parameters()), allow_unused=True)
    for a, b in zip(grad_old, grad_new, strict=True):
        if a is None:
            assert b is None
        else:
            torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-6)


def test_padded_trajectories_average_over_their_own_steps() -> None:
    """CVRP trajectories of different lengths (pad -1): the loss is the sum of every real
    step's cross-entropy, computed by the uncached `policy(state)` row by row, over their count."""
    torch.manual_seed(0)
    env = AMCVRPEnv(num_customers=10)
    policy = POMOCVRPPolicy(embed_dim=16, num_heads=2, head_dim=8, num_layers=1, ff_hidden=32)
    gen = torch.Generator().manual_seed(3)
    instances = env.generate(2, gen)
    # greedy-feasible rollouts with random customer order: lengths differ by depot visits
    rows = []
    for i in range(2):
        state = env.reset(instances.index(torch.tensor([i])))
        seq = []
        while not bool(env.is_done(state)):
            feasible = env.action_mask(state)[0].nonzero().squeeze(1)
            customers = feasible[feasible > 0]
            pick = customers if customers.numel() else feasible
            a = pick[torch.randint(pick.numel(), (1,), generator=gen)]
            seq.append(int(a))
            state = env.step(state, a)
        rows.append(seq)
    assert len(rows[0]) != len(rows[1])
    width = max(map(len, rows))
    actions = torch.tensor([r + [-1] * (width - len(r)) for r in rows])
    total, count = 0.0, 0
    for i, seq in enumerate(rows):
        state = env.reset(instances.index(torch.tensor([i])))
        for a in seq:
            logits = policy(state).float().masked_fill(~env.action_mask(state), float("-inf"))
            total = total + F.cross_entropy(logits, torch.tensor([a]), reduction="sum")
            count += 1
            state = env.step(state, torch.tensor([a]))
    expected = total / count
    torch.testing.assert_close(trajectory_loss(policy, env, instances, actions), expected)


def test_batches_apply_solution_preserving_symmetries() -> None:
    """Each drawn instance is one of the eight symmetries of the buffer instance whose tour it
    carries, and that tour keeps its length; without `augment` the instances are as stored."""
    env = AMTSPEnv(6)
    gen = torch.Generator().manual_seed(0)
    instances = env.generate(4, gen)
    actions = random_tours(4, 6, gen)

    def tour_length(coords: torch.Tensor, tour: torch.Tensor) -> torch.Tensor:
        return (coords[tour] - coords[tour.roll(-1)]).norm(dim=-1).sum()

    codes = []
    for augment in (True, False):
        for drawn, acts in TrajectoryBatches(env, [(instances, actions)], 2, 5, 7, augment):
            for coords, tour in zip(drawn.coords, acts, strict=True):
                i = int((actions == tour).all(1).nonzero())
                images = env.augment(instances.index(torch.full((8,), i)), torch.arange(8))
                match = [k for k in range(8) if torch.equal(images.coords[k], coords)]
                assert match, "not a symmetry of the stored instance"
                torch.testing.assert_close(
                    tour_length(coords, tour), tour_length(instances.coords[i], tour)
                )
                codes.append((augment, match[0]))
    assert {k for aug, k in codes if aug} != {0}
    assert {k for aug, k in codes if not aug} == {0}
    rotations = [0, 3, 5, 6]
    drawn = TrajectoryBatches(env, [(instances, actions)], 4, 8, 7, rotations)
    seen = set()
    for batch, acts in drawn:
        for coords, tour in zip(batch.coords, acts, strict=True):
            i = int((actions == tour).all(1).nonzero())
            images = env.augment(instances.index(torch.full((8,), i)), torch.arange(8))
            seen |= {k for k in range(8) if torch.equal(images.coords[k], coords)}
    assert seen and seen <= set(rotations)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="imitation in"):
        check_imitation("prefixes")
    bq = BQPolicy(dim=16, layers=1, heads=2, ff_dim=32)
    with pytest.raises(ValueError, match="needs a policy with encode"):
        check_imitation("trajectories", bq)
    env = AMTSPEnv(5)
    with pytest.raises(ValueError, match="list of codes in 0..7"):
        TrajectoryBatches(env, [], 1, 1, 0, [0, 8])
    with pytest.raises(ValueError, match="expected augment"):
        augment_setting("rotations")
    assert augment_setting([0, 3]) == [0, 3] and augment_setting(False) is False
    with pytest.raises(ValueError, match="expected actions Long"):
        trajectory_loss(POMOTSPPolicy(16, 2, 8, 1, 32), env, env.generate(2), torch.zeros(3, 5))


def test_a_tiny_epoch_trains_on_whole_trajectories(tmp_path: Path) -> None:
    """nco-train with training.imitation=trajectories: SI on TSP8 with a tiny POMO runs two
    epochs and logs a finite loss."""
    cfg = compose_train(
        [
            "problem=tsp_am",
            "model=pomo_tsp",
            "model.embed_dim=16",
            "model.num_heads=2",
            "model.num_layers=1",
            "model.ff_hidden=32",
            "problem.num_nodes=8",
            "training.imitation=trajectories",
            "training.batch_size=4",
            "training.augment=[0,3,5,6]",
        ],
        tmp_path / "run",
    )
    result = run(cfg)
    assert Path(result["best_checkpoint"]).is_file()
    rows = list(csv.DictReader(open(next((tmp_path / "run").rglob("metrics.csv")))))
    losses = [float(r["train/loss_step"]) for r in rows if r.get("train/loss_step")]
    assert len(losses) == 6 and all(0 < x < 10 for x in losses)
