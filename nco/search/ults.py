"""Uncertainty-guided likelihood-tree search (ULTS, Grosse et al. 2024, section 3), batched.

ULTS looks for the most likely sequence of a policy. Every node's optimal value (log-likelihood
of its best completion) gets posterior samples v = log c(root -> node) + log Delta, where Delta
(the likelihood of the best completion below the node) follows a per-level Beta prior fitted by
the paper's Algorithm 1 to a prior over the policy's categorical distributions: a symmetric
Dirichlet(alpha), or the empirical prior, the policy's own distributions along greedy rollouts
(the paper's hyperparameter-free option). Each iteration, per instance:

1. selection: from the root, follow the child that holds the maximum of its siblings in most
   samples (acquisition eq. 4 with the children's own values) until a child that is not
   expanded;
2. expansion: one policy row for it; its k_max most likely children get prior samples, and a
   child that completes a sequence is a leaf (its value is known: Delta = 1);
3. backup: every node's samples are the elementwise maximum of its children's (eq. 5), up to
   the root;
4. termination: stop when P(c* >= v_root) >= 1 - epsilon over the root's samples, c* being the
   best leaf likelihood found, or when k_max leaves have been selected (section 3.3).

As in the authors' implementation, at most k_max nodes are expanded per level: when a level
reaches k_max, every unexpanded node at or above it is dropped, and a selected leaf is marked
explored (its value is already in c*). Nodes live in nco's Trie (one row of policy
log-probabilities per expanded node, child links in its edge map); states are kept per depth,
since a problem's states share shapes only within one depth. Instances are searched together:
each iteration expands one node per instance, with one policy call per distinct depth.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

from nco.env import Batch, Env, cat
from nco.search.counting import counting
from nco.search.policy_eval import masked_logits
from nco.search.solutions import Solutions
from nco.search.trie import Trie

PRIORS = ("empirical", "dirichlet")
OPEN, LEAF, CLOSED = 0, 1, 2


@dataclasses.dataclass(frozen=True)
class BetaPrior:
    """Beta(a_l, b_l) over Delta for nodes with l steps to go (index l; index 0: a leaf).

    Where a level's samples were all equal (e.g. only forced steps), it is a point mass at
    `point` instead (a, b = nan).
    """

    a: torch.Tensor  # (L + 1,) float64
    b: torch.Tensor  # (L + 1,) float64
    point: torch.Tensor  # (L + 1,) float64, nan where the Beta applies

    @property
    def depth(self) -> int:
        """The largest number of steps to go the prior covers."""
        return self.a.shape[0] - 1

    def log_pool(self, size: int, seed: int) -> torch.Tensor:
        """`size` draws of log Delta per level (L + 1, size), float32; level 0 is log 1."""
        rng = np.random.default_rng(seed)
        out = np.zeros((self.depth + 1, size))
        for level in range(1, self.depth + 1):
            if math.isnan(float(self.point[level])):
                draws = rng.beta(float(self.a[level]), float(self.b[level]), size)
                out[level] = np.log(np.clip(draws, 1e-300, 1.0))
            else:
                out[level] = math.log(max(float(self.point[level]), 1e-300))
        return torch.from_numpy(out).to(torch.float32)


def _fit_beta(x: np.ndarray) -> tuple[float, float, float]:
    """Beta maximum-likelihood fit on [0, 1] (a, b, nan), or (nan, nan, mean) if degenerate."""
    from scipy import stats

    if float(x.std()) < 1e-12:
        return math.nan, math.nan, float(x.mean())
    clipped = np.clip(x, 1e-300, 1 - 1e-12)
    try:
        a, b, _, _ = stats.beta.fit(clipped, floc=0.0, fscale=1.0)
    except (ValueError, RuntimeError, FloatingPointError):
        return math.nan, math.nan, float(x.mean())
    if not (math.isfinite(a) and math.isfinite(b) and a > 0 and b > 0):
        return math.nan, math.nan, float(x.mean())
    return float(a), float(b), math.nan


def fit_prior(
    categoricals: torch.Tensor, depth: int, num_samples: int = 1000, seed: int = 0
) -> BetaPrior:
    """The paper's Algorithm 1: per-level Beta fits of Delta, bottom-up.

    `categoricals` (M, A) holds probability vectors (zeros for infeasible actions); each draw
    of the prior p(c) is one of its rows, uniformly. Level 1: Delta = max_j c_j; level l:
    Delta = max_j c_j Delta_j with Delta_j ~ Beta_{l-1}.
    """
    if categoricals.ndim != 2 or categoricals.shape[0] < 1:
        raise ValueError(
            f"fit_prior: expected categoricals (M >= 1, A), got {tuple(categoricals.shape)}."
        )
    if depth < 1 or num_samples < 2:
        raise ValueError(
            f"fit_prior: expected depth >= 1 and num_samples >= 2, got {depth}, {num_samples}."
        )
    rng = np.random.default_rng(seed)
    c_all = categoricals.detach().to(torch.float64).cpu().numpy()
    a = np.full(depth + 1, math.nan)
    b = np.full(depth + 1, math.nan)
    point = np.full(depth + 1, math.nan)
    point[0] = 1.0
    for level in range(1, depth + 1):
        c = c_all[rng.integers(0, c_all.shape[0], num_samples)]
        if level == 1:
            below = np.ones_like(c)
        elif math.isnan(point[level - 1]):
            below = rng.beta(a[level - 1], b[level - 1], c.shape)
        else:
            below = np.full(c.shape, point[level - 1])
        a[level], b[level], point[level] = _fit_beta((c * below).max(1))
    return BetaPrior(torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(point))


def dirichlet_categoricals(alpha: float, width: int, num: int, seed: int = 0) -> torch.Tensor:
    """`num` draws (num, width) of the symmetric Dirichlet(alpha) prior over categoricals."""
    if alpha <= 0 or width < 1:
        raise ValueError(f"Expected alpha > 0 and width >= 1, got {alpha}, {width}.")
    rng = np.random.default_rng(seed)
    draws = rng.dirichlet([alpha] * width, num)
    draws = draws[np.isfinite(draws).all(1)]  # tiny alpha can underflow a whole draw
    if draws.shape[0] == 0:
        raise ValueError(f"Dirichlet({alpha}) underflowed in every draw; use a larger alpha.")
    return torch.from_numpy(draws)


@torch.no_grad()
def empirical_categoricals(
    policy: torch.nn.Module, env: Env, instances: Batch
) -> tuple[torch.Tensor, int]:
    """The policy's distributions at every step of greedy rollouts of `instances` (rows with
    more than one feasible action), and the longest rollout's length."""
    state = env.reset(instances)
    rows, steps = [], 0
    while state.batch_size > 0:
        mask = env.action_mask(state)
        logits = masked_logits(policy, env, state, mask)
        probs = torch.softmax(logits, dim=1)
        rows.append(probs[mask.sum(1) > 1].cpu())
        state = env.step(state, logits.argmax(1))
        state = env.index(state, (~env.is_done(state)).nonzero().squeeze(1))
        steps += 1
    found = torch.cat(rows)
    if found.shape[0] == 0:
        found = torch.ones(1, 1, dtype=torch.float64)
    return found, steps


@dataclasses.dataclass(frozen=True)
class UltsInfo:
    """What a search spent: `nodes` (N,) expanded nodes per instance (each is one policy
    row, or a forced step that skips the policy), `policy_rows` the rows sent to the policy
    (all instances), `iterations` the selection rounds."""

    nodes: torch.Tensor
    policy_rows: int
    iterations: int


class _Store:
    """States of expanded nodes, one growing batch per depth (shapes agree within a depth)."""

    def __init__(self) -> None:
        self.parts: dict[int, list[Batch]] = {}
        self.size: dict[int, int] = {}

    def add(self, depth: int, states: Batch) -> torch.Tensor:
        start = self.size.get(depth, 0)
        self.parts.setdefault(depth, []).append(states)
        self.size[depth] = start + states.batch_size
        return torch.arange(start, start + states.batch_size, device=states.device)

    def get(self, depth: int, rows: torch.Tensor) -> Batch:
        parts = self.parts[depth]
        if len(parts) > 1:
            self.parts[depth] = parts = [cat(parts)]
        return parts[0].index(rows)


class _Tree:
    """Per-node and per-slot arrays, indexed by trie node id (slots: the k_max children)."""

    def __init__(self, k: int, samples: int, dev: torch.device) -> None:
        self.k, self.s, self.dev, self.cap = k, samples, dev, 0

        def empty(dtype: torch.dtype, *shape: int) -> torch.Tensor:
            return torch.empty((0, *shape), dtype=dtype, device=dev)

        self.parent = empty(torch.long)  # parent node, -1 at a root
        self.pslot = empty(torch.long)  # slot of this node among its parent's children
        self.depth = empty(torch.long)
        self.inst = empty(torch.long)  # instance of the node
        self.row = empty(torch.long)  # row of the node's state in the store of its depth
        self.act = empty(torch.long)  # action from the parent, -1 at a root
        self.logc = empty(torch.float64)  # path log-likelihood
        self.best = empty(torch.long)  # slot the acquisition picks
        self.slot_act = empty(torch.long, k)
        self.slot_logc = empty(torch.float64, k)
        self.kind = empty(torch.int8, k)  # OPEN, LEAF or CLOSED
        self.leaf_obj = empty(torch.float64, k)  # objective where the slot is a leaf
        self.slot_v = empty(torch.float32, k, samples)  # posterior samples of the child

    def grow(self, size: int) -> None:
        """Room for `size` nodes (new rows hold the defaults of an empty slot)."""
        if size <= self.cap:
            return
        cap = max(size, 2 * self.cap, 64)

        def g(old: torch.Tensor, fill: float) -> torch.Tensor:
            new = torch.full((cap, *old.shape[1:]), fill, dtype=old.dtype, device=self.dev)
            new[: old.shape[0]] = old
            return new

        self.parent, self.pslot = g(self.parent, -1), g(self.pslot, -1)
        self.depth, self.inst, self.row = g(self.depth, 0), g(self.inst, 0), g(self.row, 0)
        self.act, self.logc, self.best = g(self.act, -1), g(self.logc, 0.0), g(self.best, 0)
        self.slot_act, self.slot_logc = g(self.slot_act, 0), g(self.slot_logc, -math.inf)
        self.kind, self.leaf_obj = g(self.kind, CLOSED), g(self.leaf_obj, -math.inf)
        self.slot_v = g(self.slot_v, -math.inf)
        self.cap = cap


def _winner(v: torch.Tensor) -> torch.Tensor:
    """Acquisition eq. 4: per node (M, k, S), the child that is the maximum in most samples."""
    mx, arg = v.max(1)
    counts = torch.zeros(v.shape[0], v.shape[1], dtype=torch.float32, device=v.device)
    counts.scatter_add_(1, arg, (mx > -math.inf).to(torch.float32))
    return counts.argmax(1)


def _check(
    k_max: int, epsilon: float, num_samples: int, prior: str, alpha: float, prior_instances: int
) -> None:
    if not isinstance(k_max, int) or k_max < 1:
        raise ValueError(f"Expected k_max to be a positive integer, got {k_max!r}.")
    if not 0.0 <= epsilon < 1.0:
        raise ValueError(f"Expected epsilon in [0, 1), got {epsilon}.")
    if not isinstance(num_samples, int) or num_samples < 1:
        raise ValueError(f"Expected num_samples to be a positive integer, got {num_samples!r}.")
    if prior not in PRIORS:
        raise ValueError(f"Unknown prior {prior!r}; expected one of {', '.join(PRIORS)}.")
    if alpha <= 0:
        raise ValueError(f"Expected alpha > 0, got {alpha}.")
    if not isinstance(prior_instances, int) or prior_instances < 1:
        raise ValueError(
            f"Expected prior_instances to be a positive integer, got {prior_instances!r}."
        )


@torch.no_grad()
def ults_search(
    policy: torch.nn.Module,
    env: Env,
    instances: Batch,
    k_max: int,
    prior: BetaPrior,
    epsilon: float = 0.1,
    num_samples: int = 128,
    generator: torch.Generator | None = None,
) -> tuple[Solutions, UltsInfo]:
    """ULTS with a fitted `prior`; every leaf it met per instance, and what it spent.

    `Solutions` holds each leaf found (a child that completed a sequence), so `logprob.max(1)`
    is the likelihood ULTS returns and `best()` the best objective among the leaves it saw.
    """
    _check(k_max, epsilon, num_samples, "empirical", 1.0, 1)
    counter = counting(policy)
    rows_before = counter.rows
    k, s = k_max, num_samples
    roots = env.reset(instances)
    n, dev = roots.batch_size, roots.device
    max_steps = env.max_steps(instances)
    num_actions = env.action_mask(roots).shape[1]
    seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator))
    pool = prior.log_pool(4096, seed).to(dev)
    gen = torch.Generator(device="cpu").manual_seed(seed + 1)
    trie = Trie(num_actions, dev, capacity=max(64, n * k * 4), advantages=False)
    tree = _Tree(k, s, dev)
    store = _Store()
    used = torch.zeros(n, max_steps + 2, dtype=torch.long, device=dev)
    selected_leaves = torch.zeros(n, dtype=torch.long, device=dev)
    cstar = torch.full((n,), -math.inf, dtype=torch.float64, device=dev)
    nodes = torch.zeros(n, dtype=torch.long, device=dev)
    leaves: list[tuple[torch.Tensor, torch.Tensor]] = []  # (node, slot) of every leaf

    def expand(
        parents: torch.Tensor, slots: torch.Tensor, states: Batch, depth: int
    ) -> torch.Tensor:
        """Add the nodes reached by (parents, slots) with `states` at `depth`; return ids."""
        mask = env.action_mask(states)
        logp = torch.log_softmax(masked_logits(counter, env, states, mask), dim=1)
        ids = trie.add(logp)
        m = ids.numel()
        tree.grow(trie.size)
        has_parent = parents >= 0
        if bool(has_parent.any()):
            p, j = parents[has_parent], slots[has_parent]
            trie.link(p, tree.slot_act[p, j], ids[has_parent])
        inst = torch.where(has_parent, tree.inst[parents.clamp_min(0)], torch.arange(m, device=dev))
        base = torch.where(
            has_parent, tree.slot_logc[parents.clamp_min(0), slots.clamp_min(0)], 0.0
        )
        tree.parent[ids], tree.pslot[ids], tree.depth[ids] = parents, slots, depth
        tree.inst[ids], tree.logc[ids] = inst, base
        tree.act[ids] = torch.where(
            has_parent, tree.slot_act[parents.clamp_min(0), slots.clamp_min(0)], -1
        )
        tree.row[ids] = store.add(depth, states)
        nodes.index_add_(0, inst, torch.ones_like(inst))
        width = min(k, num_actions)
        top, acts = logp.topk(width, dim=1)
        feasible = top > -math.inf
        tree.slot_act[ids, :width] = acts
        tree.slot_logc[ids, :width] = torch.where(feasible, base.unsqueeze(1) + top, -math.inf)
        kind = torch.full((m, k), CLOSED, dtype=torch.int8, device=dev)
        r, c = feasible.nonzero(as_tuple=True)
        if r.numel() > 0:
            child = env.step(env.index(states, r), acts[r, c])
            done = env.is_done(child)
            kind[r, c] = torch.where(done, LEAF, OPEN).to(torch.int8)
            obj = env.objective(child).to(torch.float64)
            tree.leaf_obj[ids[r[done]], c[done]] = obj[done]
            if bool(done.any()):
                leaves.append((ids[r[done]], c[done]))
        tree.kind[ids] = kind
        togo = (prior.depth - depth - 1) if depth + 1 < prior.depth else 1
        level = min(max(togo, 1), prior.depth)
        draws = pool[level][torch.randint(0, pool.shape[1], (m, k, s), generator=gen).to(dev)]
        logc = tree.slot_logc[ids].to(torch.float32)
        v = torch.where(kind.unsqueeze(2) == LEAF, logc.unsqueeze(2), logc.unsqueeze(2) + draws)
        tree.slot_v[ids] = torch.where(kind.unsqueeze(2) == CLOSED, -math.inf, v)
        leaf_logc = torch.where(kind == LEAF, tree.slot_logc[ids], -math.inf).amax(1)
        cstar.scatter_reduce_(0, inst, leaf_logc, reduce="amax")
        return ids

    def backup(start: torch.Tensor) -> None:
        """Eq. 5 from `start` (one node per instance) up to the roots."""
        cur = start
        while cur.numel() > 0:
            v = tree.slot_v[cur]
            tree.best[cur] = _winner(v)
            up = tree.parent[cur] >= 0
            p = tree.parent[cur[up]]
            tree.slot_v[p, tree.pslot[cur[up]]] = v[up].amax(1)
            cur = p

    root_ids = expand(torch.full((n,), -1, device=dev), torch.full((n,), -1, device=dev), roots, 0)
    backup(root_ids)
    active = torch.ones(n, dtype=torch.bool, device=dev)
    iterations = 0
    while True:
        root_v = tree.slot_v[root_ids].amax(1)
        finite = (root_v > -math.inf).any(1)
        found = (cstar.unsqueeze(1).to(torch.float32) >= root_v).to(torch.float32).mean(1)
        active &= finite & (found < 1 - epsilon) & (selected_leaves < k)
        if not bool(active.any()):
            break
        iterations += 1
        cur = root_ids[active]
        while True:
            j = tree.best[cur]
            child = trie.child(cur, tree.slot_act[cur, j])
            down = (child >= 0) & (tree.kind[cur, j] == OPEN)
            if not bool(down.any()):
                break
            cur = torch.where(down, child, cur)
        inst = tree.inst[cur]
        level = tree.depth[cur] + 1
        used[inst, level] += 1
        kind = tree.kind[cur, j]
        is_leaf = kind == LEAF
        if bool(is_leaf.any()):
            lc, lj = cur[is_leaf], j[is_leaf]
            tree.kind[lc, lj] = CLOSED
            tree.slot_v[lc, lj] = -math.inf
            selected_leaves[inst[is_leaf]] += 1
        starts = cur.clone()
        grow = (kind == OPEN).nonzero().squeeze(1)
        for d in torch.unique(tree.depth[cur[grow]]).tolist():
            at = grow[tree.depth[cur[grow]] == d]
            p, pj = cur[at], j[at]
            states = env.step(store.get(d, tree.row[p]), tree.slot_act[p, pj])
            starts[at] = expand(p, pj, states, d + 1)
        full = used[inst, level] == k
        if bool(full.any()):
            _prune(tree, trie, inst[full], level[full])
            _recompute(tree, trie.size, inst[full], level[full])
        backup(starts)
    solutions = _solutions(tree, leaves, n, max_steps, dev)
    return solutions, UltsInfo(
        nodes=nodes, policy_rows=counter.rows - rows_before, iterations=iterations
    )


def _prune(tree: _Tree, trie: Trie, inst: torch.Tensor, level: torch.Tensor) -> None:
    """Close every unexpanded open child at depth <= `level` of each instance `inst`."""
    size = trie.size
    limit = torch.full((int(tree.inst[:size].max()) + 1,), -1, dtype=torch.long, device=inst.device)
    limit[inst] = level
    reach = limit[tree.inst[:size]]
    ids = ((tree.depth[:size] + 1) <= reach).nonzero().squeeze(1)
    if ids.numel() == 0:
        return
    k = tree.k
    rows = ids.repeat_interleave(k)
    cols = torch.arange(k, device=ids.device).repeat(ids.numel())
    expanded = trie.child(rows, tree.slot_act[rows, cols]) >= 0
    close = (tree.kind[rows, cols] == OPEN) & ~expanded
    tree.kind[rows[close], cols[close]] = CLOSED
    tree.slot_v[rows[close], cols[close]] = -math.inf


def _recompute(tree: _Tree, size: int, inst: torch.Tensor, level: torch.Tensor) -> None:
    """Redo eq. 5 bottom-up for the nodes above `level` of each instance after pruning."""
    limit = torch.full((int(tree.inst[:size].max()) + 1,), -1, dtype=torch.long, device=inst.device)
    limit[inst] = level
    depth, reach = tree.depth[:size], limit[tree.inst[:size]]
    for d in range(int(level.max()) - 1, -1, -1):
        ids = ((depth == d) & (reach > d)).nonzero().squeeze(1)
        if ids.numel() == 0:
            continue
        v = tree.slot_v[ids]
        tree.best[ids] = _winner(v)
        up = tree.parent[ids] >= 0
        tree.slot_v[tree.parent[ids[up]], tree.pslot[ids[up]]] = v[up].amax(1)


def _solutions(
    tree: _Tree,
    leaves: list[tuple[torch.Tensor, torch.Tensor]],
    n: int,
    max_steps: int,
    dev: torch.device,
) -> Solutions:
    """Every leaf found, per instance, as Solutions (actions rebuilt from parent links)."""
    if not leaves:
        return Solutions(
            torch.full((n, 1, max_steps), -1, dtype=torch.long, device=dev),
            torch.full((n, 1), -math.inf, dtype=torch.float64, device=dev),
            torch.full((n, 1), -math.inf, dtype=torch.float64, device=dev),
        )
    node = torch.cat([lv[0] for lv in leaves])
    slot = torch.cat([lv[1] for lv in leaves])
    inst = tree.inst[node]
    length = tree.depth[node] + 1
    actions = torch.full((node.numel(), max_steps), -1, dtype=torch.long, device=dev)
    rows = torch.arange(node.numel(), device=dev)
    actions[rows, length - 1] = tree.slot_act[node, slot]
    cur, pos = node, length - 2
    while bool((pos >= 0).any()):
        go = pos >= 0
        actions[rows[go], pos[go]] = tree.act[cur[go]]
        cur = torch.where(go, tree.parent[cur].clamp_min(0), cur)
        pos = pos - 1
    order = torch.argsort(inst, stable=True)
    counts = torch.bincount(inst, minlength=n)
    width = int(counts.max())
    start = torch.cumsum(counts, 0) - counts
    col = torch.arange(node.numel(), device=dev) - start[inst[order]]
    out_a = torch.full((n, width, max_steps), -1, dtype=torch.long, device=dev)
    out_o = torch.full((n, width), -math.inf, dtype=torch.float64, device=dev)
    out_l = torch.full((n, width), -math.inf, dtype=torch.float64, device=dev)
    out_a[inst[order], col] = actions[order]
    out_o[inst[order], col] = tree.leaf_obj[node[order], slot[order]]
    out_l[inst[order], col] = tree.slot_logc[node[order], slot[order]]
    return Solutions(out_a, out_o, out_l)


@torch.no_grad()
def ults(
    policy: torch.nn.Module,
    env: Env,
    instances: Batch,
    k_max: int = 8,
    epsilon: float = 0.1,
    num_samples: int = 128,
    prior: str = "empirical",
    alpha: float = 1e-4,
    prior_instances: int = 4,
    generator: torch.Generator | None = None,
) -> Solutions:
    """`search=ults`: ULTS with the empirical prior (greedy rollouts of the first
    `prior_instances` instances) or a Dirichlet(alpha) prior over `env`'s actions; every leaf
    found per instance (see `ults_search`)."""
    _check(k_max, epsilon, num_samples, prior, alpha, prior_instances)
    seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator))
    if prior == "empirical":
        head = instances.index(torch.arange(min(prior_instances, instances.batch_size)))
        cats, steps = empirical_categoricals(policy, env, head)
    else:
        width = env.action_mask(env.reset(instances.index(torch.arange(1)))).shape[1]
        cats, steps = dirichlet_categoricals(alpha, width, 1000, seed), env.max_steps(instances)
    fitted = fit_prior(cats, max(steps, 1), seed=seed)
    sols, _ = ults_search(policy, env, instances, k_max, fitted, epsilon, num_samples, generator)
    return sols
