"""nco-import model=bq_cvrp: the imported policy gives the authors' BQ-CVRP logits and routes.

Oracle: their cvrp/bq_network.py with seeded random weights (tests/reference_code.py), fed the
batches their cvrp/trajectory.py builds: tokens [depot, start node, remaining], the origin with
its own demand, no start token at the depot, and two logits per node with the depot's dropped.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from nco import checkpoint
from nco.problems.cvrp import CVRPEnv
from nco.problems.cvrp.types import CVRPState
from nco.search import greedy
from tests.reference_code import import_saved, requires_reference, small_reference

pytestmark = requires_reference


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> tuple[torch.nn.Module, Path]:
    """Their BQ-CVRP network (d 32, 3 layers, 4 heads, ff 64) and its nco import."""
    network = "cvrp.bq_network.BQPolicyNetwork"
    net = small_reference("cvrp.config.CVRPConfig", network, 1, dim=32, blocks=3, heads=4, ff=64)
    return net, import_saved(net, "bq_cvrp", tmp_path_factory.mktemp("cvrp"), num_nodes=50, heads=4)


def reference_batch(coords, demands, capacity, origin, remaining, free) -> dict:
    """Their network input for rows at one depth (lists per row; origin 0 = at the depot)."""
    start = origin[0] == 0
    rows = [([0] if start else [0, o]) + r for o, r in zip(origin, remaining, strict=True)]
    cap = torch.tensor(capacity, dtype=torch.float64)[:, None]
    dem = torch.stack([demands[i, t] for i, t in enumerate(rows)]).double()
    dem[:, 0] = 0.0
    free_t = torch.tensor(free, dtype=torch.float64)[:, None]
    if start:
        mask = torch.zeros(len(rows), 2 * len(remaining[0]), dtype=torch.bool)
        mask[:, ::2] = True  # from the depot every customer is reached via the depot
    else:
        mask = (free_t - dem[:, 1:] < 0)[:, :, None].repeat(1, 1, 2)
        mask[:, :, 1] = False
        mask = mask.view(len(rows), -1)
        mask[:, :2] = True  # the start node itself
    return {
        "nodes": torch.stack([coords[i, t] for i, t in enumerate(rows)]).float(),
        "demands": (dem / cap).float(),
        "current_capacity": (free_t / cap).float(),
        "start_node_mask": torch.tensor([[1.0, 0.0] if start else [0.0, 1.0]] * len(rows)),
        "action_mask": mask,
    }


def reference_logits(net: torch.nn.Module, state: CVRPState) -> torch.Tensor:
    """(B, 2r) logits of their network for the remaining customers of `state`, in order."""
    batch = reference_batch(
        state.coords, state.demands, state.capacity.tolist(), state.origin.tolist(),
        state.remaining.tolist(), state.free.tolist(),
    )  # fmt: skip
    with torch.no_grad():
        logits = net(batch)
    return logits if int(state.origin[0]) == 0 else logits[:, 2:]


def random_state(n: int, steps: int, seed: int) -> CVRPState:
    """The state after `steps` random feasible actions on 8 random instances of size n."""
    gen = torch.Generator().manual_seed(seed)
    env = CVRPEnv(n, capacity=30, capacity_range=(10, 40))  # varied capacities, many refills
    state = env.reset(env.generate(8, gen))
    for _ in range(steps):
        state = env.step(
            state, torch.multinomial(env.action_mask(state).double(), 1, generator=gen)[:, 0]
        )
    return state


@pytest.mark.parametrize(("n", "steps"), [(5, 0), (12, 5), (50, 0), (50, 23), (50, 49), (20, 18)])
def test_logits_equal_the_reference_network(imported, n: int, steps: int) -> None:
    """Same logits (1e-5, fp32; same -inf) at the depot, mid-route and with one customer left."""
    net, path = imported
    state = random_state(n, steps, seed=n + steps)
    with torch.no_grad():
        ours = checkpoint.load(path).policy(state)
    pairs = (2 * (state.remaining - 1)).unsqueeze(-1) + torch.arange(2)
    ours = ours.gather(1, pairs.flatten(1))
    torch.testing.assert_close(ours, reference_logits(net, state), atol=1e-5, rtol=1e-5)


def reference_greedy(net: torch.nn.Module, instances) -> list[list[int]]:
    """Argmax at every step with their network, rows batched: the actions 2 (c - 1) + via."""
    b, n = instances.demands.shape
    coords = torch.cat([instances.depot[:, None], instances.locs], 1)
    demands = torch.cat([torch.zeros(b, 1, dtype=torch.long), instances.demands], 1)
    capacity = instances.capacity.tolist()
    origin, free, remaining = [0] * b, list(capacity), [list(range(1, n + 1)) for _ in range(b)]
    actions: list[list[int]] = [[] for _ in range(b)]
    for _ in range(n):
        with torch.no_grad():
            picks = net(reference_batch(coords, demands, capacity, origin, remaining, free))
        shift = 0 if origin[0] == 0 else 1
        for i, a in enumerate(picks.argmax(1).tolist()):
            customer, via = remaining[i].pop(a // 2 - shift), a % 2
            free[i] = (capacity[i] if via else free[i]) - int(demands[i, customer])
            origin[i] = customer
            actions[i].append(2 * (customer - 1) + via)
    return actions


def test_greedy_routes_equal_the_reference_decode(imported) -> None:
    """nco's greedy decoder with the imported policy gives their routes on 20 CVRP50."""
    net, path = imported
    loaded = checkpoint.load(path)
    instances = CVRPEnv(50).generate(20, torch.Generator().manual_seed(4))
    ours = greedy(loaded.policy, loaded.env, instances).best().actions
    assert ours.tolist() == reference_greedy(net, instances)
    assert loaded.model["form"] == "paper" and loaded.env.num_customers == 50
