"""GomokuNet: one logit per cell from the mover's view, trainable, batch-independent in eval,
and in LightZero's form the logits of the authors' AlphaZero net with the same weights.

The reference code in ../shared/reference/gumbeldore is the oracle for the last tests (skipped
when absent)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import hydra.utils
import pytest
import torch
from omegaconf import OmegaConf

from nco.models.gomoku_net import GomokuNet
from nco.problems.gomoku import GomokuEnv, GomokuState
from nco.search import greedy

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "gumbeldore"


def random_states(num: int, size: int, seed: int) -> GomokuState:
    """Boards with a random third of the cells taken by either player."""
    gen = torch.Generator().manual_seed(seed)
    board = torch.randint(-1, 2, (num, size, size), generator=gen).to(torch.int8)
    board[torch.rand(num, size, size, generator=gen) < 0.66] = 0
    return GomokuState(
        board=board,
        done=torch.zeros(num, dtype=torch.bool),
        winner=torch.zeros(num, dtype=torch.int8),
    )


def test_one_logit_per_cell_and_perspective_matters() -> None:
    """Logits are Float[B, N*N]; swapping the mover's and the opponent's stones changes them."""
    torch.manual_seed(0)
    net = GomokuNet(board_size=7, channels=8).eval()
    states = random_states(5, 7, seed=0)
    assert torch.equal(net(states), torch.zeros(5, 49))  # zero last layer: uniform at first
    torch.nn.init.normal_(net.logits.weight)
    logits = net(states)
    assert logits.shape == (5, 49) and logits.dtype == torch.float32
    swapped = GomokuState(board=-states.board, done=states.done, winner=states.winner)
    assert not torch.allclose(net(swapped), logits)


def test_eval_outputs_do_not_depend_on_the_batch() -> None:
    """In eval mode a row's logits are the same alone, in a batch, or repeated."""
    torch.manual_seed(0)
    net = GomokuNet(board_size=7, channels=8, zero_init=False).eval()
    states = random_states(6, 7, seed=1)
    full = net(states)
    alone = net(states.index(torch.tensor([3])))
    repeated = net(states.index(torch.tensor([3, 3, 0])))
    torch.testing.assert_close(alone[0], full[3])
    torch.testing.assert_close(repeated[1], full[3])
    torch.testing.assert_close(repeated[2], full[0])


def test_fits_a_fixed_target_in_a_few_steps() -> None:
    """Adam fits one target cell per board for 8 boards: loss falls and argmax hits the targets."""
    torch.manual_seed(0)
    net = GomokuNet(board_size=7, channels=16)
    states = random_states(8, 7, seed=2)
    empty = (states.board == 0).flatten(1)
    targets = torch.multinomial(empty.float(), 1, generator=torch.Generator().manual_seed(0))
    targets = targets.squeeze(1)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    losses = []
    for _ in range(60):
        loss = torch.nn.functional.cross_entropy(net(states), targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0]
    net.eval()
    assert torch.equal(net(states).argmax(1), targets)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"board_size": 4},
        {"channels": 0},
        {"blocks": -1},
        {"prediction_blocks": -1},
        {"head_channels": 0},
        {"head_hidden": -1},
    ],
)
def test_rejects_bad_config(kwargs: dict) -> None:
    """Sizes below their minimum are refused at construction."""
    with pytest.raises(ValueError, match="GomokuNet"):
        GomokuNet(**kwargs)


def test_rejects_boards_of_another_size() -> None:
    """A 9x9 net refuses 7x7 boards."""
    with pytest.raises(ValueError, match="9x9"):
        GomokuNet(board_size=9)(random_states(2, 7, seed=0))


# gomoku_net: stem 2*32*9 + 64 = 640, 2 blocks x 2 x (32*32*9 + 64) = 37,120, head conv
# 32*16 + 16 + BN 32 = 560, MLP 1296*32 + 32 + LN 64 = 41,568, last 32*81 + 81 = 2,673.
@pytest.mark.parametrize(
    "name,channels,params",
    [
        ("gomoku_net.yaml", 32, 82_561),
        ("gomoku_net_v0.yaml", 32, 32_471),
        ("gomoku_net_tiny.yaml", 8, 5_917),
    ],
)
def test_hydra_configs_instantiate_with_the_problem(name: str, channels: int, params: int) -> None:
    """The model configs build a net whose board size follows problem.board_size (9 alone)."""
    alone = hydra.utils.instantiate(OmegaConf.load(CONFIGS / "model" / name))
    assert isinstance(alone, GomokuNet) and alone.board_size == 9
    assert alone.stem[0][0].out_channels == channels
    assert sum(p.numel() for p in alone.parameters()) == params
    cfg = OmegaConf.create(
        {"problem": OmegaConf.load(CONFIGS / "problem" / "gomoku.yaml"), "model": {}}
    )
    cfg.problem.board_size = 7
    cfg.model = OmegaConf.load(CONFIGS / "model" / name)
    env = hydra.utils.instantiate(cfg.problem.env)
    net = hydra.utils.instantiate(cfg.model)
    assert isinstance(env, GomokuEnv) and env.board_size == 7 and net.board_size == 7


def test_greedy_games_replay_to_the_same_results() -> None:
    """Greedy decoding over all openings of 7x7 plays complete games whose replay agrees."""
    torch.manual_seed(0)
    env = GomokuEnv(7)
    net = GomokuNet(board_size=7, channels=8).eval()
    instances = env.all_instances()
    with torch.no_grad():
        best = greedy(net, env, instances).best()
    final, _ = env.replay(instances, best.actions)
    torch.testing.assert_close(env.objective(final), best.objective)


def test_earlier_form_keeps_its_state_dict_keys() -> None:
    """gomoku_net_v0 has the parameter names and shapes of nco's earlier net (1 block in all,
    2-channel head without bias, one linear layer), so its checkpoints still load."""
    net = hydra.utils.instantiate(OmegaConf.load(CONFIGS / "model" / "gomoku_net_v0.yaml"))
    shapes = {k: tuple(v.shape) for k, v in net.state_dict().items() if "running" not in k}
    assert not any(k.startswith(("prediction", "mlp")) for k in shapes)
    assert shapes["head.0.0.weight"] == (2, 32, 1, 1) and "head.0.0.bias" not in shapes
    assert shapes["logits.weight"] == (81, 162)


def reference_model(size: int) -> torch.nn.Module:
    """The authors' AlphaZeroModel with their Gomoku settings (gomoku/config.py az_model_cfg)."""
    if not REFERENCE.is_dir():
        pytest.skip("../shared/reference is absent")
    stub = types.ModuleType("tsp.bq_network")  # the model imports only dict_to_cpu from it
    stub.dict_to_cpu = lambda d: d
    saved = {k: sys.modules.get(k) for k in ("tsp", "tsp.bq_network", "modules")}
    sys.modules["tsp"], sys.modules["tsp.bq_network"] = types.ModuleType("tsp"), stub
    sys.path.insert(0, str(REFERENCE))
    try:
        from modules.alphazero.alphazero_model import AlphaZeroModel

        return AlphaZeroModel(
            observation_shape=(2, size, size),
            action_space_size=size * size,
            num_res_blocks=1,
            num_channels=32,
        )
    finally:
        sys.path.remove(str(REFERENCE))
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


def copy_reference_weights(ref: torch.nn.Module, net: GomokuNet) -> None:
    """Load the reference net's policy-path weights into `net` (value head left out)."""
    r = ref.state_dict()
    rep, pred = "representation_network.", "prediction_network."
    names = {"stem.0.0": rep + "conv", "stem.0.1": rep + "norm"}
    for part, prefix in (("body", rep), ("prediction", pred)):
        for conv in (1, 2):
            for layer in (0, 1):
                names[f"{part}.0.body.{2 * (conv - 1)}.{layer}"] = (
                    f"{prefix}resblocks.0.conv{conv}.{layer}"
                )
    names |= {
        "head.0.0": pred + "conv1x1_policy",
        "head.0.1": pred + "norm_policy",
        "mlp.0": pred + "fc_policy_head.0",
        "mlp.1": pred + "fc_policy_head.1",
        "logits": pred + "fc_policy_head.3",
    }
    mine = net.state_dict()
    out = {}
    for key in mine:
        module, leaf = key.rsplit(".", 1)
        out[key] = r[f"{names[module]}.{leaf}"]
    net.load_state_dict(out)


@pytest.mark.parametrize("size", [9, 6])
def test_logits_equal_the_reference_network(size: int) -> None:
    """With the authors' AlphaZero weights copied in (randomised, incl. batch-norm statistics
    and the zero-initialised last layer), nco's net gives their policy logits in eval mode; the
    parameter count is theirs minus the value head's."""
    torch.manual_seed(0)
    ref = reference_model(size)
    with torch.no_grad():
        for p in ref.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
        for name, b in ref.named_buffers():
            if "running_var" in name:
                b.copy_(torch.rand_like(b) + 0.5)
            elif "running_mean" in name:
                b.copy_(torch.randn_like(b) * 0.1)
    ref.eval()
    net = GomokuNet(board_size=size).eval()
    value_params = sum(p.numel() for n, p in ref.named_parameters() if "value" in n)
    assert sum(p.numel() for p in net.parameters()) == (
        sum(p.numel() for p in ref.parameters()) - value_params
    )
    copy_reference_weights(ref, net)
    states = random_states(16, size, seed=3)
    planes = torch.stack([states.board == 1, states.board == -1], dim=1).float()
    with torch.no_grad():
        theirs, _ = ref(planes)
        torch.testing.assert_close(net(states), theirs, rtol=1e-5, atol=1e-5)


def test_eval_folds_batch_norm_into_the_convolutions() -> None:
    """Eval mode's folded convolutions give the logits of the layer-by-layer net with batch
    norm on its running statistics (randomised here), to float32 rounding."""
    torch.manual_seed(0)
    net = GomokuNet(board_size=9, zero_init=False)
    with torch.no_grad():
        for module in net.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-1, 1)
                module.running_mean.uniform_(-1, 1)
                module.running_var.uniform_(0.5, 2)
    states = random_states(32, 9, seed=4)
    net.train()
    for module in net.modules():  # the unfolded path, batch norm on running statistics
        if isinstance(module, torch.nn.BatchNorm2d):
            module.eval()
    with torch.no_grad():
        layered = net(states)
        folded = net.eval()(states)
    assert layered.abs().max() > 0.1
    torch.testing.assert_close(folded, layered, rtol=1e-5, atol=1e-5)


def test_untrained_reference_and_nco_nets_play_uniformly() -> None:
    """Both nets start with the zero last layer of LightZero's MLP: all logits 0."""
    ref = reference_model(9).eval()
    assert torch.equal(ref(torch.zeros(2, 2, 9, 9))[0], torch.zeros(2, 81))
    assert torch.equal(GomokuNet().eval()(random_states(2, 9, seed=0)), torch.zeros(2, 81))
