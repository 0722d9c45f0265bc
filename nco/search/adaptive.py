"""Gumbeldore with anytime statistics and an adaptive per-instance budget (`search.adaptive`).

`gumbeldore_rounds` drives the rounds of `nco.search.gumbeldore` itself (the same trie, the
same `run_round` and `update_trie`, the same random draws: with a fixed budget it returns the
same sequences as `gumbeldore` for the same generator), records the statistics of
`nco.search.anytime` after every round, and lets each instance stop early:

Stopping rule (checked after every round, for every instance still sampling):
    stop when  1 - covered < stop_mass
          or   1 - (1 - chance)^beam_width < stop_chance,
where `covered` is the policy mass of the instance's sampled sequences and `chance` is the
normalized importance-weighted estimate (Kool et al. 2019 eq. 14, threshold leaf excluded)
that a sequence drawn from the round's sampling distribution beats the best objective found
before the round (`anytime.improvement_chance`; 1 after the first round). The second term is
the estimated chance that one more round of `beam_width` samples improves the instance. An
instance whose domain is exhausted always stops.

Budget: the fixed run spends N x beam_width x rounds sampled sequences. With `reallocate`,
the sequences that stopped instances leave unspent go to the instances still sampling: each
round every active instance gets width min(max_width, max(beam_width, floor(N x beam_width /
active))), capped so that the total never exceeds the fixed run's, and rounds continue (up to
4 x rounds) until that total is spent or every instance has stopped. Without `reallocate`,
stopped instances simply save their policy rows.
"""

from __future__ import annotations

import torch

from nco.env import Batch, Env
from nco.search import anytime
from nco.search.beam import Leaves, run_round
from nco.search.counting import counting
from nco.search.decoders import check_gumbeldore_args, nucleus_schedule, update_trie
from nco.search.gumbel import gumbel
from nco.search.solutions import Solutions
from nco.search.trie import Trie

_RECORDERS: list[list[anytime.AnytimeLog]] = []


class recording:  # noqa: N801 (used as a context manager, like torch.no_grad)
    """Collect the AnytimeLog of every `gumbeldore_adaptive` call inside the block.

    ``with recording() as logs: decode(...)`` leaves one log per decoded chunk in `logs`.
    """

    def __enter__(self) -> list[anytime.AnytimeLog]:
        self.logs: list[anytime.AnytimeLog] = []
        _RECORDERS.append(self.logs)
        return self.logs

    def __exit__(self, *exc: object) -> None:
        _RECORDERS.remove(self.logs)


def _check(
    beam_width: int,
    rounds: int,
    sigma: float,
    p_min: float,
    update: str,
    advantage: str,
    top_p: float | None,
    stop_mass: float,
    stop_chance: float,
    max_width: int | None,
) -> None:
    check_gumbeldore_args(beam_width, rounds, sigma, p_min, update, advantage, top_p)
    if not 0.0 <= stop_mass <= 1.0:
        raise ValueError(f"Expected stop_mass in [0, 1], got {stop_mass}.")
    if not 0.0 <= stop_chance <= 1.0:
        raise ValueError(f"Expected stop_chance in [0, 1], got {stop_chance}.")
    if max_width is not None and (not isinstance(max_width, int) or max_width < beam_width):
        raise ValueError(f"Expected max_width >= beam_width ({beam_width}), got {max_width!r}.")


def _root_mass(trie: Trie, roots: torch.Tensor) -> torch.Tensor:
    """Unsampled log-mass rows (float64) of the trie nodes `roots`."""
    if trie.logmass is None:
        raise RuntimeError("Trie without storage.")
    return trie.logmass[roots].to(torch.float64)


def _new_nodes(path: torch.Tensor, before: int) -> torch.Tensor:
    """Per instance, the distinct trie nodes >= `before` on its leaves' paths (g, k, T)."""
    g = path.shape[0]
    ids = path.reshape(g, -1)
    rows = torch.arange(g, device=ids.device).view(-1, 1).expand_as(ids)
    fresh = ids >= before
    keys = torch.unique(rows[fresh] * (int(ids.max().clamp_min(0)) + 1) + ids[fresh])
    span = int(ids.max().clamp_min(0)) + 1
    return torch.bincount(keys // span, minlength=g)


@torch.no_grad()
def gumbeldore_rounds(
    policy: torch.nn.Module,
    env: Env,
    instances: Batch,
    beam_width: int,
    rounds: int,
    sigma: float,
    p_min: float = 1.0,
    update: str = "global",
    generator: torch.Generator | None = None,
    top_p: float | None = None,
    baseline: float | None = None,
    advantage: str = "sum",
    adaptive: bool = False,
    stop_mass: float = 0.0,
    stop_chance: float = 0.05,
    reallocate: bool = True,
    max_width: int | None = None,
) -> tuple[Solutions, anytime.AnytimeLog]:
    """Gumbeldore (the parameters of `nco.search.gumbeldore`) returning per-round statistics.

    With `adaptive`, instances stop by the module's rule and, with `reallocate`, their unspent
    sequences go to the others (at most `max_width`, default 4 x beam_width, per round).
    """
    _check(
        beam_width,
        rounds,
        sigma,
        p_min,
        update,
        advantage,
        top_p,
        stop_mass,
        stop_chance,
        max_width,
    )
    max_width = 4 * beam_width if max_width is None else max_width
    counter = counting(policy)
    rows_before = counter.rows
    schedule = nucleus_schedule(rounds, p_min) if top_p is None else [top_p] * rounds
    roots = env.reset(instances)
    n, dev = roots.batch_size, roots.device
    max_steps = env.max_steps(instances)
    num_actions = env.action_mask(roots).shape[1]
    trie = Trie(
        num_actions,
        dev,
        capacity=max(1024, rounds * n * beam_width * max_steps),
        mean_advantage=advantage == "mean",
        advantages=update != "none",
    )
    root_nodes = torch.full((n,), -1, dtype=torch.long, device=dev)
    shift = sigma if update != "none" else 0.0
    width = torch.full((n,), beam_width, dtype=torch.long, device=dev)
    budget, spent = n * beam_width * rounds, 0
    max_rounds = 4 * rounds if adaptive and reallocate else rounds
    best = torch.full((n,), -torch.inf, dtype=torch.float64, device=dev)
    known = torch.zeros(n, dtype=torch.float64, device=dev)
    covered = torch.zeros(n, dtype=torch.float64, device=dev)
    estimate = torch.full((n,), torch.nan, dtype=torch.float64, device=dev)
    stderr = torch.full((n,), torch.nan, dtype=torch.float64, device=dev)
    nodes = torch.zeros(n, dtype=torch.long, device=dev)
    log = anytime.AnytimeLog()
    parts: list[Solutions] = []
    r = 0
    while r < max_rounds and bool((width > 0).any()) and spent < budget:
        round_p = schedule[min(r, rounds - 1)]
        root_key = gumbel((n,), generator, dev)
        known_root = root_nodes >= 0
        if bool(known_root.any()):
            mass = torch.logsumexp(_root_mass(trie, root_nodes[known_root]), dim=1)
            root_key[known_root] = torch.where(mass > -torch.inf, root_key[known_root], -torch.inf)
        chance = torch.ones(n, dtype=torch.float64, device=dev)
        round_parts = []
        for w in torch.unique(width[width > 0]).tolist():
            idx = (width == w).nonzero().squeeze(1)
            before = trie.size
            leaves = run_round(
                counter,
                env,
                roots if idx.numel() == n else env.index(roots, idx),
                int(w),
                max_steps,
                stochastic=True,
                root_key=root_key[idx],
                top_p=round_p,
                generator=generator,
                trie=trie,
                root_nodes=root_nodes[idx],
                sigma=shift,
            )
            if leaves.path is None:
                raise RuntimeError("run_round with a trie returned no paths.")
            first = leaves.path[:, 0, 0]
            root_nodes[idx] = torch.where(
                (root_nodes[idx] < 0) & (first >= 0), first, root_nodes[idx]
            )
            update_trie(trie, leaves, update, baseline)
            est, var, pf = anytime.round_estimate(leaves, known[idx])
            chance[idx] = anytime.improvement_chance(leaves, best[idx])
            known[idx] += pf
            estimate[idx], stderr[idx] = est, var.sqrt()
            covered[idx] += torch.where(leaves.valid, leaves.logprob.exp(), 0.0).sum(1)
            found = leaves.objective.amax(1)
            best[idx] = torch.maximum(best[idx], found)
            nodes[idx] += _new_nodes(leaves.path, before)
            round_parts.append((leaves, idx))
        spent += int(width.sum())
        parts.append(_round_solutions(round_parts, n, max_steps, dev))
        log.width.append(width.clone())
        for name, value in (
            ("covered", covered),
            ("estimate", estimate),
            ("stderr", stderr),
            ("best", best),
            ("nodes", nodes),
        ):
            getattr(log, name).append(value.clone())
        log.rows.append(counter.rows - rows_before)
        r += 1
        exhausted = root_nodes >= 0
        if bool(exhausted.any()):
            mass = torch.logsumexp(_root_mass(trie, root_nodes[exhausted]), dim=1)
            exhausted[exhausted.clone()] = mass == -torch.inf
        if not adaptive:
            continue
        stop = exhausted | (1 - covered < stop_mass)
        stop |= 1 - (1 - chance).pow(beam_width) < stop_chance
        width = torch.where(stop, 0, width)
        active = int((width > 0).sum())
        if active == 0:
            break
        if reallocate:
            share = max(beam_width, (n * beam_width) // active)
            w = min(max_width, share, (budget - spent) // active)
            width = torch.where(width > 0, w, 0)
        elif r >= rounds:
            break
    sols = Solutions(
        actions=torch.cat([p.actions for p in parts], dim=1),
        objective=torch.cat([p.objective for p in parts], dim=1),
        logprob=torch.cat([p.logprob for p in parts], dim=1),
    )
    return sols, log


def _round_solutions(
    parts: list[tuple[Leaves, torch.Tensor]], n: int, max_steps: int, dev: torch.device
) -> Solutions:
    """One round's leaves of every width group as (n, widest, T), padded."""
    k = max(lv.key.shape[1] for lv, _ in parts)
    actions = torch.full((n, k, max_steps), -1, dtype=torch.long, device=dev)
    objective = torch.full((n, k), -torch.inf, dtype=torch.float64, device=dev)
    logprob = torch.full((n, k), -torch.inf, dtype=torch.float64, device=dev)
    for lv, idx in parts:
        w = lv.key.shape[1]
        actions[idx, :w] = lv.actions
        objective[idx, :w] = lv.objective
        logprob[idx, :w] = lv.logprob
    return Solutions(actions, objective, logprob)


@torch.no_grad()
def gumbeldore_adaptive(
    policy: torch.nn.Module,
    env: Env,
    instances: Batch,
    beam_width: int,
    rounds: int,
    sigma: float,
    p_min: float = 1.0,
    update: str = "global",
    generator: torch.Generator | None = None,
    top_p: float | None = None,
    baseline: float | None = None,
    advantage: str = "sum",
    adaptive: bool = True,
    stop_mass: float = 0.0,
    stop_chance: float = 0.05,
    reallocate: bool = True,
    max_width: int | None = None,
) -> Solutions:
    """`search.adaptive=true` (or false: the fixed budget, with statistics): Gumbeldore by
    `gumbeldore_rounds`; its AnytimeLog goes to every open `recording()`."""
    sols, log = gumbeldore_rounds(
        policy,
        env,
        instances,
        beam_width,
        rounds,
        sigma,
        p_min=p_min,
        update=update,
        generator=generator,
        top_p=top_p,
        baseline=baseline,
        advantage=advantage,
        adaptive=adaptive,
        stop_mass=stop_mass,
        stop_chance=stop_chance,
        reallocate=reallocate,
        max_width=max_width,
    )
    for logs in _RECORDERS:
        logs.append(log)
    return sols
