"""search.augment and search.starts (nco.decode) with any decoder and routing env."""

from __future__ import annotations

import pytest
import torch

from nco.decode import decode
from nco.inference import describe_search
from nco.problems.cvrp import CVRPEnv
from nco.problems.cvrp.am_env import AMCVRPEnv
from nco.problems.tsp import TSPEnv
from nco.problems.tsp.am_env import AMTSPEnv
from nco.problems.tsp.env import tour_length
from nco.problems.tsp.types import TSPState


class Nearest(torch.nn.Module):
    """Logits -10 x distance from the current node (BQ TSP states): greedy = nearest neighbour."""

    def forward(self, state: TSPState) -> torch.Tensor:
        here = state.coords[torch.arange(state.batch_size), state.origin].unsqueeze(1)
        return -10.0 * (state.coords - here).norm(dim=-1)


class Uniform(torch.nn.Module):
    """Equal logits for every action (any env): a deterministic decoder picks the lowest."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.width = width

    def forward(self, state) -> torch.Tensor:
        return torch.zeros(state.batch_size, self.width)


def test_bq_tsp_starts_are_rotations_with_valid_tours() -> None:
    """Start s is nearest neighbour from node s; every returned tour is a permutation with
    node 0 first, and its length is the objective."""
    env = TSPEnv(9)
    inst = env.generate(3, torch.Generator().manual_seed(0))
    sols = decode(Nearest(), env, inst, {"method": "greedy", "starts": 9})
    assert sols.actions.shape[:2] == (3, 9)
    for i in range(3):
        for s in range(9):
            tour = torch.cat([torch.zeros(1, dtype=torch.long), sols.actions[i, s]])
            assert sorted(tour.tolist()) == list(range(9))
            length = tour_length(inst.coords[i : i + 1], tour.view(1, -1))
            assert torch.allclose(length, -sols.objective[i, s : s + 1])
    plain = decode(Nearest(), env, inst, {"method": "greedy"})
    assert torch.allclose(sols.objective[:, 0], plain.objective[:, 0])  # start 0 = plain
    assert bool((sols.best().objective >= plain.best().objective).all())


@pytest.mark.parametrize("method", ["greedy", "beam_search", "sample"])
def test_augment_copies_keep_labels_and_identity_first(method: str) -> None:
    env = TSPEnv(8)
    inst = env.generate(2, torch.Generator().manual_seed(1))
    cfg = {"method": method, **({"beam_width": 2} if method == "beam_search" else {})}
    if method == "sample":
        cfg["num_samples"] = 2
    g = torch.Generator().manual_seed(2)
    plain = decode(Nearest(), env, inst, cfg, torch.Generator().manual_seed(2))
    aug = decode(Nearest(), env, inst, {**cfg, "augment": 8}, g)
    width = plain.actions.shape[1]
    assert aug.actions.shape[1] == 8 * width
    if method != "sample":
        assert torch.equal(aug.actions[:, :width], plain.actions)
    for i in range(2):  # every copy's tour, scored on the original instance, is its objective
        for s in range(aug.actions.shape[1]):
            tour = torch.cat([torch.zeros(1, dtype=torch.long), aug.actions[i, s]])
            length = tour_length(inst.coords[i : i + 1], tour.view(1, -1))
            assert torch.allclose(length, -aug.objective[i, s : s + 1], atol=1e-9)


def test_starts_in_the_am_forms_put_the_start_first() -> None:
    tsp = AMTSPEnv(6)
    inst = tsp.generate(2, torch.Generator().manual_seed(3))
    sols = decode(Uniform(6), tsp, inst, {"method": "greedy", "starts": 4, "augment": 2})
    assert sols.actions.shape[1] == 8
    assert sols.actions[0, :, 0].tolist() == [0, 1, 2, 3, 0, 1, 2, 3]
    cvrp = AMCVRPEnv(5, capacity=20)
    inst = cvrp.generate(2, torch.Generator().manual_seed(4))
    sols = decode(Uniform(6), cvrp, inst, {"method": "greedy", "starts": 3})
    assert sols.actions[1, :, 0].tolist() == [1, 2, 3]
    bq = CVRPEnv(5, capacity=20)
    sols = decode(Uniform(10), bq, inst, {"method": "greedy", "starts": 3, "augment": 8})
    assert sols.actions[0, :3, 0].tolist() == [1, 3, 5]  # via the depot to customers 1, 2, 3


def test_bad_settings_are_refused() -> None:
    env = TSPEnv(5)
    inst = env.generate(1, torch.Generator().manual_seed(5))
    with pytest.raises(ValueError, match="augment in 1..8"):
        decode(Nearest(), env, inst, {"method": "greedy", "augment": 9})
    with pytest.raises(ValueError, match="exceeds the 5 possible starts"):
        decode(Nearest(), env, inst, {"method": "greedy", "starts": 6})


def test_starts_share_one_encoding_per_instance_copy() -> None:
    """With `instance_encoding`, the K starts of an instance read one encoding; the search is
    the one that encodes every start's root."""
    from nco.models.pomo import POMOTSPPolicy

    torch.manual_seed(0)
    policy = POMOTSPPolicy(16, 4, 4, 2, 32).eval()
    env = AMTSPEnv(7)
    inst = env.generate(3, torch.Generator().manual_seed(6))
    seen = []
    original = policy.encode

    def counting(roots):
        seen.append(roots.batch_size)
        return original(roots)

    policy.encode = counting
    cfg = {"method": "beam_search", "beam_width": 2, "starts": 7, "augment": 2}
    shared = decode(policy, env, inst, cfg)
    assert seen == [3 * 2]
    policy.instance_encoding = False
    every = decode(policy, env, inst, cfg)
    assert seen == [6, 3 * 2 * 7]
    assert torch.equal(shared.actions, every.actions)
    assert torch.allclose(shared.objective, every.objective)


def test_method_label_names_copies_only_where_they_are_on() -> None:
    """Results and plots label a search by its parameters; augment 1 and no starts (every
    search config's defaults) are left out, augment 8 and starts 4 are named."""
    plain = {"method": "sbs", "beam_width": 16, "top_p": 0.8, "augment": 1, "starts": None}
    assert describe_search(plain) == "sbs(beam_width=16, top_p=0.8)"
    on = {**plain, "augment": 8, "starts": 4, "batch_size": 2}
    assert describe_search(on) == "sbs(beam_width=16, top_p=0.8, augment=8, starts=4)"
    assert describe_search({"method": "greedy", "augment": 1, "starts": None}) == "greedy"
