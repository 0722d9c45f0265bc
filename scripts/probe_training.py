"""The optimizer step of the training probes (scripts/*_probe.py), as nco-train takes it:
zero the gradients, backpropagate, clip the gradient norm to 1 (the experiments'
`trainer.gradient_clip_val`), step."""

from __future__ import annotations

import torch
from torch import nn


def clipped_step(policy: nn.Module, optimizer: torch.optim.Optimizer, loss: torch.Tensor) -> float:
    """One optimizer step on `loss`, gradients clipped to norm 1; the loss as a float."""
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
    optimizer.step()
    return loss.item()
