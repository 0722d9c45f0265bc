"""JSSPTransformer: job/machine renumbering symmetry, masking, batch independence, precision,
and packing (layers on the unscheduled operations only) equal to the full network."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf

import nco.models.jssp_transformer as jssp_transformer
from nco.env import cat
from nco.models.jssp_transformer import JSSPTransformer, pack_segments
from nco.models.layers import sinusoidal_encoding
from nco.problems.jssp import JSSPEnv, JSSPInstances, JSSPState
from nco.testing import random_steps

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "model"


def tiny_net(seed: int = 0, form: str = "paper") -> JSSPTransformer:
    """A tiny network with non-zero ReZero gates, so that every attention layer matters."""
    torch.manual_seed(seed)
    net = JSSPTransformer(dim=16, pairs=2, heads=2, ff_dim=32, form=form)
    for name, param in net.named_parameters():
        if "alpha" in name:
            torch.nn.init.uniform_(param, 0.5, 1.0)
    return net.eval()


def mid_episode(env: JSSPEnv, instances: JSSPInstances, steps: int, seed: int) -> JSSPState:
    """The state after `steps` random feasible actions (same random choices per row order)."""
    return random_steps(env, env.reset(instances), steps, torch.Generator().manual_seed(seed))


def relabel(state: JSSPState, jobs: torch.Tensor, machines: torch.Tensor) -> JSSPState:
    """The same partial schedule with jobs reordered by `jobs` and machine k renamed machines[k]."""
    inverse = machines.argsort()
    return JSSPState(
        durations=state.durations[:, jobs],
        machines=machines[state.machines[:, jobs]],
        next_op=state.next_op[:, jobs],
        job_ready=state.job_ready[:, jobs],
        machine_ready=state.machine_ready[:, inverse],
        start=state.start[:, jobs],
    )


def paper_logits(net: JSSPTransformer, state: JSSPState) -> torch.Tensor:
    """The network written as in paper D.4.2: machine-wise layers attend over the whole J*M
    sequence masked to equal machines (no folding), job-wise ALiBi from explicit positions."""
    b, j, m = state.durations.shape
    d, jm = net.dim, j * m
    unfinished = state.next_op < m
    nxt = state.next_op.clamp(max=m - 1)
    ready = torch.maximum(
        state.job_ready,
        state.machine_ready.gather(1, state.machines.gather(2, nxt[..., None])[..., 0]),
    )
    if net.form == "paper":  # eq. 33 over all jobs; a finished job's r uses its last machine
        ready = ready - ready.amin(1, keepdim=True)
    else:
        ready = ready - ready.masked_fill(~unfinished, float("inf")).amin(1, keepdim=True)
        ready = ready.masked_fill(~unfinished, 0.0)
    feats = torch.stack([state.durations, ready[..., None].expand(b, j, m)], -1).float() / 100
    x = net.embed(feats) + sinusoidal_encoding(torch.arange(m), d, net.form == "paper")
    scheduled = torch.arange(m) < state.next_op[..., None]
    slopes = torch.tensor([2 ** (-8 * (k + 1) / net.heads) for k in range(net.heads)])
    offsets = torch.arange(m)[None, :] - torch.arange(m)[:, None]  # key index - query index
    allowed = ~scheduled[:, :, None, :] | torch.eye(m, dtype=torch.bool)
    job_bias = torch.where(
        allowed.reshape(b * j, 1, m, m), slopes[:, None, None] * offsets, float("-inf")
    )
    flat_machines, flat_scheduled = state.machines.reshape(b, jm), scheduled.reshape(b, jm)
    same = flat_machines[:, :, None] == flat_machines[:, None, :]
    visible = ~flat_scheduled[:, None, :] | torch.eye(jm, dtype=torch.bool)
    machine_mask = (same & visible)[:, None]
    for job_layer, machine_layer in zip(net.job_layers, net.machine_layers, strict=True):
        x = job_layer(x.reshape(b * j, m, d), job_bias).reshape(b, jm, d)
        x = machine_layer(x, machine_mask).reshape(b, j, m, d)
    nxt_ops = x[torch.arange(b)[:, None], torch.arange(j)[None, :], nxt]
    final_mask = (unfinished[:, None, :] | torch.eye(j, dtype=torch.bool))[:, None]
    logits = net.head(net.final(nxt_ops, final_mask)).squeeze(-1)
    return logits.masked_fill(~unfinished, float("-inf"))


@pytest.mark.parametrize("form", ["paper", "nco1"])
@pytest.mark.parametrize("steps", [0, 9, 19])
def test_folded_network_equals_paper_formulation(steps: int, form: str) -> None:
    """Folding machines into the batch computes the same logits as full J*M masked attention."""
    env = JSSPEnv(5, 4)
    state = mid_episode(env, env.generate(3, torch.Generator().manual_seed(8)), steps, seed=3)
    net = tiny_net(1, form)
    with torch.no_grad():
        torch.testing.assert_close(net(state), paper_logits(net, state), atol=1e-5, rtol=0)


@pytest.mark.parametrize("steps", [0, 7, 17])
def test_job_permutation_equivariance_and_machine_invariance(steps: int) -> None:
    """Permuting jobs permutes the logits; renaming machines leaves them unchanged (to 1e-4)."""
    env = JSSPEnv(5, 4)
    instances = env.generate(3, torch.Generator().manual_seed(0))
    state = mid_episode(env, instances, steps, seed=1)
    net = tiny_net()
    jobs, machines = torch.tensor([3, 0, 4, 1, 2]), torch.tensor([2, 3, 1, 0])
    with torch.no_grad():
        base = net(state)
        permuted = net(relabel(state, jobs, torch.arange(4)))
        renamed = net(relabel(state, torch.arange(5), machines))
    torch.testing.assert_close(permuted, base[:, jobs], atol=1e-4, rtol=0)
    torch.testing.assert_close(renamed, base, atol=1e-4, rtol=0)
    assert not torch.allclose(base[:, 0], base[:, 1])  # logits differ across jobs


def test_finished_jobs_masked_without_nan() -> None:
    """Finished jobs get -inf, unfinished ones finite, even with one job left to schedule."""
    env = JSSPEnv(3, 3)
    instances = env.generate(2, torch.Generator().manual_seed(2))
    state = env.reset(instances)
    for job in [0, 0, 0, 1, 1, 1, 2, 2]:
        state = env.step(state, torch.tensor([job, job]))
        with torch.no_grad():
            logits = tiny_net()(state)
        feasible = env.action_mask(state)
        assert bool(torch.isfinite(logits[feasible]).all())
        assert bool((logits[~feasible] == float("-inf")).all())


def test_rows_are_independent_of_batch_composition() -> None:
    """A row's logits do not depend on which other rows share the batch."""
    env = JSSPEnv(4, 3)
    instances = env.generate(4, torch.Generator().manual_seed(3))
    state = mid_episode(env, instances, 5, seed=4)
    net = tiny_net()
    with torch.no_grad():
        full = net(state)
        part = net(state.index(torch.tensor([2, 0, 2])))
    torch.testing.assert_close(part, full[[2, 0, 2]], atol=1e-5, rtol=0)


def test_logits_depend_on_availability_times() -> None:
    """Shifting one job's ready time changes the logits: the start-time feature is used."""
    env = JSSPEnv(3, 3)
    state = mid_episode(env, env.generate(1, torch.Generator().manual_seed(5)), 2, seed=0)
    later = JSSPState(
        **{**state.__dict__, "job_ready": state.job_ready + torch.tensor([50.0, 0, 0])}
    )
    net = tiny_net()
    with torch.no_grad():
        assert not torch.allclose(net(state), net(later))


def test_bf16_close_to_fp32_and_bad_precision() -> None:
    """bf16 autocast returns float32 logits close to the fp32 ones; unknown precisions raise."""
    env = JSSPEnv(4, 3)
    state = mid_episode(env, env.generate(2, torch.Generator().manual_seed(6)), 3, seed=1)
    net = tiny_net()
    half = JSSPTransformer(dim=16, pairs=2, heads=2, ff_dim=32, precision="bf16")
    half.load_state_dict(net.state_dict())
    with torch.no_grad():
        out = half.eval()(state)
        ref = net(state)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, ref, atol=0.1, rtol=0.05)
    with pytest.raises(ValueError, match="precision"):
        JSSPTransformer(precision="fp16")


def test_gradients_reach_all_parameters() -> None:
    """A cross-entropy loss on the logits back-propagates into every parameter but the head's
    bias, which shifts all logits alike (the authors' network has it; its gradient is 0)."""
    env = JSSPEnv(4, 3)
    instances = env.generate(3, torch.Generator().manual_seed(7))
    state = mid_episode(env, instances, 4, seed=2)
    net = tiny_net().train()
    target = env.action_mask(state).float().argmax(1)
    torch.nn.functional.cross_entropy(net(state), target).backward()
    grads = {n: p.grad for n, p in net.named_parameters()}
    assert [n for n, g in grads.items() if g is None or not g.any()] in ([], ["head.bias"])
    # the bias's gradient sums softmax minus one-hot: 0 up to rounding (1e-8 on some CPUs)
    bias = grads["head.bias"]
    assert bias is None or bias.abs().max() <= 1e-5 * grads["head.weight"].abs().max()


@pytest.mark.parametrize(
    ("name", "dim", "pairs"),
    [("jssp_transformer.yaml", 64, 3), ("jssp_transformer_tiny.yaml", 16, 1)],
)
def test_hydra_configs_instantiate(name: str, dim: int, pairs: int) -> None:
    """Both model configs build a JSSPTransformer of the stated size that runs on a JSSP state."""
    net = instantiate(OmegaConf.load(CONFIGS / name))
    assert isinstance(net, JSSPTransformer) and net.dim == dim
    assert len(net.job_layers) == pairs == len(net.machine_layers)
    env = JSSPEnv(3, 2)
    with torch.no_grad():
        logits = net(env.reset(env.generate(2, torch.Generator().manual_seed(0))))
    assert logits.shape == (2, 3) and bool(torch.isfinite(logits).all())


def test_shipped_checkpoint_keeps_its_form_and_schedules() -> None:
    """data/checkpoints/jssp_small (format 1) loads as form nco1 with ReLU / separate ReZero and
    gives the greedy makespans measured before the paper form became the default."""
    from nco import checkpoint
    from nco.search import greedy

    path = Path(__file__).resolve().parents[2] / "data" / "checkpoints" / "jssp_small" / "best.pt"
    loaded = checkpoint.load(path)
    assert (loaded.model["form"], loaded.model["activation"]) == ("nco1", "relu")
    instances = loaded.env.generate(8, torch.Generator().manual_seed(5))
    makespans = -greedy(loaded.policy, loaded.env, instances).best().objective
    assert makespans.tolist() == [509.0, 521.0, 559.0, 467.0, 578.0, 483.0, 488.0, 490.0]


def test_pack_segments_by_hand() -> None:
    """Sizes 3, 1, 2, 2 in rows of 4: size-1 segments fill row 0, the two size-2 ones share
    row 1, the size-3 one takes row 2; tokens keep their order within a segment."""
    packed = pack_segments(torch.tensor([3, 0, 2, 3, 0, 1, 2, 3]), 4)
    assert (packed.batch, packed.length) == (3, 4)
    assert packed.index.tolist() == [8, 4, 6, 9, 5, 0, 7, 10]


def mixed_depths(env: JSSPEnv, seed: int) -> JSSPState:
    """One batch whose rows are at different depths: the root, random depths, two and one
    operations left, a row with two jobs finished early and a finished row."""
    jobs, machines = env.num_jobs, env.num_machines
    total = jobs * machines
    instances = env.generate(8, torch.Generator().manual_seed(seed))
    depths = [0, total // 4, total // 2, 3 * total // 4, total - 2, total - 1, total]
    rows = [
        mid_episode(env, instances.index(torch.tensor([i])), s, seed + i)
        for i, s in enumerate(depths)
    ]
    early = env.reset(instances.index(torch.tensor([7])))
    for job in [0] * machines + [1] * machines + [2]:  # jobs 0 and 1 done, job 2 started
        early = env.step(early, torch.tensor([job]))
    return cat([*rows, early])


def logits_and_grads(
    net: JSSPTransformer, state: JSSPState, pack_below: float, monkeypatch: pytest.MonkeyPatch
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Logits and every parameter's gradient of a loss on the unfinished jobs' logits (rows
    with a job left), with the packing threshold set to `pack_below`."""
    monkeypatch.setattr(jssp_transformer, "PACK_BELOW", pack_below)
    net.zero_grad(set_to_none=True)
    logits = net(state)
    unfinished = torch.isfinite(logits)
    some = unfinished.any(1)
    weights = torch.linspace(-1, 1, logits.numel()).view_as(logits)
    log_p = logits[some].log_softmax(1)
    loss = torch.where(unfinished[some], (log_p + logits[some]) * weights[some], 0.0).sum()
    loss.backward()
    return logits.detach(), {n: p.grad.clone() for n, p in net.named_parameters()}


@pytest.mark.parametrize(("jobs", "machines"), [(5, 4), (4, 6), (6, 6)])
@pytest.mark.parametrize("form", ["paper", "nco1"])
def test_packed_layers_give_the_full_networks_logits_and_gradients(
    jobs: int, machines: int, form: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Running the layer pairs on the unscheduled operations only gives the same logits (1e-5)
    and the same gradient of every parameter as the full network, on rows at every depth."""
    env = JSSPEnv(jobs, machines)
    state = mixed_depths(env, seed=jobs * machines)
    net = tiny_net(2, form).train()
    dense, dense_grads = logits_and_grads(net, state, 0.0, monkeypatch)
    packed, packed_grads = logits_and_grads(net, state, 2.0, monkeypatch)
    assert torch.equal(torch.isfinite(packed), env.action_mask(state))
    torch.testing.assert_close(packed, dense, atol=1e-5, rtol=0)
    for name, grad in dense_grads.items():
        torch.testing.assert_close(packed_grads[name], grad, atol=1e-5, rtol=1e-4, msg=name)


@pytest.mark.parametrize("steps", [4, 10, 19])
def test_packed_paper_size_network_on_one_depth(
    steps: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The paper-size network (3 pairs, 8 heads) on a batch at one depth, down to one
    operation left: packed and full logits agree."""
    env = JSSPEnv(5, 4)
    state = mid_episode(env, env.generate(6, torch.Generator().manual_seed(steps)), steps, 4)
    torch.manual_seed(0)
    net = JSSPTransformer().eval()
    for name, param in net.named_parameters():
        if "alpha" in name:
            torch.nn.init.uniform_(param, 0.5, 1.0)
    with torch.no_grad():
        monkeypatch.setattr(jssp_transformer, "PACK_BELOW", 0.0)
        dense = net(state)
        monkeypatch.setattr(jssp_transformer, "PACK_BELOW", 2.0)
        packed = net(state)
    torch.testing.assert_close(packed, dense, atol=1e-5, rtol=0)


def test_packing_starts_below_the_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """The packed path runs only when the live operations are fewer than PACK_BELOW of all."""
    calls = []
    packed_pairs = JSSPTransformer._packed_pairs

    def spy(self: JSSPTransformer, *args: object) -> torch.Tensor:
        calls.append(True)
        return packed_pairs(self, *args)

    monkeypatch.setattr(JSSPTransformer, "_packed_pairs", spy)
    monkeypatch.setattr(jssp_transformer, "PACK_BELOW", 0.5)
    env = JSSPEnv(4, 5)  # 20 operations per row
    instances = env.generate(2, torch.Generator().manual_seed(0))
    used = []
    for steps in (9, 10, 11, 20):  # 11/20 live, 10/20 (not below), 9/20, none
        calls.clear()
        with torch.no_grad():
            tiny_net()(mid_episode(env, instances, steps, seed=0))
        used.append(bool(calls))
    assert used == [False, False, True, False]
