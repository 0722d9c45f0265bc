"""The public decoders: greedy, beam search, sampling, SBS and Gumbeldore."""

from __future__ import annotations

import torch

from nco.env import Batch, Env
from nco.search.beam import Leaves, run_round
from nco.search.estimator import log_weights, weighted_mean
from nco.search.gumbel import gumbel
from nco.search.policy_eval import encode, masked_logits, nucleus
from nco.search.solutions import Solutions
from nco.search.trie import Trie

UPDATES = ("global", "local", "none")
ADVANTAGES = ("sum", "mean")


def _check_positive(name: str, value: int) -> None:
    if not isinstance(value, int) or value < 1:
        raise ValueError(f"Expected {name} to be a positive integer, got {value!r}.")


def _check_top_p(top_p: float) -> None:
    number = isinstance(top_p, int | float) and not isinstance(top_p, bool)
    if not number or not 0.0 < top_p <= 1.0:
        raise ValueError(f"Expected top_p in (0, 1], got {top_p!r}.")


def _to_solutions(leaves: list[Leaves]) -> Solutions:
    return Solutions(
        actions=torch.cat([lv.actions for lv in leaves], dim=1),
        objective=torch.cat([lv.objective for lv in leaves], dim=1),
        logprob=torch.cat([lv.logprob for lv in leaves], dim=1),
    )


@torch.no_grad()
def beam_search(policy: torch.nn.Module, env: Env, instances: Batch, beam_width: int) -> Solutions:
    """Deterministic beam search on summed log-probabilities; `beam_width` sequences each."""
    _check_positive("beam_width", beam_width)
    roots = env.reset(instances)
    zero = torch.zeros(roots.batch_size, dtype=torch.float64, device=roots.device)
    leaves = run_round(
        policy, env, roots, beam_width, env.max_steps(instances), stochastic=False, root_key=zero
    )
    return _to_solutions([leaves])


@torch.no_grad()
def greedy(policy: torch.nn.Module, env: Env, instances: Batch) -> Solutions:
    """The most likely action at every step (beam search of width 1)."""
    return beam_search(policy, env, instances, 1)


@torch.no_grad()
def sbs(
    policy: torch.nn.Module,
    env: Env,
    instances: Batch,
    beam_width: int,
    top_p: float = 1.0,
    generator: torch.Generator | None = None,
) -> Solutions:
    """One round of Stochastic Beam Search: `beam_width` sequences without replacement."""
    _check_positive("beam_width", beam_width)
    _check_top_p(top_p)
    roots = env.reset(instances)
    root_key = gumbel((roots.batch_size,), generator, roots.device)
    leaves = run_round(
        policy,
        env,
        roots,
        beam_width,
        env.max_steps(instances),
        stochastic=True,
        root_key=root_key,
        top_p=top_p,
        generator=generator,
    )
    return _to_solutions([leaves])


@torch.no_grad()
def sample(
    policy: torch.nn.Module,
    env: Env,
    instances: Batch,
    num_samples: int,
    top_p: float = 1.0,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> Solutions:
    """`num_samples` independent rollouts per instance (with replacement).

    Actions come from softmax(logits / temperature) truncated to the top-p nucleus;
    `logprob` is reported under the unmodified policy.
    """
    _check_positive("num_samples", num_samples)
    _check_top_p(top_p)
    if temperature <= 0:
        raise ValueError(f"Expected temperature > 0, got {temperature}.")
    roots = env.reset(instances)
    n, s, dev = roots.batch_size, num_samples, roots.device
    max_steps = env.max_steps(instances)
    rows = n * s
    actions = torch.full((rows, max_steps), -1, dtype=torch.long, device=dev)
    logprob = torch.zeros(rows, dtype=torch.float64, device=dev)
    objective = torch.full((rows,), -torch.inf, dtype=torch.float64, device=dev)
    live = torch.arange(rows, device=dev)
    state = env.index(roots, live // s)
    cache = encode(policy, roots)
    depth = 0
    while live.numel() > 0:
        if depth >= max_steps:
            raise RuntimeError(f"Episode longer than env.max_steps = {max_steps}.")
        rows = live // s if cache is not None else None
        logits = masked_logits(policy, env, state, env.action_mask(state), cache, rows)
        logp = nucleus(torch.log_softmax(logits / temperature, dim=1), top_p)
        noise = gumbel(tuple(logp.shape), generator, dev)
        a = torch.where(logp > -torch.inf, logp + noise, -torch.inf).argmax(dim=1)
        logprob[live] += torch.log_softmax(logits, dim=1).gather(1, a.view(-1, 1)).squeeze(1)
        actions[live, depth] = a
        state = env.step(state, a)
        done = env.is_done(state)
        if bool(done.any()):
            objective[live[done]] = env.objective(state)[done].to(torch.float64)
            still = (~done).nonzero().squeeze(1)
            state, live = env.index(state, still), live[still]
        depth += 1
    return Solutions(
        actions=actions.view(n, s, max_steps),
        objective=objective.view(n, s),
        logprob=logprob.view(n, s),
    )


def nucleus_schedule(rounds: int, p_min: float) -> list[float]:
    """Growing nucleus p_i = (1 - (i-1)/(n-1)) p_min + (i-1)/(n-1) for rounds i = 1..n."""
    if rounds == 1:
        return [p_min]
    return [(1 - i / (rounds - 1)) * p_min + i / (rounds - 1) for i in range(rounds)]


def _local_advantages(
    trie: Trie, leaves: Leaves, log_w: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-edge advantages of eq. 1: E[f | child] - E[f | parent], estimated with eq. 5.

    Returns unique edges (node ids, actions) and their advantages. A node's estimate uses
    the round's included leaves below it; a complete sequence's value is its objective. Edges
    whose estimates are undefined get advantage 0.
    """
    if leaves.path is None:
        raise ValueError("local advantages need the leaves' trie paths.")
    valid = leaves.valid.view(-1)
    path = leaves.path.view(-1, leaves.path.shape[-1])[valid]
    acts = leaves.actions.view(-1, leaves.actions.shape[-1])[valid]
    lens = leaves.lengths.view(-1)[valid]
    f = leaves.objective.view(-1)[valid]
    lw = log_w.view(-1)[valid]
    inst = torch.arange(leaves.key.shape[0], device=f.device).repeat_interleave(leaves.key.shape[1])
    shift = log_w.amax(dim=1).clamp_min(-1e300)[inst[valid]]
    w = torch.where(lw > -torch.inf, (lw - shift).exp(), 0.0)
    steps = torch.arange(path.shape[1], device=f.device).view(1, -1)
    on_path = steps < lens.view(-1, 1)
    size = trie.size
    wsum = torch.zeros(size, dtype=torch.float64, device=f.device)
    fsum = torch.zeros_like(wsum)
    nodes = path[on_path]
    wsum.index_add_(0, nodes, w.view(-1, 1).expand_as(path)[on_path])
    fsum.index_add_(0, nodes, (w * f).view(-1, 1).expand_as(path)[on_path])
    mu = torch.where(wsum > 0, fsum / wsum.clamp_min(1e-300), torch.nan)
    mu_parent = mu[path.clamp_min(0)]
    child_node = torch.cat([path[:, 1:], torch.full_like(path[:, :1], -1)], dim=1)
    mu_child = mu[child_node.clamp_min(0)]
    terminal = steps == (lens.view(-1, 1) - 1)
    mu_child = torch.where(terminal, f.view(-1, 1).expand_as(path), mu_child)
    adv = torch.nan_to_num(mu_child - mu_parent, nan=0.0)
    edge = path * trie.num_actions + acts
    uniq, first = _first_occurrence(edge[on_path])
    return uniq // trie.num_actions, uniq % trie.num_actions, adv[on_path][first]


def _first_occurrence(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Unique values of `x` and the index of one occurrence of each."""
    uniq, inverse = torch.unique(x, return_inverse=True)
    first = torch.full((uniq.numel(),), x.numel(), dtype=torch.long, device=x.device)
    first.scatter_reduce_(0, inverse, torch.arange(x.numel(), device=x.device), reduce="amin")
    return uniq, first


def update_trie(trie: Trie, leaves: Leaves, update: str, baseline: float | None = None) -> None:
    """After a round: shift logits by advantages (eq. 6 or eq. 1), then remove sampled mass.

    With a `baseline`, the global advantage is f - baseline instead of f - mu (the paper's
    Gomoku setting uses the game result itself, i.e. baseline 0 = a draw).
    """
    if leaves.path is None:
        raise ValueError("update_trie needs leaves sampled on a trie (their paths).")
    valid = leaves.valid
    flat_path = leaves.path.view(-1, leaves.path.shape[-1])[valid.view(-1)]
    flat_acts = leaves.actions.view(-1, leaves.actions.shape[-1])[valid.view(-1)]
    flat_lens = leaves.lengths.view(-1)[valid.view(-1)]
    if update == "global":
        if baseline is None:
            log_w = log_weights(leaves.phi, leaves.key, valid, leaves.pruned)
            mu = weighted_mean(log_w, leaves.objective)
            best_guess = torch.where(valid, leaves.objective, -torch.inf).amax(1)
            mu = torch.where(torch.isnan(mu), best_guess, mu)  # a single leaf: advantage 0
        else:
            mu = torch.full_like(leaves.objective[:, 0], baseline)
        advantage = (leaves.objective - mu.unsqueeze(1))[valid]
        trie.add_advantage(flat_path, flat_acts, flat_lens, advantage)
    elif update == "local":
        log_w = log_weights(leaves.phi, leaves.key, valid, leaves.pruned)
        nodes, acts, adv = _local_advantages(trie, leaves, log_w)
        trie.add_edge_advantage(nodes, acts, adv)
    trie.remove_leaves(flat_path, flat_acts, flat_lens)


def check_gumbeldore_args(
    beam_width: int,
    rounds: int,
    sigma: float,
    p_min: float,
    update: str,
    advantage: str,
    top_p: float | None,
) -> None:
    """ValueError naming the first of Gumbeldore's arguments that is out of range."""
    _check_positive("beam_width", beam_width)
    _check_positive("rounds", rounds)
    if update not in UPDATES:
        raise ValueError(f"Unknown update {update!r}; expected one of {', '.join(UPDATES)}.")
    if advantage not in ADVANTAGES:
        raise ValueError(
            f"Unknown advantage {advantage!r}; expected one of {', '.join(ADVANTAGES)}."
        )
    if advantage == "mean" and update != "global":
        raise ValueError(f"Expected update 'global' with advantage 'mean', got {update!r}.")
    if not 0.0 < p_min <= 1.0:
        raise ValueError(f"Expected p_min in (0, 1], got {p_min}.")
    if sigma < 0:
        raise ValueError(f"Expected sigma >= 0, got {sigma}.")
    if top_p is not None:
        _check_top_p(top_p)


@torch.no_grad()
def gumbeldore(
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
) -> Solutions:
    """Round-wise SBS over a persistent trie with policy updates (paper Algorithm 2).

    Each round samples `beam_width` new sequences without replacement (across all rounds),
    then shifts the trie's logits by sigma x advantage ("global": eq. 6, "local": eq. 1,
    "none": plain round-wise sampling without replacement). The nucleus grows from `p_min`
    to 1 over the rounds; a given `top_p` instead fixes the nucleus for every round (the
    paper's inference setting). A `baseline` replaces the estimated mean in the global
    advantage (f - baseline). `advantage` "sum" (paper eq. 6) shifts an edge's logit by sigma
    x the advantages summed over every sequence through it; "mean" (global update only; the
    authors' Gomoku setting `normalize_advantage_by_visit_count`) by sigma x their mean.
    Fewer sequences come back (padded) when the domain runs out.
    """
    check_gumbeldore_args(beam_width, rounds, sigma, p_min, update, advantage, top_p)
    schedule = nucleus_schedule(rounds, p_min) if top_p is None else [top_p] * rounds
    roots = env.reset(instances)
    n, dev = roots.batch_size, roots.device
    max_steps = env.max_steps(instances)
    num_actions = env.action_mask(roots).shape[1]
    capacity = max(1024, rounds * n * beam_width * max_steps)
    trie = Trie(
        num_actions,
        dev,
        capacity=capacity,
        mean_advantage=advantage == "mean",
        advantages=update != "none",
    )
    root_nodes = torch.full((n,), -1, dtype=torch.long, device=dev)
    cache = encode(policy, roots)  # one encoding per instance for all rounds
    shift = sigma if update != "none" else 0.0
    rounds_out: list[Leaves] = []
    for round_p in schedule:
        root_key = gumbel((n,), generator, dev)
        known = root_nodes >= 0
        if bool(known.any()):
            mass = torch.logsumexp(trie.logmass[root_nodes[known]], dim=1)
            root_key[known] = torch.where(mass > -torch.inf, root_key[known], -torch.inf)
        leaves = run_round(
            policy,
            env,
            roots,
            beam_width,
            max_steps,
            stochastic=True,
            root_key=root_key,
            top_p=round_p,
            generator=generator,
            trie=trie,
            root_nodes=root_nodes,
            sigma=shift,
            cache=cache,
        )
        assert leaves.path is not None  # run_round records paths on a trie
        first = leaves.path[:, 0, 0]
        root_nodes = torch.where((root_nodes < 0) & (first >= 0), first, root_nodes)
        update_trie(trie, leaves, update, baseline)
        rounds_out.append(leaves)
    return _to_solutions(rounds_out)
