"""Our FLOP formulas against torch.utils.flop_counter.FlopCounterMode, on real torch ops run on the CPU.

torch counts 2 x M x N x K per matrix product (addmm: the product only, not the bias add), and
2 x N x Cout x Hout x Wout x (Cin / groups) x Kh x Kw per convolution (not the bias). Our gemm with a bias
epilogue and our conv2d with --bias add 1 FLOP per output element on top: compared explicitly below.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from roofline.ops import make
from roofline.ops.softmax import SOFTMAX_FLOPS_PER_ELEMENT


def torch_flops(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    with FlopCounterMode(display=False) as counter:
        fn(*args, **kwargs)
    return counter.get_total_flops()


MM_SHAPES = [(1, 1, 1), (7, 13, 5), (33, 17, 129), (1, 4096, 11), (127, 1, 255), (64, 48, 96)]  # (m, n, k)


@pytest.mark.parametrize(("m", "n", "k"), MM_SHAPES)
def test_mm(m: int, n: int, k: int) -> None:
    a, b = torch.randn(m, k), torch.randn(k, n)
    assert make("gemm", m=m, n=n, k=k).flops() == torch_flops(torch.mm, a, b)


@pytest.mark.parametrize(("batch", "m", "n", "k"), [(3, 7, 13, 5), (5, 1, 9, 31), (2, 65, 33, 17)])
def test_bmm(batch: int, m: int, n: int, k: int) -> None:
    a, b = torch.randn(batch, m, k), torch.randn(batch, k, n)
    assert make("gemm", m=m, n=n, k=k, batch=batch).flops() == torch_flops(torch.bmm, a, b)


@pytest.mark.parametrize(("m", "n", "k"), [(7, 13, 5), (31, 3, 64), (1, 17, 9)])
def test_addmm(m: int, n: int, k: int) -> None:
    bias, a, b = torch.randn(n), torch.randn(m, k), torch.randn(k, n)
    counted = torch_flops(torch.addmm, bias, a, b)
    assert make("gemm", m=m, n=n, k=k).flops() == counted  # the matrix product
    # flops are torch's count with the bias epilogue too; its M x N adds, which torch leaves out, are extra_flops
    assert make("gemm", m=m, n=n, k=k, epilogue="bias").flops() == counted
    assert make("gemm", m=m, n=n, k=k, epilogue="bias").extra_flops() == m * n


# (batch, cin, h, w, cout, kernel, stride, padding, dilation, groups)
CONV_SHAPES = [
    (1, 3, 7, 7, 8, 3, 1, 1, 1, 1),
    (2, 5, 11, 13, 7, 3, 1, 0, 1, 1),  # odd sizes, no padding
    (2, 4, 15, 9, 6, 3, 2, 1, 1, 1),  # stride 2
    (1, 6, 17, 17, 4, 5, 3, 2, 1, 2),  # stride 3, groups 2
    (3, 8, 12, 10, 8, 3, 1, 2, 2, 1),  # dilation 2
    (1, 8, 9, 9, 8, 3, 1, 1, 1, 8),  # depthwise
    (2, 12, 8, 6, 9, 1, 1, 0, 1, 3),  # 1x1, groups 3
    (1, 3, 31, 29, 5, 7, 2, 3, 1, 1),  # 7x7 stride 2 stem
    (1, 4, 10, 10, 4, 3, 2, 0, 3, 2),  # dilation 3, stride 2, groups 2
    (2, 2, 5, 5, 3, 5, 1, 0, 1, 1),  # kernel = input: 1x1 output
]


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize(("n", "cin", "h", "w", "cout", "k", "stride", "pad", "dil", "groups"), CONV_SHAPES)
def test_conv2d(n: int, cin: int, h: int, w: int, cout: int, k: int, stride: int, pad: int, dil: int, groups: int,
                bias: bool) -> None:
    x, wt = torch.randn(n, cin, h, w), torch.randn(cout, cin // groups, k, k)
    b = torch.randn(cout) if bias else None
    op = make("conv2d", batch=n, in_channels=cin, height=h, width=w, out_channels=cout, kernel_size=k,
              stride=stride, padding=pad, dilation=dil, groups=groups, bias=bias)
    y = F.conv2d(x, wt, b, stride, pad, dil, groups)
    assert op.out_hw() == tuple(y.shape[2:])  # the output size formula is torch's
    counted = torch_flops(F.conv2d, x, wt, b, stride, pad, dil, groups)
    assert op.flops() == counted  # the convolution alone, as torch counts it
    assert op.extra_flops() == (y.numel() if bias else 0)  # the bias add, which torch does not count


@pytest.mark.parametrize(("batch", "heads", "kv_heads", "seq", "kv_seq", "dim"),
                         [(2, 8, 2, 5, 7, 16), (1, 4, 4, 9, 9, 8), (3, 6, 1, 1, 13, 32)])
def test_attention_matmuls(batch: int, heads: int, kv_heads: int, seq: int, kv_seq: int, dim: int) -> None:
    """SDPA's math backend runs two bmm's that torch counts, as our flops do; the softmax's 5 per (query, key)
    pair are our extra_flops."""
    q = torch.randn(batch, heads, seq, dim)
    k, v = torch.randn(batch, kv_heads, kv_seq, dim), torch.randn(batch, kv_heads, kv_seq, dim)
    with sdpa_kernel(SDPBackend.MATH):
        counted = torch_flops(F.scaled_dot_product_attention, q, k, v, enable_gqa=kv_heads != heads)
    op = make("attention", batch=batch, heads=heads, kv_heads=kv_heads, seq=seq, kv_seq=kv_seq, head_dim=dim)
    assert op.flops() == counted
    assert op.extra_flops() == SOFTMAX_FLOPS_PER_ELEMENT * batch * heads * seq * kv_seq


@pytest.mark.parametrize(("batch", "heads", "seq", "kv_seq", "dim"), [(2, 4, 64, 64, 32), (1, 3, 5, 9, 16)])
def test_attention_backward_matmuls(batch: int, heads: int, seq: int, kv_seq: int, dim: int) -> None:
    """torch counts the fused kernels' backward (flash, efficient, cuDNN) as five products: S = Q K^T again, dP,
    dV, dQ, dK; counted here on meta tensors (those kernels run on CUDA only). The catalog's --backward is it."""
    meta = {"device": "meta", "dtype": torch.bfloat16}
    q, out = torch.empty(batch, heads, seq, dim, **meta), torch.empty(batch, heads, seq, dim, **meta)
    k = torch.empty(batch, heads, kv_seq, dim, **meta)
    lse, seed = torch.empty(batch, heads, seq, device="meta"), torch.empty((), device="meta", dtype=torch.int64)
    counted = torch_flops(torch.ops.aten._scaled_dot_product_flash_attention_backward, out, q, k, k, out, lse,
                          None, None, seq, kv_seq, 0.0, False, seed, seed)
    op = make("attention", batch=batch, heads=heads, seq=seq, kv_seq=kv_seq, head_dim=dim, backward=True)
    assert counted > 0
    assert op.flops() == counted
    assert op.flops() == 2.5 * make("attention", batch=batch, heads=heads, seq=seq, kv_seq=kv_seq,
                                    head_dim=dim).flops()
