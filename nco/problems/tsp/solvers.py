"""Classical TSP baselines: exact branch-and-cut, LKH-3 (elkai) and OR-Tools routing.

Every solver follows `nco.solver.Solver`: it takes `{"coords": (n, 2)}`, a time limit in seconds
and a seed, and returns the tour (0-based node order starting at node 0) with its length
recomputed in float64 from exact Euclidean distances. An instance read from a TSPLIB file also
holds `weights` (n, n), the file's own distances (EUC_2D, CEIL_2D, ATT, GEO, EXPLICIT): every
solver then optimises those (LKH-3 as an EXPLICIT FULL_MATRIX problem) and returns the tour's
length in them.
"""

from __future__ import annotations

import time

import numpy as np
from ortools.constraint_solver import pywrapcp, routing_enums_pb2
from ortools.linear_solver import pywraplp
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from nco.solver import Solver, SolverResult

SCALE = 1e6  # OR-Tools routing needs integer arc costs: distances times this, rounded
# LKH needs integer coordinates (unit-square floats give wrong tours silently). One run at x1e5
# or x1e6 is equally good: on Kool's 10,000 TSP100 instances each found the shorter tour on ~270
# (mean 7.76490 vs 7.76494; 5 vs 9 of the first 200 above the optimum). 10 runs cost ~5x.
LKH_SCALE = 1e5
LKH_RUNS = 1
_EPS = 1e-6  # LP support and cut-violation tolerance
_OPT_TOL = 1e-9  # relative tolerance for calling a tour proven optimal
_FIX_TOL = 1e-6  # relative safety margin of reduced-cost edge elimination (LP tolerances)


def instance_coords(instance: dict[str, np.ndarray]) -> np.ndarray:
    """The `coords` (n, 2) of one instance as float64, checked."""
    if "coords" not in instance:
        raise ValueError(f"TSP instance: expected field 'coords', got {sorted(instance)}.")
    coords = np.asarray(instance["coords"], dtype=np.float64)
    if coords.ndim != 2 or coords.shape[1] != 2 or coords.shape[0] < 3:
        raise ValueError(
            f"TSP instance: expected 'coords' of shape (n >= 3, 2), got {coords.shape}."
        )
    if not np.isfinite(coords).all():
        raise ValueError("TSP instance: 'coords' must be finite.")
    return coords


def instance_weights(instance: dict[str, np.ndarray]) -> np.ndarray | None:
    """The file's own (n, n) distances when the instance has them, checked; else None."""
    if "weights" not in instance:
        return None
    n = len(instance["coords"])
    weights = np.asarray(instance["weights"])
    if weights.shape != (n, n) or weights.dtype.kind not in "iuf" or (weights < 0).any():
        raise ValueError(f"TSP instance: expected 'weights' (n, n) >= 0, got {weights.shape}.")
    return weights


def _length(coords: np.ndarray, weights: np.ndarray | None, tour: list[int]) -> float:
    """The tour's length in the instance's own distances (`weights`), else Euclidean."""
    if weights is None:
        return tour_length(coords, tour)
    order = np.asarray(tour)
    tour_length(coords, tour)  # checks the permutation
    return float(weights[order, np.roll(order, -1)].sum())


def distance_matrix(coords: np.ndarray) -> np.ndarray:
    """Exact Euclidean distances (n, n) in float64."""
    diff = coords[:, None, :] - coords[None, :, :]
    return np.sqrt((diff**2).sum(-1))


def tour_length(coords: np.ndarray, tour: list[int] | np.ndarray) -> float:
    """Closed tour length in float64; raises ValueError unless `tour` is a permutation."""
    tour = np.asarray(tour, dtype=np.int64)
    n = coords.shape[0]
    if tour.shape != (n,) or not np.array_equal(np.sort(tour), np.arange(n)):
        raise ValueError(f"TSP tour: expected a permutation of 0..{n - 1}, got {tour.tolist()}.")
    pts = coords[tour]
    return float(np.sqrt(((pts - np.roll(pts, -1, axis=0)) ** 2).sum(-1)).sum())


def _rotate_to_zero(tour: list[int]) -> list[int]:
    k = tour.index(0)
    return tour[k:] + tour[:k]


def _lkh_tour(
    coords: np.ndarray,
    seed: int,
    runs: int,
    time_limit: float | None,
    weights: np.ndarray | None = None,
) -> list[int]:
    """LKH-3 on integer coordinates (coords * LKH_SCALE rounded, EUC_2D), or on `weights` as an
    EXPLICIT FULL_MATRIX (rounded to integers, scaled by LKH_SCALE first if not integral).

    Calls `elkai._elkai.solve_problem` directly: it is what `elkai.Coordinates2D.solve_tsp`
    calls, but takes the full parameter text, so SEED and TIME_LIMIT can be set.
    """
    try:
        from elkai import _elkai  # optional: LKH-3's licence is non-commercial
    except ImportError as err:
        raise ImportError(
            "LKH-3 needs the optional package elkai (non-commercial licence): "
            "pip install 'nco[lkh]'; or use solver=exact / solver=ortools "
            "(training: problem.reference_solver=exact)."
        ) from err
    if weights is not None:
        integral = bool((weights == np.round(weights)).all())
        matrix = np.rint(weights if integral else weights * LKH_SCALE).astype(np.int64)
        rows = "\n".join(" ".join(map(str, row)) for row in matrix.tolist())
        problem = (
            f"TYPE : TSP\nDIMENSION : {len(coords)}\nEDGE_WEIGHT_TYPE : EXPLICIT\n"
            f"EDGE_WEIGHT_FORMAT : FULL_MATRIX\nEDGE_WEIGHT_SECTION\n{rows}\nEOF\n"
        )
    else:
        scaled = np.rint(coords * LKH_SCALE).astype(np.int64)
        lines = [f"{k + 1} {x} {y}" for k, (x, y) in enumerate(scaled.tolist())]
        problem = (
            f"TYPE : TSP\nDIMENSION : {len(coords)}\nEDGE_WEIGHT_TYPE : EUC_2D\n"
            "NODE_COORD_SECTION\n" + "\n".join(lines) + "\nEOF\n"
        )
    params = f"RUNS = {runs}\nSEED = {max(int(seed), 1)}\n"
    if time_limit is not None:
        params += f"TIME_LIMIT = {max(time_limit, 0.01):.3f}\n"
    tour = [k - 1 for k in _elkai.solve_problem(params + "PROBLEM_FILE = :stdin:\n", problem)]
    return _rotate_to_zero(tour)


def _two_opt_tour(coords: np.ndarray) -> list[int]:
    """Nearest-neighbour tour from node 0 improved by 2-opt to a local optimum (no LKH-3)."""
    n = len(coords)
    dist = distance_matrix(coords)
    tour, left = [0], set(range(1, n))
    while left:
        nxt = min(left, key=lambda k: dist[tour[-1], k])
        tour.append(nxt)
        left.remove(nxt)
    t = np.array(tour)
    while n > 3:
        a, b = t, np.roll(t, -1)  # edge i is (a[i], b[i])
        delta = dist[a[:, None], a[None, :]] + dist[b[:, None], b[None, :]]
        delta -= dist[a, b][:, None] + dist[a, b][None, :]
        delta = np.triu(delta, 2)  # i < j - 1: non-adjacent edges
        i, j = np.unravel_index(np.argmin(delta), delta.shape)
        if delta[i, j] > -1e-12:
            break
        t[i + 1 : j + 1] = t[i + 1 : j + 1][::-1].copy()
    return _rotate_to_zero(t.tolist())


def _incumbent(coords: np.ndarray, seed: int, weights: np.ndarray | None = None) -> list[int]:
    """The exact solver's first tour: LKH-3 (on `weights` when given) where elkai is installed,
    else 2-opt on the coordinates (any tour is a valid incumbent)."""
    try:
        import elkai  # noqa: F401
    except ImportError:
        return _two_opt_tour(coords)
    return _lkh_tour(coords, seed, runs=1, time_limit=None, weights=weights)


def solve_lkh(instance: dict[str, np.ndarray], time_limit: float, seed: int) -> SolverResult:
    """LKH-3 through elkai with `LKH_RUNS` runs; `time_limit` bounds the search phase only.

    LKH's candidate-set preprocessing is not counted by its TIME_LIMIT (it takes ~0.02 s at
    n = 100 and tens of seconds at n = 2000). Seeds below 1 are mapped to 1.
    """
    coords = instance_coords(instance)
    weights = instance_weights(instance)
    start = time.perf_counter()
    tour = _lkh_tour(coords, seed, LKH_RUNS, time_limit, weights)
    elapsed = time.perf_counter() - start
    return SolverResult(_length(coords, weights, tour), tour, elapsed, status="heuristic")


def solve_ortools(instance: dict[str, np.ndarray], time_limit: float, seed: int) -> SolverResult:
    """OR-Tools routing: path-cheapest-arc start, then guided local search until `time_limit`.

    Arc costs are distances * SCALE rounded; OR-Tools routing is deterministic, so `seed` is
    unused.
    """
    coords = instance_coords(instance)
    weights = instance_weights(instance)
    start = time.perf_counter()
    n = len(coords)
    if weights is not None and (weights == np.round(weights)).all():
        cost = np.asarray(weights, np.int64).tolist()
    else:
        dist = distance_matrix(coords) if weights is None else np.asarray(weights, np.float64)
        cost = np.rint(dist * SCALE).astype(np.int64).tolist()
    manager = pywrapcp.RoutingIndexManager(n, 1, 0)
    routing = pywrapcp.RoutingModel(manager)

    def arc_cost(i: int, j: int) -> int:
        return cost[manager.IndexToNode(i)][manager.IndexToNode(j)]

    routing.SetArcCostEvaluatorOfAllVehicles(routing.RegisterTransitCallback(arc_cost))
    params = pywrapcp.DefaultRoutingSearchParameters()
    params.first_solution_strategy = routing_enums_pb2.FirstSolutionStrategy.PATH_CHEAPEST_ARC
    params.local_search_metaheuristic = (
        routing_enums_pb2.LocalSearchMetaheuristic.GUIDED_LOCAL_SEARCH
    )
    params.time_limit.FromMilliseconds(max(int(time_limit * 1000), 1))
    solution = routing.SolveWithParameters(params)
    if solution is None:
        raise RuntimeError("OR-Tools routing found no TSP tour.")
    index, tour = routing.Start(0), []
    while not routing.IsEnd(index):
        tour.append(manager.IndexToNode(index))
        index = solution.Value(routing.NextVar(index))
    elapsed = time.perf_counter() - start
    return SolverResult(_length(coords, weights, tour), tour, elapsed, status="heuristic")


def _components(n: int, iu: np.ndarray, ju: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Connected-component label per node of the support graph {e : x_e > eps}."""
    sup = x > _EPS
    graph = coo_matrix((np.ones(int(sup.sum())), (iu[sup], ju[sup])), shape=(n, n))
    return connected_components(graph, directed=False)[1]


def _phase_cuts(n: int, weights: np.ndarray) -> list[np.ndarray]:
    """Node sets S with cut weight x(delta(S)) < 2, from the phases of Stoer-Wagner.

    `weights` (n, n) symmetric support weights. Each phase's last vertex (a merged group of
    original nodes) against the rest is a cut; all cuts lighter than 2 are returned.
    """
    w = weights.copy()
    groups = np.eye(n, dtype=bool)
    alive = np.ones(n, dtype=bool)
    cuts: list[np.ndarray] = []
    for _ in range(n - 1):
        nodes = np.flatnonzero(alive)
        added = np.zeros(n, dtype=bool)
        conn = np.zeros(n)
        prev = last = nodes[0]
        added[last] = True
        conn += w[last]
        for _ in range(len(nodes) - 1):
            conn_masked = np.where(alive & ~added, conn, -np.inf)
            prev, last = last, int(np.argmax(conn_masked))
            cut_value = conn[last]
            added[last] = True
            conn += w[last]
        if cut_value < 2 - _EPS:
            cuts.append(groups[last].copy())
        groups[prev] |= groups[last]
        alive[last] = False
        w[prev] += w[last]
        w[:, prev] += w[:, last]
        w[prev, prev] = 0
        w[last] = 0
        w[:, last] = 0
    return cuts


def _subtour_sets(n: int, iu: np.ndarray, ju: np.ndarray, x: np.ndarray) -> list[np.ndarray]:
    """Violated subtour-elimination sets: components, then (if connected) light min-cut phases."""
    labels = _components(n, iu, ju, x)
    if labels.max() > 0:
        return [labels == c for c in range(labels.max() + 1)]
    weights = np.zeros((n, n))
    weights[iu, ju] = x
    weights[ju, iu] = x
    return _phase_cuts(n, weights)


def _add_cut(
    solver: pywraplp.Solver,
    variables: dict[int, object],
    iu: np.ndarray,
    ju: np.ndarray,
    subset: np.ndarray,
) -> None:
    """Add x(E(S)) <= |S| - 1 over the smaller side S of the cut."""
    if subset.sum() > len(subset) // 2:
        subset = ~subset
    inside = np.flatnonzero(subset[iu] & subset[ju])
    _constraint(
        solver,
        [variables[e] for e in inside.tolist() if e in variables],
        -np.inf,
        int(subset.sum()) - 1,
    )


class _Deadline:
    """Remaining-time bookkeeping for the solve loop."""

    def __init__(self, time_limit: float) -> None:
        self.end = time.perf_counter() + time_limit

    def left(self) -> float:
        return self.end - time.perf_counter()


def _mip_backend() -> pywraplp.Solver:
    """CBC when linked in, else SCIP (both ship with the OR-Tools wheel)."""
    for name in ("CBC", "SCIP"):
        solver = pywraplp.Solver.CreateSolver(name)
        if solver is not None:
            return solver
    raise RuntimeError("OR-Tools has neither CBC nor SCIP linked in.")


def _lp_bound(
    dist: np.ndarray, iu: np.ndarray, ju: np.ndarray, deadline: _Deadline
) -> tuple[float, np.ndarray, list[np.ndarray]] | None:
    """Subtour LP (degree constraints plus separated subtour cuts) by GLOP.

    Returns the LP value, the reduced cost per edge and the cuts it needed, or None when the
    deadline passes first.
    """
    n = dist.shape[0]
    lp = pywraplp.Solver.CreateSolver("GLOP")
    x = {e: lp.NumVar(0, 1, "") for e in range(len(iu))}
    _build(lp, x, dist, iu, ju)
    cuts: list[np.ndarray] = []
    while deadline.left() > 0:
        lp.SetTimeLimit(max(int(deadline.left() * 1000), 1))
        if lp.Solve() != pywraplp.Solver.OPTIMAL:
            return None
        values = np.array([x[e].solution_value() for e in range(len(iu))])
        new = _subtour_sets(n, iu, ju, values)
        if not new:
            reduced = np.array([x[e].reduced_cost() for e in range(len(iu))])
            return lp.Objective().Value(), reduced, cuts
        for subset in new:
            _add_cut(lp, x, iu, ju, subset)
        cuts.extend(new)
    return None


def _constraint(solver: pywraplp.Solver, terms: list, lb: float, ub: float) -> None:
    """lb <= sum(terms) <= ub through the low-level API (the natural API is slow at this size)."""
    if terms:
        ct = solver.Constraint(lb, ub)
        for var in terms:
            ct.SetCoefficient(var, 1.0)


def _build(
    solver: pywraplp.Solver, x: dict, dist: np.ndarray, iu: np.ndarray, ju: np.ndarray
) -> None:
    """Objective sum(d_e x_e) and degree-2 constraints over the edge variables `x`."""
    n = dist.shape[0]
    incident: list[list[object]] = [[] for _ in range(n)]
    objective = solver.Objective()
    for e, var in x.items():
        incident[iu[e]].append(var)
        incident[ju[e]].append(var)
        objective.SetCoefficient(var, float(dist[iu[e], ju[e]]))
    objective.SetMinimization()
    for terms in incident:
        _constraint(solver, terms, 2, 2)


def _edges_to_tour(n: int, iu: np.ndarray, ju: np.ndarray, chosen: np.ndarray) -> list[int]:
    """Node order of a Hamiltonian cycle given as its n edges."""
    neighbours: list[list[int]] = [[] for _ in range(n)]
    for e in np.flatnonzero(chosen).tolist():
        neighbours[iu[e]].append(int(ju[e]))
        neighbours[ju[e]].append(int(iu[e]))
    tour, prev = [0], -1
    while len(tour) < n:
        here = tour[-1]
        nxt = neighbours[here][0] if neighbours[here][0] != prev else neighbours[here][1]
        prev = here
        tour.append(nxt)
    return tour


def solve_exact(instance: dict[str, np.ndarray], time_limit: float, seed: int) -> SolverResult:
    """Branch-and-cut with lazy DFJ subtour cuts on OR-Tools' MIP (CBC), exact float64 costs
    (the instance's `weights` when it has them).

    An LKH-3 tour (2-opt without the optional elkai) is the incumbent. The subtour LP (GLOP,
    cuts from components and min-cut phases) gives a bound and reduced costs; edges whose
    reduced cost proves them worse than the incumbent are dropped. The MIP over the rest is then
    re-solved, adding a cut per subtour of its solution, until it is one tour. On timeout the
    incumbent is returned with the best bound.
    """
    coords = instance_coords(instance)
    weights = instance_weights(instance)
    start = time.perf_counter()
    deadline = _Deadline(time_limit)
    n = len(coords)
    dist = distance_matrix(coords) if weights is None else np.asarray(weights, np.float64)
    tour = _incumbent(coords, seed, weights)
    best = _length(coords, weights, tour)
    iu, ju = np.triu_indices(n, 1)

    def result(bound: float | None, status: str) -> SolverResult:
        bound = None if bound is None else min(bound, best)
        proven = bound is not None and best - bound <= _OPT_TOL * max(1.0, best)
        elapsed = time.perf_counter() - start
        return SolverResult(best, tour, elapsed, bound, proven, "optimal" if proven else status)

    lp = _lp_bound(dist, iu, ju, deadline)
    if lp is None:
        return result(None, "time_limit")
    bound, reduced, cuts = lp
    if best - bound <= _OPT_TOL * max(1.0, best):
        return result(bound, "optimal")
    keep = np.flatnonzero(bound + reduced <= best + _FIX_TOL * max(1.0, best))
    mip = _mip_backend()
    x = {int(e): mip.BoolVar("") for e in keep}
    _build(mip, x, dist, iu, ju)
    for subset in cuts:
        _add_cut(mip, x, iu, ju, subset)
    params = pywraplp.MPSolverParameters()
    params.SetDoubleParam(params.RELATIVE_MIP_GAP, _OPT_TOL)
    while deadline.left() > 0:
        mip.SetTimeLimit(max(int(deadline.left() * 1000), 1))
        status = mip.Solve(params)
        if status == pywraplp.Solver.INFEASIBLE:  # only if LP tolerances dropped a needed edge
            return result(bound, "restricted_mip_infeasible")
        if status != pywraplp.Solver.OPTIMAL:
            return result(max(bound, mip.Objective().BestBound()), "time_limit")
        bound = max(bound, mip.Objective().BestBound())
        chosen = np.zeros(len(iu), dtype=bool)
        chosen[[e for e, v in x.items() if v.solution_value() > 0.5]] = True
        labels = _components(n, iu, ju, chosen.astype(np.float64))
        if labels.max() == 0:
            candidate = _rotate_to_zero(_edges_to_tour(n, iu, ju, chosen))
            length = _length(coords, weights, candidate)
            if length < best:
                tour, best = candidate, length
            return result(min(bound, best), "optimal")
        for c in range(labels.max() + 1):
            _add_cut(mip, x, iu, ju, labels == c)
    return result(bound, "time_limit")


SOLVERS: dict[str, Solver] = {"exact": solve_exact, "lkh": solve_lkh, "ortools": solve_ortools}
