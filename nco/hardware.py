"""What the hardware does fast: bf16 matrix products need matrix units to pay off.

On a CPU without AVX512-BF16 / AMX (e.g. an AVX2-only EPYC) PyTorch emulates bf16 and a
training step of the N=20 study model takes 19x longer than in fp32
(data/results/bench/train_cpu_quiet.json), so nco warns where bf16 is asked for there.
"""

from __future__ import annotations

import warnings

import torch

_warned: set[str] = set()


def bf16_fast(device_type: str) -> bool:
    """Whether bf16 matrix products have hardware support on this device type."""
    if device_type == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if device_type == "cpu":
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    return True


def warn_slow_bf16(device_type: str, what: str) -> None:
    """Warn once per process and `what` when bf16 is used where it is emulated."""
    if what in _warned or bf16_fast(device_type):
        return
    _warned.add(what)
    warnings.warn(
        f"{what}: bf16 on this {device_type} is emulated (no bf16 matrix units; CPU capability "
        f"{torch.backends.cpu.get_cpu_capability()}) and far slower than fp32; use fp32 here.",
        stacklevel=3,
    )
