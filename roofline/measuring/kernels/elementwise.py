"""Builders for elementwise operators: torch eager for single ops and unfused forms, torch.compile
(one generated kernel) for the fused forms on the GPU."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar

import torch
import torch.nn.functional as F

from roofline.core.dtypes import DType, get_dtype
from roofline.core.errors import UsageError
from roofline.measuring.kernels.common import rand, torch_dtype
from roofline.measuring.kernels.registry import Built, builder
from roofline.ops.base import Operator
from roofline.ops.elementwise import Cast, Cat, Chain, SwiGLU, _Elementwise

R = TypeVar("R")


def _copy(x: torch.Tensor) -> torch.Tensor:
    """Row-major x: a transposed view's contiguous copy, a dense tensor's clone (contiguous() of it would return
    it, running nothing)."""
    return x.contiguous() if not x.is_contiguous() else x.clone()


_UNARY: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {"relu": torch.relu, "gelu": F.gelu, "silu": F.silu,
                                                             "copy": _copy}
_BINARY: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {"add": torch.add, "mul": torch.mul}


def _float_only(op: Operator, dtype: DType) -> None:
    if dtype.name in ("fp8", "int8"):
        raise UsageError(f"{op.name} is timed for fp64/fp32/fp16/bf16, not {dtype.name} (torch has no such kernel)")


def compiled(fn: Callable[..., R], device: str) -> tuple[Callable[..., R], str]:
    """torch.compile on the GPU (one fused Triton kernel); eager on the CPU, where compile needs a C++
    toolchain and minutes."""
    if device == "cpu":
        return fn, "eager (no compile on CPU)"
    # dynamic=False: dynamo caches per code object, so a suite with several shapes of one function would
    # otherwise switch to dynamic-shape kernels (slower) and, past the recompile limit, fall back to eager.
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
    return torch.compile(fn, dynamic=False), "torch.compile"


def _operands(op: _Elementwise, dtype: DType, device: str, count: int) -> tuple[list[torch.Tensor], str]:
    """`count` inputs of `op.numel` elements; with `op.run`, the last one a transposed view of rows x cols x run
    (its two outer dimensions swapped, as a head split's transpose leaves it), the others dense of its shape;
    with `op.bcast` too, the last one a row of `run` elements broadcast over numel / run rows."""
    numel, run = op.numel, op.run
    if not run:
        return [rand((numel,), dtype, device) for _ in range(count)], ""
    if numel % run:
        raise UsageError(f"{op.name}: timed with run dividing numel ({run} does not divide {numel})")
    outer = numel // run
    if op.bcast:
        return [rand((outer, run), dtype, device), rand((run,), dtype, device)], f" (a {run}-element row broadcast)"
    # square-ish: the largest divisor of outer up to its square root (both outer dimensions over 1, or the
    # swapped view would be contiguous: a size-1 dimension has no stride)
    rows = max(d for d in range(1, math.isqrt(outer) + 1) if outer % d == 0)
    if rows == 1:
        raise UsageError(f"{op.name}: numel / run = {outer} rows cannot be split into the two dimensions a "
                         f"transposed view swaps (both over 1); choose a numel whose numel / run is not prime")
    shape = (rows, outer // rows, run)
    view = rand((shape[1], shape[0], run), dtype, device).transpose(0, 1)
    return [rand(shape, dtype, device) for _ in range(count - 1)] + [view], f" (a {run}-element-run transposed view)"


def _unary(func: str) -> None:
    @builder(func)
    def build(op: _Elementwise, dtype: DType, device: str) -> Built:
        _float_only(op, dtype)
        (x,), how = _operands(op, dtype, device, 1)
        f = _UNARY[func]
        return Built(lambda: f(x), f"torch.{func}{how}", [x])


def _binary(func: str) -> None:
    @builder(func)
    def build(op: _Elementwise, dtype: DType, device: str) -> Built:
        _float_only(op, dtype)
        (a, b), how = _operands(op, dtype, device, 2)
        f = _BINARY[func]
        return Built(lambda: f(a, b), f"torch.{func}{how}", [a, b])


for _f in _UNARY:
    _unary(_f)
for _f in _BINARY:
    _binary(_f)


def _swiglu(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.silu(a) * b


@builder("swiglu")
def build_swiglu(op: SwiGLU, dtype: DType, device: str) -> Built:
    _float_only(op, dtype)
    a, b = rand((op.numel,), dtype, device), rand((op.numel,), dtype, device)
    if op.variant == "unfused":
        return Built(lambda: _swiglu(a, b), "F.silu then mul (eager)", [a, b])
    fn, impl = compiled(_swiglu, device)
    return Built(lambda: fn(a, b), impl, [a, b])


def _chain(x: torch.Tensor, length: int) -> torch.Tensor:
    for i in range(length):  # scale, shift, relu, scale, ...: each a separate eager kernel
        if i % 3 == 0:
            x = x * 1.01
        elif i % 3 == 1:
            x = x + 0.5
        else:
            x = torch.relu(x)
    return x


@builder("chain")
def build_chain(op: Chain, dtype: DType, device: str) -> Built:
    _float_only(op, dtype)
    x = rand((op.numel,), dtype, device)
    length = op.length
    if op.variant == "unfused":
        return Built(lambda: _chain(x, length), f"{length} eager elementwise kernels", [x])
    fn, impl = compiled(lambda t: _chain(t, length), device)
    return Built(lambda: fn(x), impl, [x])


@builder("cat")
def build_cat(op: Cat, dtype: DType, device: str) -> Built:
    _float_only(op, dtype)
    outer, inner, tail, gap = op.outer, op.inner, op.tail, 2 if op.strided else 1
    # strided: each input the first half of a row twice as long (rotate_half's slices, a cropped cache's view)
    lengths = [op.length] + [tail] * (op.parts - 1)
    xs = [rand((outer, n * gap, inner), dtype, device)[:, :n] for n in lengths]
    how = "views with gaps" if op.strided else "contiguous"
    return Built(lambda: torch.cat(xs, dim=1), f"torch.cat (dim 1 of outer x length x inner, {how})", xs)


@builder("cast")
def build_cast(op: Cast, dtype: DType, device: str) -> Built:
    _float_only(op, dtype)
    x = rand((op.numel,), dtype, device)
    to = torch_dtype(get_dtype(op.to))
    if to == x.dtype:  # x.to(its own dtype) returns x itself: nothing would run (1.9 us for 128 MB, 324257% of roof)
        impl = f"Tensor.to({op.to}, copy=True) (the same dtype: a copy)"
        return Built(lambda: x.to(to, copy=True), impl, [x])
    return Built(lambda: x.to(to), f"Tensor.to({op.to})", [x])
