"""Classical CVRP baselines: PyVRP (`hgs`) and OR-Tools routing with guided local search.

The `hgs` name is kept from the papers' HGS row. PyVRP 0.14 runs an iterated local search
around HGS's local search operators; it replaced the hybrid genetic search in PyVRP 0.13.

Every solver follows `nco.solver.Solver`: it takes one instance `{"depot": (2,), "locs": (n, 2),
"demands": (n,) integers, "capacity": ()}`, a time limit in seconds and a seed, and returns the
routes as lists of 1-based customer ids (depot = 0 is implicit at both ends of each route) with
the total distance recomputed in float64 from exact Euclidean distances. An instance read from a
CVRPLIB file also holds `weights` (n + 1, n + 1, depot first), the file's own distances
(EUC_2D rounded as PyVRP's `round_func="round"`, CEIL_2D, ATT, GEO, EXPLICIT): the solvers then
optimise those directly and return the cost in them.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pyvrp
from ortools.constraint_solver import pywrapcp, routing_enums_pb2
from pyvrp.stop import MaxRuntime

from nco.problems.cvrp.routes import routes_cost
from nco.solver import Solver, SolverResult

SCALE = 1e6  # PyVRP and OR-Tools need integer distances: Euclidean distance times this, rounded
_MAX_PENALTY = 1e10  # per unit of excess load in scaled distance; PyVRP's 1e5 is 0.1 distance


def instance_fields(
    instance: dict[str, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Depot (2,), customer locations (n, 2), integer demands (n,) and capacity, checked."""
    missing = {"depot", "locs", "demands", "capacity"} - set(instance)
    if missing:
        raise ValueError(f"CVRP instance: missing fields {sorted(missing)}.")
    depot = np.asarray(instance["depot"], dtype=np.float64).reshape(-1)
    locs = np.asarray(instance["locs"], dtype=np.float64)
    demands = np.asarray(instance["demands"])
    if np.size(instance["capacity"]) != 1:
        raise ValueError("CVRP instance: expected one 'capacity' value per instance.")
    capacity = float(np.asarray(instance["capacity"]).reshape(()))
    if depot.shape != (2,) or locs.ndim != 2 or locs.shape[1] != 2 or len(locs) < 1:
        raise ValueError(
            f"CVRP instance: expected 'depot' (2,) and 'locs' (n >= 1, 2), got {depot.shape} "
            f"and {locs.shape}."
        )
    if demands.shape != (len(locs),) or not np.all(demands == np.round(demands)):
        raise ValueError(f"CVRP instance: expected integer 'demands' of shape ({len(locs)},).")
    if capacity != round(capacity) or capacity < 1:
        raise ValueError(f"CVRP instance: expected a positive integer 'capacity', got {capacity}.")
    demands = demands.astype(np.int64)
    if demands.min() < 0 or demands.max() > capacity:
        raise ValueError(f"CVRP instance: expected 'demands' in 0..capacity ({int(capacity)}).")
    return depot, locs, demands, int(capacity)


def check_routes(demands: np.ndarray, capacity: int, routes: list[list[int]]) -> None:
    """Raise ValueError unless the routes visit every customer once within capacity."""
    n = len(demands)
    visited = sorted(c for route in routes for c in route)
    if visited != list(range(1, n + 1)):
        raise ValueError(f"CVRP routes: expected each customer 1..{n} exactly once.")
    for route in routes:
        load = int(demands[np.asarray(route, dtype=np.int64) - 1].sum())
        if load > capacity:
            raise ValueError(f"CVRP routes: route {route} carries {load} > capacity {capacity}.")


def _scaled_distances(
    depot: np.ndarray, locs: np.ndarray, weights: np.ndarray | None = None
) -> np.ndarray:
    """Integer arc costs: the file's own `weights` when integral, else distances x SCALE."""
    if weights is not None:
        weights = np.asarray(weights)
        n = len(locs) + 1
        if weights.shape != (n, n) or (weights < 0).any():
            raise ValueError(f"CVRP instance: expected 'weights' ({n}, {n}) >= 0.")
        if (weights == np.round(weights)).all():
            return weights.astype(np.int64)
        return np.rint(weights * SCALE).astype(np.int64)
    nodes = np.vstack([depot[None, :], locs])
    dist = np.sqrt(((nodes[:, None, :] - nodes[None, :, :]) ** 2).sum(-1))
    return np.rint(dist * SCALE).astype(np.int64)


def _result(
    instance_data: tuple, routes: list[list[int]], start: float, weights: np.ndarray | None = None
) -> SolverResult:
    depot, locs, demands, capacity = instance_data
    routes = [r for r in routes if r]
    check_routes(demands, capacity, routes)
    elapsed = time.perf_counter() - start
    if weights is None:
        cost = routes_cost(depot, locs, routes)
    else:
        w = np.asarray(weights, np.float64)
        cost = float(sum(w[np.r_[0, r], np.r_[r, 0]].sum() for r in routes))
    return SolverResult(cost, routes, elapsed, status="heuristic")


def solve_hgs(instance: dict[str, np.ndarray], time_limit: float, seed: int) -> SolverResult:
    """PyVRP's default search on integer distances for `time_limit` seconds.

    The fleet is unlimited in effect (one vehicle per customer); the load penalty cap is raised
    so that excess load always costs more than it saves on scaled unit-square distances.
    """
    fields = instance_fields(instance)
    depot, locs, demands, capacity = fields
    start = time.perf_counter()
    n = len(locs)
    weights = instance.get("weights")
    dist = _scaled_distances(depot, locs, weights)
    nodes = np.vstack([depot[None, :], locs])
    data = pyvrp.ProblemData(
        locations=[pyvrp.Location(float(x), float(y)) for x, y in nodes],
        clients=[pyvrp.Client(i + 1, delivery=[int(demands[i])]) for i in range(n)],
        depots=[pyvrp.Depot(0)],
        vehicle_types=[pyvrp.VehicleType(n, capacity=[capacity])],
        # pyvrp 0.14's stubs write an int matrix as `np.ndarray[int]`, numpy's shape parameter.
        distance_matrices=[dist],  # type: ignore[list-item]
        duration_matrices=[np.zeros_like(dist)],  # type: ignore[list-item]
    )
    params = pyvrp.SolveParams(penalty=pyvrp.PenaltyParams(max_penalty=_MAX_PENALTY))
    remaining = max(time_limit - (time.perf_counter() - start), 0.01)
    res = pyvrp.solve(
        data, MaxRuntime(remaining), seed=seed, collect_stats=False, display=False, params=params
    )
    if not res.is_feasible():
        raise RuntimeError("PyVRP found no feasible CVRP solution.")
    routes = [[act.idx + 1 for act in route if act.is_client()] for route in res.best.routes()]
    return _result(fields, routes, start, weights)


def _fleet_size(demands: np.ndarray, capacity: int) -> int:
    """First-fit-decreasing bin count plus 25% (at least 2) spare vehicles."""
    bins: list[int] = []
    for d in sorted(demands.tolist(), reverse=True):
        for k, load in enumerate(bins):
            if load + d <= capacity:
                bins[k] += d
                break
        else:
            bins.append(d)
    return len(bins) + max(2, math.ceil(0.25 * len(bins)))


def solve_ortools(instance: dict[str, np.ndarray], time_limit: float, seed: int) -> SolverResult:
    """OR-Tools routing: path-cheapest-arc start, then guided local search until `time_limit`.

    The fleet is a first-fit-decreasing bin count plus spares; OR-Tools routing is
    deterministic, so `seed` is unused.
    """
    fields = instance_fields(instance)
    depot, locs, demands, capacity = fields
    start = time.perf_counter()
    n = len(locs)
    weights = instance.get("weights")
    dist = _scaled_distances(depot, locs, weights).tolist()
    load = [0, *demands.tolist()]
    vehicles = _fleet_size(demands, capacity)
    manager = pywrapcp.RoutingIndexManager(n + 1, vehicles, 0)
    routing = pywrapcp.RoutingModel(manager)

    def arc_cost(i: int, j: int) -> int:
        return dist[manager.IndexToNode(i)][manager.IndexToNode(j)]

    def demand(i: int) -> int:
        return load[manager.IndexToNode(i)]

    routing.SetArcCostEvaluatorOfAllVehicles(routing.RegisterTransitCallback(arc_cost))
    demand_cb = routing.RegisterUnaryTransitCallback(demand)
    routing.AddDimensionWithVehicleCapacity(demand_cb, 0, [capacity] * vehicles, True, "load")
    params = pywrapcp.DefaultRoutingSearchParameters()
    params.first_solution_strategy = routing_enums_pb2.FirstSolutionStrategy.PATH_CHEAPEST_ARC
    params.local_search_metaheuristic = (
        routing_enums_pb2.LocalSearchMetaheuristic.GUIDED_LOCAL_SEARCH
    )
    remaining = max(time_limit - (time.perf_counter() - start), 0.001)
    params.time_limit.FromMilliseconds(max(int(remaining * 1000), 1))
    solution = routing.SolveWithParameters(params)
    if solution is None:
        raise RuntimeError("OR-Tools routing found no feasible CVRP solution.")
    routes = []
    for v in range(vehicles):
        index, route = solution.Value(routing.NextVar(routing.Start(v))), []
        while not routing.IsEnd(index):
            route.append(manager.IndexToNode(index))
            index = solution.Value(routing.NextVar(index))
        routes.append(route)
    return _result(fields, routes, start, weights)


SOLVERS: dict[str, Solver] = {"hgs": solve_hgs, "ortools": solve_ortools}
