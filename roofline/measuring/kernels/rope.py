"""Builder for RoPE: the Hugging Face eager form (rotate_half: neg, cat, mul, mul, add per tensor) for
unfused, and the same function under torch.compile (one generated kernel for q and k) for fused on the GPU;
eager on the CPU (kernels.elementwise.compiled)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from roofline.core.dtypes import DType
from roofline.measuring.kernels.common import rand, torch_dtype
from roofline.measuring.kernels.elementwise import compiled
from roofline.measuring.kernels.registry import Built, builder
from roofline.ops.rope import RoPE

BASE = 10000.0  # rotary base theta (LLaMA 2)


def rope_tables(tokens: int, head_dim: int, dtype: DType, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of tokens x head_dim (the half-dimension frequencies repeated twice, Hugging Face's
    layout), positions 0..tokens-1, in `dtype`."""
    inv_freq = 1.0 / BASE ** (torch.arange(0, head_dim, 2, dtype=torch.float32, device=device) / head_dim)
    freqs = torch.outer(torch.arange(tokens, dtype=torch.float32, device=device), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(torch_dtype(dtype)), emb.sin().to(torch_dtype(dtype))


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x: tokens x heads x head_dim; cos, sin: tokens x 1 x head_dim (broadcast over heads)."""
    return (x * cos) + (rotate_half(x) * sin)


def _rope_q(q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return apply_rope(q, cos, sin)


def _rope_qk(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return apply_rope(q, cos, sin), apply_rope(k, cos, sin)


@builder("rope")
def build_rope(op: RoPE, dtype: DType, device: str) -> Built:
    op.check_dtype(dtype)
    t, h, hkv, d = op.tokens, op.heads, op.kv_heads, op.head_dim
    cos, sin = rope_tables(t, d, dtype, device)
    c, s = cos.unsqueeze(1), sin.unsqueeze(1)
    q = rand((t, h, d), dtype, device)
    xs = [q, rand((t, hkv, d), dtype, device)] if hkv else [q]
    fn: Callable[..., torch.Tensor | tuple[torch.Tensor, ...]] = _rope_qk if hkv else _rope_q  # on xs, c, s
    if op.variant == "unfused":
        run, impl = fn, "eager rotate_half: neg, cat, mul, mul, add per tensor"
    else:
        run, impl = compiled(fn, device)
        impl += ": rotate_half for q" + (" and k" if hkv else "")
    return Built(lambda: run(*xs, c, s), impl, [*xs, cos, sin])
