"""An enumerable toy problem for sampler tests: a tree of depth 3 with 3 actions per node.

Some actions are masked, logits depend on the prefix, and sequences starting with action 1
end after two steps, so episodes differ in length.
"""

from __future__ import annotations

import dataclasses
import itertools

import torch

from nco.env import Batch, Env

DEPTH, ACTIONS = 3, 3


@dataclasses.dataclass(frozen=True)
class ToyInstances(Batch):
    """Instance ids (all instances share the tree)."""

    ids: torch.Tensor  # (N,)


@dataclasses.dataclass(frozen=True)
class ToyState(Batch):
    """Prefix so far."""

    prefix: torch.Tensor  # (B, DEPTH) long, pad -1
    depth: torch.Tensor  # (B,) long


def prefix_code(prefix: torch.Tensor) -> torch.Tensor:
    """A unique integer per prefix (base 4 digits, 0 = empty)."""
    weights = 4 ** torch.arange(prefix.shape[-1])
    return ((prefix + 1) * weights).sum(-1)


def feasible(prefix: tuple[int, ...]) -> list[int]:
    """Feasible actions after `prefix`."""
    if len(prefix) == 1 and prefix[0] == 0:
        return [0, 1]  # action 2 masked below action 0
    if len(prefix) == 2 and prefix[1] == 2:
        return [2]  # forced move
    return [0, 1, 2]


def terminal(prefix: tuple[int, ...]) -> bool:
    """Sequences starting with 1 stop after two actions, others after three."""
    return len(prefix) == (2 if prefix and prefix[0] == 1 else DEPTH)


def all_leaves() -> list[tuple[int, ...]]:
    """Every complete sequence, enumerated."""
    out: list[tuple[int, ...]] = []

    def rec(p: tuple[int, ...]) -> None:
        if terminal(p):
            out.append(p)
            return
        for a in feasible(p):
            rec(p + (a,))

    rec(())
    return out


def leaf_value(prefix: tuple[int, ...]) -> float:
    """Objective of a complete sequence: a fixed scrambled value in [0, 1)."""
    code = sum((a + 1) * 4**i for i, a in enumerate(prefix))
    return ((code * 7919) % 101) / 101.0


def _build_tables() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Feasibility, termination and value per prefix code, so the env is vectorized."""
    size = 4**DEPTH
    mask = torch.zeros(size, ACTIONS, dtype=torch.bool)
    done = torch.zeros(size, dtype=torch.bool)
    value = torch.full((size,), -torch.inf, dtype=torch.float64)
    for d in range(DEPTH + 1):
        for p in itertools.product(range(ACTIONS), repeat=d):
            code = int(prefix_code(torch.tensor(list(p) + [-1] * (DEPTH - d))))
            done[code] = terminal(p)
            if done[code]:
                value[code] = leaf_value(p)
            else:
                mask[code, feasible(p)] = True
    return mask, done, value


_TABLES = _build_tables()


class ToyEnv(Env):
    """The toy tree as an Env."""

    name = "toy"

    def generate(self, num: int, generator: torch.Generator | None = None) -> ToyInstances:
        return ToyInstances(ids=torch.arange(num))

    def reset(self, instances: ToyInstances) -> ToyState:
        b = instances.batch_size
        return ToyState(
            prefix=torch.full((b, DEPTH), -1, dtype=torch.long),
            depth=torch.zeros(b, dtype=torch.long),
        )

    def step(self, state: ToyState, actions: torch.Tensor) -> ToyState:
        if not bool(self.action_mask(state).gather(1, actions.view(-1, 1)).all()):
            raise ValueError("infeasible action")
        prefix = state.prefix.clone()
        prefix[torch.arange(state.batch_size), state.depth] = actions
        return ToyState(prefix=prefix, depth=state.depth + 1)

    def action_mask(self, state: ToyState) -> torch.Tensor:
        return _TABLES[0][prefix_code(state.prefix)]

    def is_done(self, state: ToyState) -> torch.Tensor:
        return _TABLES[1][prefix_code(state.prefix)]

    def objective(self, state: ToyState) -> torch.Tensor:
        return _TABLES[2][prefix_code(state.prefix)]

    def max_steps(self, instances: ToyInstances) -> int:
        return DEPTH


class TablePolicy(torch.nn.Module):
    """Logits looked up per prefix from a fixed random table; counts its calls."""

    def __init__(self, seed: int = 0, scale: float = 1.5) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.table = torch.randn(4**DEPTH, ACTIONS, generator=g, dtype=torch.float64) * scale
        self.rows = 0

    def forward(self, state: ToyState) -> torch.Tensor:
        self.rows += state.batch_size
        return self.table[prefix_code(state.prefix)]

    def leaf_logprob(self, leaf: tuple[int, ...]) -> float:
        """Exact log-probability of a complete sequence under the masked policy."""
        total = 0.0
        for d, a in enumerate(leaf):
            p = leaf[:d]
            ok = feasible(p)
            if len(ok) == 1:
                continue
            code = prefix_code(torch.tensor(list(p) + [-1] * (DEPTH - d)))
            logits = self.table[code][ok]
            total += float(logits[ok.index(a)] - torch.logsumexp(logits, 0))
        return total


def leaf_distribution(policy: TablePolicy) -> dict[tuple[int, ...], float]:
    """Probability of every leaf."""
    import math

    return {leaf: math.exp(policy.leaf_logprob(leaf)) for leaf in all_leaves()}


@dataclasses.dataclass(frozen=True)
class BitState(Batch):
    """Binary choices so far."""

    bits: torch.Tensor  # (B, D) long, pad -1
    depth: torch.Tensor  # (B,) long


class BitEnv(Env):
    """Choose D bits; the objective counts ones, so the all-ones sequence is the unique best."""

    name = "bits"

    def __init__(self, length: int = 6) -> None:
        self.length = length

    def generate(self, num: int, generator: torch.Generator | None = None) -> ToyInstances:
        return ToyInstances(ids=torch.arange(num))

    def reset(self, instances: ToyInstances) -> BitState:
        b = instances.batch_size
        return BitState(
            bits=torch.full((b, self.length), -1, dtype=torch.long),
            depth=torch.zeros(b, dtype=torch.long),
        )

    def step(self, state: BitState, actions: torch.Tensor) -> BitState:
        bits = state.bits.clone()
        bits[torch.arange(state.batch_size), state.depth] = actions
        return BitState(bits=bits, depth=state.depth + 1)

    def action_mask(self, state: BitState) -> torch.Tensor:
        return torch.ones(state.batch_size, 2, dtype=torch.bool)

    def is_done(self, state: BitState) -> torch.Tensor:
        return state.depth == self.length

    def objective(self, state: BitState) -> torch.Tensor:
        return (state.bits == 1).sum(1).to(torch.float64)

    def max_steps(self, instances: ToyInstances) -> int:
        return self.length


class BiasedBitPolicy(torch.nn.Module):
    """Prefers bit 0 with a fixed logit gap, whatever the prefix."""

    def __init__(self, gap: float = 1.0) -> None:
        super().__init__()
        self.gap = gap

    def forward(self, state: BitState) -> torch.Tensor:
        logits = torch.zeros(state.batch_size, 2, dtype=torch.float64)
        logits[:, 0] = self.gap
        return logits


class FlatEnv(Env):
    """A single categorical choice among `num_actions`; objective = action index."""

    name = "flat"

    def __init__(self, num_actions: int = 5) -> None:
        self.num_actions = num_actions

    def generate(self, num: int, generator: torch.Generator | None = None) -> ToyInstances:
        return ToyInstances(ids=torch.arange(num))

    def reset(self, instances: ToyInstances) -> BitState:
        b = instances.batch_size
        return BitState(
            bits=torch.full((b, 1), -1, dtype=torch.long), depth=torch.zeros(b, dtype=torch.long)
        )

    def step(self, state: BitState, actions: torch.Tensor) -> BitState:
        return BitState(bits=actions.view(-1, 1), depth=state.depth + 1)

    def action_mask(self, state: BitState) -> torch.Tensor:
        return torch.ones(state.batch_size, self.num_actions, dtype=torch.bool)

    def is_done(self, state: BitState) -> torch.Tensor:
        return state.depth == 1

    def objective(self, state: BitState) -> torch.Tensor:
        return state.bits[:, 0].to(torch.float64)

    def max_steps(self, instances: ToyInstances) -> int:
        return 1


class FixedLogits(torch.nn.Module):
    """The same logits for every state."""

    def __init__(self, logits: list[float]) -> None:
        super().__init__()
        self.logits = torch.tensor(logits, dtype=torch.float64)

    def forward(self, state: Batch) -> torch.Tensor:
        return self.logits.expand(state.batch_size, -1)
