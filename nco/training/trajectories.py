"""Teacher-forced imitation of whole trajectories, for policies with a cached encoding.

The default imitation (`SubTrajectoryBatches` -> `env.training_batch` -> `policy(states)`)
draws one random prefix per trajectory and calls the policy on it, so a light-decoder policy
(AM, POMO) re-encodes the whole instance for every sub-trajectory it learns from. Here each
instance is encoded once (`policy.encode`), the env is stepped along the expert's actions, and
the decoder (`policy.decode(states, cache, rows)`) scores every step; the loss is the
cross-entropy over feasible actions, averaged over every step of every trajectory. With
trajectories of equal length this is the mean of the per-prefix losses of the default way over
all prefix lengths (tests/training/test_trajectories.py checks it), at one encoder pass per
trajectory instead of one per prefix.

Selected by `training.imitation: trajectories`; `training.batch_size` then counts whole
trajectories per optimizer step, and `training.augment` applies a uniformly random
solution-preserving symmetry per trajectory (`env.augment(instances, code)`): true draws among
all of the env's `num_augmentations()` codes, a list among those codes only, false none.
A policy may have a convention that a symmetry breaks while keeping the cost: the imported POMO
TSP100 traverses its tours in one direction, so the mirror images (codes 1, 2, 4, 7 of the
unit square's eight) show it its own tours backwards (docs/light_si.md); [0, 3, 5, 6], the
rotations, keep the direction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from nco.env import Batch, Env
from nco.policy import HasCache
from nco.search.policy_eval import has_cache
from nco.training.batches import BufferBatches

IMITATIONS = ("subtrajectories", "trajectories")


def check_imitation(imitation: str, policy: nn.Module | None = None) -> None:
    """Refuse an unknown `training.imitation`, or `trajectories` for a policy without
    the cached-encoding path (`encode` / `decode`)."""
    if imitation not in IMITATIONS:
        raise ValueError(f"training config: expected imitation in {IMITATIONS}, got {imitation!r}.")
    if imitation == "trajectories" and policy is not None and not has_cache(policy):
        raise ValueError(
            "training config: imitation 'trajectories' needs a policy with encode(roots) and "
            f"decode(states, cache, rows) (AM, POMO); {type(policy).__name__} has none."
        )


def augment_setting(value: Any) -> bool | list[int]:
    """`training.augment` as TrajectoryBatches takes it: a bool, or a list of symmetry codes
    (from a config list)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, Iterable) and not isinstance(value, str):
        return [int(c) for c in value]
    raise ValueError(f"training config: expected augment true, false or a list, got {value!r}.")


def imitation_cross_entropy(
    logits: torch.Tensor, targets: torch.Tensor, reduction: str = "mean"
) -> torch.Tensor:
    """Cross-entropy of masked `logits` (L, A) at the expert's `targets` Long[L]; ValueError
    where a target is masked, whose loss would be infinite and turn the weights to NaN."""
    masked = torch.isneginf(logits.detach().gather(1, targets.view(-1, 1))).squeeze(1)
    if bool(masked.any()):
        raise ValueError(
            f"imitation: {int(masked.sum())} of {targets.numel()} expert actions are masked by "
            "the policy or the env (logit -inf), so their loss is infinite. The expert data "
            "and the mask disagree: an action the solver took is infeasible here, e.g. a "
            "policy-side mask stricter than the env's (the AM CVRP's float32 capacity test: "
            "set model.float32_capacity=false to train on exact solver routes)."
        )
    return F.cross_entropy(logits, targets, reduction=reduction)


def trajectory_loss(
    policy: HasCache, env: Env, instances: Batch, actions: torch.Tensor
) -> torch.Tensor:
    """Mean next-action cross-entropy over every step of the expert trajectories.

    `actions` Long[B, T] are complete solutions of `instances`, padded with -1 after their
    end (pads only at the end of a row). Each instance is encoded once; steps with a single
    feasible action count, with loss 0, as they do in the sub-trajectory way.
    """
    if actions.dim() != 2 or actions.shape[0] != instances.batch_size:
        raise ValueError(
            f"trajectory_loss: expected actions Long[{instances.batch_size}, T], "
            f"got shape {tuple(actions.shape)}."
        )
    state = env.reset(instances)
    cache = policy.encode(state)
    rows = torch.arange(instances.batch_size, device=actions.device)
    total = torch.zeros((), device=actions.device)
    count = 0
    for t in range(actions.shape[1]):
        live = actions[rows, t] >= 0
        if not bool(live.all()):
            keep = live.nonzero().squeeze(1)
            if keep.numel() == 0:
                break
            state, rows = env.index(state, keep), rows[keep]
        target = actions[rows, t]
        logits = policy.decode(state, cache, rows).float()
        logits = logits.masked_fill(~env.action_mask(state), float("-inf"))
        total = total + imitation_cross_entropy(logits, target, reduction="sum")
        count += rows.numel()
        with torch.no_grad():
            state = env.step(state, target)
    if count == 0:
        raise ValueError("trajectory_loss: the trajectories have no steps.")
    return total / count


class TrajectoryBatches(BufferBatches):
    """`num_batches` batches (instances, actions) of `batch_size` whole trajectories drawn
    from the buffer's `groups` (`BufferBatches`: one instance shape each, chosen in proportion
    to its size), each instance under a random symmetry code: among all of the env's with
    `augment` true, among the codes listed in `augment`, none with false."""

    def __init__(
        self,
        env: Env,
        groups: list[tuple[Batch, torch.Tensor]],
        num_batches: int,
        batch_size: int,
        seed: int,
        augment: bool | Sequence[int] = True,
    ) -> None:
        super().__init__(env, groups, num_batches, batch_size, seed)
        count = getattr(env, "num_augmentations", None)
        available = int(count()) if callable(count) else 1
        if isinstance(augment, bool):
            codes = list(range(available)) if augment else [0]
        else:
            codes = [int(c) for c in augment]
            if not codes or any(not 0 <= c < available for c in codes):
                raise ValueError(
                    f"training config: expected augment true, false or a list of codes in "
                    f"0..{available - 1} ({type(env).__name__}), got {list(augment)}."
                )
        self.codes = torch.tensor(codes)

    def batch(
        self, instances: Batch, actions: torch.Tensor, gen: torch.Generator
    ) -> tuple[Batch, torch.Tensor]:
        if bool((self.codes != 0).any()):
            pick = torch.randint(len(self.codes), (self.batch_size,), generator=gen)
            instances = self.env.augment(instances, self.codes[pick])
        return instances, actions
