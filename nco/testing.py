"""Problem-agnostic checks of the constructive-step protocol, for every problem's tests.

`check_env_protocol` rolls out uniformly random feasible actions and checks, at every depth,
that `step` leaves its input unchanged, that `index` gathers rows (repeats included), and that
each unfinished row has a feasible action. Failures raise AssertionError with a message.
"""

from __future__ import annotations

import dataclasses

import torch

from nco.env import Batch, Env


def check_env_protocol(
    env: Env,
    instances: Batch,
    generator: torch.Generator | None = None,
    max_steps: int | None = None,
) -> tuple[Batch, torch.Tensor]:
    """Check `env` on `instances` by one random rollout; return the final state and actions.

    Each step draws uniformly among the feasible actions of the rows not yet done, steps only
    those rows and puts them back. Every row must finish within `max_steps` (default
    `env.max_steps(instances)`) with a finite objective. Actions come back as Long[B, T], pad -1.
    """
    limit = env.max_steps(instances) if max_steps is None else max_steps
    state = env.reset(instances)
    b = instances.batch_size
    _expect(state.batch_size == b, f"reset gave {state.batch_size} rows for {b} instances")
    actions = torch.full((b, limit), -1, dtype=torch.long, device=state.device)
    for depth in range(limit + 1):
        _check_index(env, state)
        done = _bool_vector(env.is_done(state), b, "is_done")
        if bool(done.all()):
            break
        _expect(depth < limit, f"rows {_rows(~done)} are not done after {limit} steps")
        active = (~done).nonzero().squeeze(1)
        rows = env.index(state, active)
        mask = env.action_mask(rows)
        _expect(
            mask.dtype == torch.bool and mask.dim() == 2 and mask.shape[0] == len(active),
            f"action_mask gave {tuple(mask.shape)} {mask.dtype}, expected Bool[{len(active)}, A]",
        )
        _expect(
            bool(mask.any(1).all()),
            f"rows {_rows(~mask.any(1), active)} are not done but have no feasible action",
        )
        chosen = torch.multinomial(mask.double().cpu(), 1, generator=generator).squeeze(1)
        chosen = chosen.to(mask.device)
        before = _snapshot(rows)
        stepped = env.step(rows, chosen)
        _expect(_same_batch(rows, before), f"step mutated its input state at depth {depth}")
        _expect(
            stepped.batch_size == len(active),
            f"step gave {stepped.batch_size} rows for {len(active)} actions",
        )
        actions[active, depth] = chosen
        state = stepped if len(active) == b else state.put(active, stepped)
    objective = env.objective(state)
    _expect(
        objective.shape == (b,), f"objective gave shape {tuple(objective.shape)}, expected ({b},)"
    )
    _expect(
        bool(torch.isfinite(objective).all()),
        f"rows {_rows(~torch.isfinite(objective))} finished with a non-finite objective",
    )
    return state, actions


def random_steps(env: Env, state: Batch, steps: int, generator: torch.Generator) -> Batch:
    """`state` after `steps` uniformly random feasible actions of every row (a mid-episode state
    for model tests and benchmarks); every row must still be unfinished at each step."""
    for _ in range(steps):
        mask = env.action_mask(state)
        state = env.step(state, torch.multinomial(mask.double(), 1, generator=generator).squeeze(1))
    return state


def _check_index(env: Env, state: Batch) -> None:
    """`env.index` with repeated and reordered indices gives exactly the source rows."""
    b = state.batch_size
    idx = torch.cat([torch.arange(b - 1, -1, -1), torch.zeros(2, dtype=torch.long)])
    idx = idx.to(state.device)
    out = env.index(state, idx)
    _expect(type(out) is type(state), f"index returned {type(out).__name__}")
    for field in dataclasses.fields(state):
        src, got = getattr(state, field.name), getattr(out, field.name)
        for j, i in enumerate(idx.tolist()):
            _expect(_same(got[j], src[i]), f"index: field {field.name!r} row {j} != source row {i}")


def _bool_vector(x: torch.Tensor, b: int, what: str) -> torch.Tensor:
    _expect(
        x.dtype == torch.bool and x.shape == (b,),
        f"{what} gave {tuple(x.shape)} {x.dtype}, expected Bool[{b}]",
    )
    return x


def _snapshot(batch: Batch) -> dict[str, torch.Tensor]:
    return {f.name: getattr(batch, f.name).clone() for f in dataclasses.fields(batch)}


def _same_batch(batch: Batch, snapshot: dict[str, torch.Tensor]) -> bool:
    return all(_same(getattr(batch, name), value) for name, value in snapshot.items())


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal shape, dtype and values, NaN matching NaN."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(), b.nan_to_num())
    return torch.equal(a, b)


def _rows(flags: torch.Tensor, ids: torch.Tensor | None = None) -> list[int]:
    rows = flags.nonzero().squeeze(1)
    return (rows if ids is None else ids[rows]).tolist()


def _expect(ok: bool, message: str) -> None:
    if not ok:
        raise AssertionError(f"check_env_protocol: {message}")
