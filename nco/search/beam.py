"""One batched beam round: deterministic beam search or Stochastic Beam Search (SBS).

All beams of all instances form one flat batch; each depth makes at most one policy call (on
the rows whose trie node is not yet expanded). Finished sequences stay in the beam as
candidates with their own key, so episodes may differ in length.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from nco.env import Batch, Env
from nco.search.gumbel import gumbel, truncated_gumbel
from nco.search.policy_eval import encode, masked_logits, nucleus
from nco.search.trie import Trie


@dataclasses.dataclass
class Leaves:
    """The k sequences one round produced per instance, sorted by key (descending)."""

    actions: torch.Tensor  # (N, k, T) long, pad -1
    lengths: torch.Tensor  # (N, k) long
    objective: torch.Tensor  # (N, k) float64, -inf where invalid
    logprob: torch.Tensor  # (N, k) float64, log-probability under the unmodified policy
    phi: torch.Tensor  # (N, k) float64, log-probability under the round's sampling policy
    key: torch.Tensor  # (N, k) float64, perturbed log-probability (phi for beam search)
    path: torch.Tensor | None  # (N, k, T) long, trie node each action was chosen at
    pruned: torch.Tensor  # (N,) bool, True if the beam ever cut a feasible candidate

    @property
    def valid(self) -> torch.Tensor:
        """Bool (N, k): True for real sequences."""
        return self.key > -torch.inf


def run_round(
    policy: torch.nn.Module,
    env: Env,
    roots: Batch,
    beam_width: int,
    max_steps: int,
    *,
    stochastic: bool,
    root_key: torch.Tensor,
    top_p: float = 1.0,
    generator: torch.Generator | None = None,
    trie: Trie | None = None,
    root_nodes: torch.Tensor | None = None,
    sigma: float = 0.0,
    cache: Any = None,
) -> Leaves:
    """Expand beams of width `beam_width` from `roots` (N states) until every beam is done.

    `root_key` (N,) float64 is the root's key; -inf marks an instance to skip (exhausted).
    With a `trie`, node log-probabilities are read from it (and stored on first expansion) and
    the sampling distribution is softmax(logmass + sigma * adv) at each node. `cache` is the
    policy's encoding of `roots` (nco.search.policy_eval); when None and the policy has the
    cached-encoding path, the roots are encoded here, once.
    """
    n, k, dev = roots.batch_size, beam_width, roots.device
    slots = n * k
    first = torch.arange(n, device=dev) * k
    valid = torch.zeros(slots, dtype=torch.bool, device=dev)
    valid[first] = root_key > -torch.inf
    key = torch.full((slots,), -torch.inf, dtype=torch.float64, device=dev)
    key[first] = root_key.to(torch.float64)
    phi = torch.zeros(slots, dtype=torch.float64, device=dev)
    logprob = torch.zeros(slots, dtype=torch.float64, device=dev)
    objective = torch.full((slots,), -torch.inf, dtype=torch.float64, device=dev)
    lengths = torch.zeros(slots, dtype=torch.long, device=dev)
    actions = torch.full((slots, max_steps), -1, dtype=torch.long, device=dev)
    path = torch.full((slots, max_steps), -1, dtype=torch.long, device=dev) if trie else None
    node = torch.full((slots,), -1, dtype=torch.long, device=dev)
    link_parent = torch.full((slots,), -1, dtype=torch.long, device=dev)
    link_action = torch.full((slots,), -1, dtype=torch.long, device=dev)
    if trie is not None and root_nodes is not None:
        node[first] = root_nodes
    pruned = torch.zeros(n, dtype=torch.bool, device=dev)
    if cache is None:
        cache = encode(policy, roots)
    rows = None  # each live slot's instance (slot // k), only needed with a cache

    live = valid.nonzero().squeeze(1)
    state = env.index(roots, live // k)
    done0 = env.is_done(state)
    if bool(done0.any()):
        raise ValueError("Decoders need root states that are not done.")
    depth = 0
    while live.numel() > 0:
        if depth >= max_steps:
            raise RuntimeError(f"Episode longer than env.max_steps = {max_steps}.")
        mask = env.action_mask(state)
        num_actions = mask.shape[1]
        if trie is not None:
            nid = node[live]
            fresh = (nid < 0).nonzero().squeeze(1)
            if fresh.numel() > 0:
                sub = state if fresh.numel() == live.numel() else env.index(state, fresh)
                if cache is not None:
                    rows = live[fresh] // k
                logits = masked_logits(policy, env, sub, mask[fresh], cache, rows)
                ids = trie.add(torch.log_softmax(logits, dim=1))
                nid = nid.clone()
                nid[fresh] = ids
                parents, acts = link_parent[live[fresh]], link_action[live[fresh]]
                linked = parents >= 0
                trie.link(parents[linked], acts[linked], ids[linked])
            logp_orig = None
            logp = torch.log_softmax(trie.logits(nid, sigma), dim=1)
        else:
            nid = None
            if cache is not None:
                rows = live // k
            logits = masked_logits(policy, env, state, mask, cache, rows)
            logp_orig = torch.log_softmax(logits, dim=1)
            logp = logp_orig
        logp = nucleus(logp, top_p)
        children = phi[live].unsqueeze(1) + logp
        feasible = (children > -torch.inf).sum(1)
        # Within a row the truncated keys are monotone in the perturbed ones, so only each
        # row's k best children can enter the beam: keep those before transforming.
        row_k = min(k, num_actions)
        if stochastic:
            noise = gumbel(tuple(children.shape), generator, dev)
            perturbed = torch.where(children > -torch.inf, children + noise, children)
            z = perturbed.amax(dim=1, keepdim=True)
            best, best_act = perturbed.topk(row_k, dim=1)
            scores = truncated_gumbel(best, key[live], z)
        else:
            scores, best_act = children.topk(row_k, dim=1)

        width = row_k + 1
        cand = torch.full((slots, width), -torch.inf, dtype=torch.float64, device=dev)
        cand[live, :row_k] = scores
        finished = valid.clone()
        finished[live] = False
        cand[finished, row_k] = key[finished]
        flat = cand.view(n, k * width)
        slot_feasible = finished.to(torch.long)
        slot_feasible[live] += feasible
        pruned |= slot_feasible.view(n, k).sum(1) > k
        top_val, top_idx = flat.topk(k, dim=1)
        parent = (first.unsqueeze(1) + top_idx // width).view(-1)
        column = (top_idx % width).view(-1)
        key = top_val.reshape(-1)
        valid = key > -torch.inf
        cont = (valid & (column < row_k)).nonzero().squeeze(1)

        pos = torch.full((slots,), -1, dtype=torch.long, device=dev)
        pos[live] = torch.arange(live.numel(), device=dev)
        pl = pos[parent[cont]]
        a = best_act[pl, column[cont]]
        # Every slot's parent is the slot itself with one beam (greedy) and where no beam
        # moved: the per-slot records are then updated in place instead of gathered.
        moved = k > 1 and not torch.equal(parent, torch.arange(slots, device=dev))
        if moved:
            phi, logprob, actions = phi[parent], logprob[parent], actions[parent]
            lengths, objective = lengths[parent], objective[parent]
        phi[cont] = children[pl, a]
        actions[cont, depth] = a
        lengths[cont] = depth + 1
        if trie is not None:
            assert path is not None and nid is not None  # both exist whenever a trie is given
            at = nid[pl]
            child = trie.child(at, a)
            logprob[cont] += trie.edge_logprob(at, a, child)
            if moved:
                path = path[parent]
            path[cont, depth] = at
            node = torch.full((slots,), -1, dtype=torch.long, device=dev)
            node[cont] = child
            link_parent[cont] = at
            link_action[cont] = a
        else:
            assert logp_orig is not None  # kept whenever there is no trie to read it from
            logprob[cont] += logp_orig[pl, a]

        same = pl.numel() == state.batch_size and torch.equal(
            pl, torch.arange(pl.numel(), device=dev)
        )  # every live row goes on in place (greedy, or no beam reordered): no state copy
        state = env.step(state if same else env.index(state, pl), a)
        done = env.is_done(state)
        if bool(done.any()):
            objective[cont[done]] = env.objective(state)[done].to(torch.float64)
            still = (~done).nonzero().squeeze(1)
            state = env.index(state, still)
            live = cont[still]
        else:
            live = cont
        depth += 1

    def shaped(x: torch.Tensor) -> torch.Tensor:
        return x.view(n, k, *x.shape[1:])

    objective = torch.where(valid, objective, -torch.inf)
    return Leaves(
        actions=shaped(torch.where(valid.unsqueeze(1), actions, -1)),
        lengths=shaped(lengths),
        objective=shaped(objective),
        logprob=shaped(torch.where(valid, logprob, -torch.inf)),
        phi=shaped(phi),
        key=shaped(key),
        path=shaped(path) if path is not None else None,
        pruned=pruned,
    )
