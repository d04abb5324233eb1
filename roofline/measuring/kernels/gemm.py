"""Builders for the GEMM family: torch.matmul / bmm, torch._scaled_mm for fp8, torch._int_mm for int8."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from roofline.core.dtypes import DType
from roofline.core.errors import UsageError
from roofline.measuring.kernels.common import rand, set_tf32
from roofline.measuring.kernels.registry import Built, builder
from roofline.ops.gemm import GEMM, GEMV, GroupedGEMM

_EPILOGUE: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {"gelu": F.gelu, "silu": F.silu}


def _mm(a: torch.Tensor, b: torch.Tensor, dtype: DType, device: str
        ) -> tuple[Callable[[], torch.Tensor], str, list[torch.Tensor]]:
    """The product for this dtype and the name of what runs."""
    if dtype.name == "fp8":
        if device == "cpu":
            raise UsageError("fp8 GEMMs need a GPU with fp8 tensor cores (torch._scaled_mm)")
        one = torch.ones((), device=device, dtype=torch.float32)
        bt = b.t().contiguous().t()  # _scaled_mm wants B column-major
        return (lambda: torch._scaled_mm(a, bt, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)), \
            "torch._scaled_mm", [bt, one]
    if dtype.name == "int8":
        if device == "cpu":
            raise UsageError("int8 GEMMs are timed on the GPU only (torch._int_mm)")
        return (lambda: torch._int_mm(a, b)), "torch._int_mm", []
    return (lambda: torch.matmul(a, b)), "torch.matmul", []


@builder("gemm")
def build_gemm(op: GEMM, dtype: DType, device: str) -> Built:
    set_tf32(dtype)
    m, n, k, batch = op.m, op.n, op.k, op.batch
    assert n is not None and k is not None  # GEMM.resolve() set them
    if batch > 1 and dtype.name in ("fp8", "int8"):
        raise UsageError(f"batched {dtype.name} GEMMs are not timed (torch has no batched {dtype.name} matmul)")
    shape_a = (batch, m, k) if batch > 1 else (m, k)
    shape_b = (batch, k, n) if batch > 1 else (k, n)
    a, b = rand(shape_a, dtype, device), rand(shape_b, dtype, device)
    mm, impl, keep = _mm(a, b, dtype, device)
    epi, variant = op.epilogue, op.variant
    if epi == "none":
        return Built(mm, impl, [a, b, *keep])
    if dtype.name in ("fp8", "int8"):
        raise UsageError(f"gemm epilogues are timed for float dtypes, not {dtype.name}")
    bias = rand((n,), dtype, device)
    if epi == "bias":
        if variant == "fused" and batch == 1:
            return Built(lambda: torch.addmm(bias, a, b), "torch.addmm (cuBLAS bias epilogue)", [a, b, bias])
        return Built(lambda: torch.matmul(a, b).add_(bias), f"{impl} + add_", [a, b, bias])
    act = _EPILOGUE[epi]
    if variant == "unfused":
        return Built(lambda: act(torch.matmul(a, b)), f"{impl} + F.{epi}", [a, b])
    # default mode: max-autotune would fuse the epilogue into a Triton GEMM but autotunes for minutes
    fused = torch.compile(lambda x, y: act(torch.matmul(x, y)), dynamic=False) \
        if device != "cpu" else (lambda x, y: act(torch.matmul(x, y)))
    # NB: inductor's default mode keeps cuBLAS for the product and emits the activation as a second (Triton)
    # kernel: on the H200 the 'fused' and unfused forms took the same time. The recorded kernel names show it.
    return Built(lambda: fused(a, b), f"torch.compile(matmul + {epi}): cuBLAS + one generated epilogue kernel"
                 if device != "cpu" else f"{impl} + F.{epi} (no compile on CPU)", [a, b])


@builder("gemv")
def build_gemv(op: GEMV, dtype: DType, device: str) -> Built:
    set_tf32(dtype)
    m, n, k = op.m, op.n, op.k
    if dtype.name == "int8" and m < 17:
        raise UsageError("torch._int_mm needs m > 16: time int8 decode GEMMs with --m 32 or more")
    x, w = rand((m, k), dtype, device), rand((k, n), dtype, device)
    mm, impl, keep = _mm(x, w, dtype, device)
    return Built(mm, impl, [x, w, *keep])


@builder("grouped_gemm")
def build_grouped_gemm(op: GroupedGEMM, dtype: DType, device: str) -> Built:
    """torch._grouped_mm of A (groups x m rows, k) and B (groups, k, n) with every group's end offset."""
    op.check_dtype(dtype)
    set_tf32(dtype)
    a = rand((op.groups * op.m, op.k), dtype, device)
    b = rand((op.groups, op.k, op.n), dtype, device)
    offs = torch.arange(1, op.groups + 1, device=device, dtype=torch.int32) * op.m
    return Built(lambda: torch._grouped_mm(a, b, offs=offs), "torch._grouped_mm", [a, b, offs])
