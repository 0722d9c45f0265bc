"""The JSSP policy of paper D.4.2: operations attend within their job, then within their machine.

Each operation (j, l) is embedded from (p_jl / 100, (r_j - min r) / 100), where r_j is the time
job j's next operation would start, plus a sinusoidal encoding of l. Pairs of ReZero layers
follow: the job-wise layer folds jobs into the batch and adds an ALiBi bias slope * (l2 - l1);
the machine-wise layer lets operations on the same machine attend to each other. Every
machine holds exactly one operation per job, so machines fold into the batch as well, which is
the same attention as a J*M sequence masked to equal machines, at a fraction of the cost.
Scheduled operations are masked as keys (each operation still sees itself, so no row is empty).
A last layer runs over the jobs' next operations and a linear head gives one logit per job.

`form="paper"` (default) is the authors' network (jssp/network.py) exactly: interleaved sin/cos
encoding, min r over all jobs (a finished job's r uses the machine of its last operation, as in
their code) and a head with bias. `form="nco1"` is nco's form before checkpoint format 3.
"""

from __future__ import annotations

import torch
from torch import nn

from models.layers import (
    ReZeroLayer,
    alibi_slopes,
    body_precision,
    check_layer_options,
    sinusoidal_encoding,
)
from problems.jssp.types import JSSPState

PRECISIONS = ("fp32", "bf16")
FORMS = ("paper", "nco1")


class JSSPTransformer(nn.Module):
    """Logits Float[B, J] over jobs for JSSP states; finished jobs get -inf.

    Invariant to machine relabelling and equivariant to job permutations. `precision="bf16"`
    runs the network under bfloat16 autocast; logits are float32 either way. `activation` and
    `rezero` set the layers' form (models.layers.ReZeroLayer). `form`: "paper" for the
    authors' inputs and head; "nco1" for checkpoints before format 3 (sines then cosines, r
    shifted by the minimum over unfinished jobs and 0 for finished ones, head without bias).
    """

    def __init__(
        self,
        dim: int = 64,
        pairs: int = 3,
        heads: int = 8,
        ff_dim: int = 256,
        precision: str = "fp32",
        activation: str = "gelu",
        rezero: str = "shared",
        form: str = "paper",
    ) -> None:
        super().__init__()
        check_layer_options("JSSPTransformer", activation, rezero)
        if form not in FORMS:
            raise ValueError(f"JSSPTransformer: expected form in {FORMS}, got {form!r}.")
        if precision not in PRECISIONS:
            raise ValueError(f"Expected precision in {PRECISIONS}, got {precision!r}.")
        if pairs < 1:
            raise ValueError(f"Expected pairs >= 1, got {pairs}.")
        self.dim = dim
        self.heads = heads
        self.precision = precision
        self.form = form
        self.embed = nn.Linear(2, dim)
        layer = (activation, rezero)
        self.job_layers = nn.ModuleList(
            ReZeroLayer(dim, heads, ff_dim, *layer) for _ in range(pairs)
        )
        self.machine_layers = nn.ModuleList(
            ReZeroLayer(dim, heads, ff_dim, *layer) for _ in range(pairs)
        )
        self.final = ReZeroLayer(dim, heads, ff_dim, *layer)
        self.head = nn.Linear(dim, 1, bias=self.form == "paper")  # nco1: a shift cancels in softmax
        self.register_buffer("slopes", alibi_slopes(heads), persistent=False)

    def forward(self, state: JSSPState) -> torch.Tensor:
        """Logits Float[B, J] (float32)."""
        device_type = state.durations.device.type
        with body_precision(device_type, self.precision):
            logits = self._logits(state)
        unfinished = state.next_op < state.durations.shape[2]
        return logits.float().masked_fill(~unfinished, float("-inf"))

    def _logits(self, state: JSSPState) -> torch.Tensor:
        b, j, m = state.durations.shape
        d, dev = self.dim, state.durations.device
        unfinished = state.next_op < m
        nxt = state.next_op.clamp(max=m - 1)
        nxt_machine = state.machines.gather(2, nxt.unsqueeze(-1)).squeeze(-1)
        ready = torch.maximum(state.job_ready, state.machine_ready.gather(1, nxt_machine))
        if self.form == "paper":
            ready = ready - ready.amin(dim=1, keepdim=True)
        else:
            shift = ready.masked_fill(~unfinished, float("inf")).amin(dim=1, keepdim=True)
            ready = (ready - shift).masked_fill(~unfinished, 0.0)
        feats = torch.stack([state.durations, ready.unsqueeze(-1).expand(b, j, m)], dim=-1) / 100
        pos = torch.arange(m, device=dev)
        enc = sinusoidal_encoding(pos, d, interleaved=self.form == "paper")
        x = self.embed(feats.to(self.embed.weight.dtype)) + enc

        scheduled = pos < state.next_op.unsqueeze(-1)  # (B, J, M)
        # Job-wise bias (B*J, heads, M, M): ALiBi slope * (key - query); scheduled keys masked.
        job_keys = (~scheduled).unsqueeze(2) | torch.eye(m, dtype=torch.bool, device=dev)
        alibi = self.slopes.view(-1, 1, 1) * (pos.view(1, -1) - pos.view(-1, 1)).float()
        job_bias = alibi.unsqueeze(0).masked_fill(~job_keys.reshape(b * j, 1, m, m), float("-inf"))
        # Machine-wise: op_at[b, j, k] is the operation of job j that runs on machine k.
        op_at = state.machines.argsort(dim=-1)
        by_machine = scheduled.gather(2, op_at).transpose(1, 2)  # (B, M, J)
        eye_j = torch.eye(j, dtype=torch.bool, device=dev)
        machine_keys = ((~by_machine).unsqueeze(2) | eye_j).reshape(b * m, 1, j, j)
        to_machine = op_at.unsqueeze(-1).expand(b, j, m, d)
        to_ops = state.machines.unsqueeze(-1).expand(b, j, m, d)

        for job_layer, machine_layer in zip(self.job_layers, self.machine_layers, strict=True):
            x = job_layer(x.reshape(b * j, m, d), job_bias).view(b, j, m, d)
            xm = x.gather(2, to_machine).transpose(1, 2).reshape(b * m, j, d)
            xm = machine_layer(xm, machine_keys).view(b, m, j, d).transpose(1, 2)
            x = xm.gather(2, to_ops)

        nxt_ops = x.gather(2, nxt.view(b, j, 1, 1).expand(b, j, 1, d)).squeeze(2)  # (B, J, d)
        job_keys_final = (unfinished.unsqueeze(1) | eye_j).unsqueeze(1)  # (B, 1, J, J)
        return self.head(self.final(nxt_ops, job_keys_final)).squeeze(-1)
