"""nco.models.layers: the bf16 CPU attention path matches float32 fused attention (masks included)
and its gradients; MultiHeadAttention takes it only for bf16 training on a CPU; packed tokens
give the full layout's outputs and gradients."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from nco.models.layers import MultiHeadAttention, Packed, ReZeroLayer, bf16_cpu_attention


def qkv(seed: int = 0, shape: tuple[int, ...] = (3, 4, 7, 8)) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=gen) for _ in range(3)]


@pytest.mark.parametrize("mask", [None, "bool", "additive"])
def test_bf16_cpu_attention_matches_fp32_fused(mask: str | None) -> None:
    q, k, v = qkv()
    attn_mask = None
    if mask == "bool":  # every query may attend to itself, so no row is fully masked
        attn_mask = torch.rand(3, 1, 7, 7, generator=torch.Generator().manual_seed(1)) < 0.6
        attn_mask |= torch.eye(7, dtype=torch.bool)
    elif mask == "additive":
        attn_mask = -torch.rand(4, 7, 7, generator=torch.Generator().manual_seed(2)) * 3
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
    out = bf16_cpu_attention(q.bfloat16(), k.bfloat16(), v.bfloat16(), attn_mask)
    assert out.dtype == torch.bfloat16
    # bf16 rounding of inputs, probabilities and outputs: measured max error 0.02 here
    assert (out.float() - ref).abs().max() < 0.05


def test_bf16_cpu_attention_gradients_match_fp32() -> None:
    leaves = qkv(seed=3)
    ref_in = [t.clone().requires_grad_() for t in leaves]
    F.scaled_dot_product_attention(*ref_in).square().sum().backward()
    bf_in = [t.bfloat16().requires_grad_() for t in leaves]
    bf16_cpu_attention(*bf_in, None).float().square().sum().backward()
    for a, b in zip(ref_in, bf_in, strict=True):
        rel = (b.grad.float() - a.grad).norm() / a.grad.norm()
        assert rel < 0.03


def test_multihead_attention_takes_it_for_bf16_training_only() -> None:
    torch.manual_seed(0)
    layer = MultiHeadAttention(16, 4)
    x = torch.randn(2, 5, 16)
    fp32 = layer(x)

    def both_paths() -> tuple[torch.Tensor, torch.Tensor]:
        q, k, v = layer.qkv(x).view(2, 5, 3, 4, 4).permute(2, 0, 3, 1, 4)
        paths = (bf16_cpu_attention(q, k, v, None), F.scaled_dot_product_attention(q, k, v))
        return tuple(layer.out(y.transpose(1, 2).reshape(2, 5, 16)) for y in paths)

    with torch.autocast("cpu", torch.bfloat16):
        trained = layer(x)
        math, _ = both_paths()
        with torch.no_grad():
            decoded = layer(x)
            _, fused = both_paths()
    assert trained.dtype == decoded.dtype == torch.bfloat16
    assert (trained.float() - fp32).abs().max() < 0.05
    assert torch.equal(trained, math) and torch.equal(decoded, fused)


def test_packed_tokens_give_the_full_layouts_outputs_and_gradients() -> None:
    """A ReZero layer on the tokens at `live` positions only (the others masked as keys)
    equals the layer on the full (B, L) layout at those positions, gradients included."""
    gen = torch.Generator().manual_seed(4)
    b, n, d = 3, 6, 16
    x = torch.randn(b, n, d, generator=gen)
    live = torch.rand(b, n, generator=gen) < 0.5
    live[0] = False  # a row without live tokens
    index = live.flatten().nonzero().squeeze(1)
    mask = (live.unsqueeze(1) | torch.eye(n, dtype=torch.bool)).unsqueeze(1)  # (B, 1, L, L)
    torch.manual_seed(0)
    layer = ReZeroLayer(d, 4, 32)
    torch.nn.init.constant_(layer.alpha, 0.7)

    def run(packed: bool) -> tuple[torch.Tensor, list[torch.Tensor]]:
        layer.zero_grad(set_to_none=True)
        if packed:
            out = layer(x.reshape(-1, d)[index], mask, Packed(index, b, n))
        else:
            out = layer(x, mask).reshape(-1, d)[index]
        (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum().backward()
        return out.detach(), [p.grad.clone() for p in layer.parameters()]

    full, full_grads = run(packed=False)
    packed, packed_grads = run(packed=True)
    assert packed.shape == (len(index), d)
    torch.testing.assert_close(packed, full, atol=1e-6, rtol=1e-5)
    for a, b_ in zip(packed_grads, full_grads, strict=True):
        torch.testing.assert_close(a, b_, atol=1e-5, rtol=1e-5)
