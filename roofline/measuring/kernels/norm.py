"""Builders for normalisation: F.layer_norm and F.rms_norm (one library kernel each); add + norm fused by
torch.compile on the GPU (torch has no single kernel for it), or eager torch.add then the norm (unfused);
F.batch_norm."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from roofline.core.dtypes import DType
from roofline.measuring.kernels.common import cnn_layout, rand
from roofline.measuring.kernels.elementwise import compiled
from roofline.measuring.kernels.registry import Built, builder
from roofline.ops.norm import BatchNorm, _AddNorm, _Norm

EPS = 1e-5
_LIBRARY = {"layernorm": "F.layer_norm", "rmsnorm": "F.rms_norm"}


def _norm(norm: str, s: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    if norm == "layernorm":
        return F.layer_norm(s, (s.shape[-1],), w, b, EPS)
    return F.rms_norm(s, (s.shape[-1],), w, EPS)


def _affine(norm: str, cols: int, dtype: DType, device: str) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Trained-looking affine parameters: weight near 1, bias near 0 (never exactly either)."""
    w = rand((cols,), dtype, device, scale=0.1) + 1
    b = rand((cols,), dtype, device, scale=0.1) if norm == "layernorm" else None
    return w, b


def _norm_builder(norm: str) -> None:
    @builder(norm)
    def build(op: _Norm, dtype: DType, device: str) -> Built:
        op.check_dtype(dtype)
        x = rand((op.rows, op.cols), dtype, device)
        w, b = _affine(norm, op.cols, dtype, device)
        return Built(lambda: _norm(norm, x, w, b), _LIBRARY[norm], [x, w, b])


_Out = torch.Tensor | tuple[torch.Tensor, torch.Tensor]


def _add_norm(norm: str, write_sum: bool) -> Callable[..., _Out]:
    """s = x + z; y = norm(s); returns (y, s) when the sum is an output, else y (s a temporary)."""

    def add_norm(x: torch.Tensor, z: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> _Out:
        s = x + z
        y = _norm(norm, s, w, b)
        return (y, s) if write_sum else y

    return add_norm


def _add_norm_builder(norm: str) -> None:
    @builder(f"add_{norm}")
    def build(op: _AddNorm, dtype: DType, device: str) -> Built:
        op.check_dtype(dtype)
        rows, cols = op.rows, op.cols
        x, z = rand((rows, cols), dtype, device), rand((rows, cols), dtype, device)
        w, b = _affine(norm, cols, dtype, device)
        fn = _add_norm(norm, op.write_sum)
        if op.variant == "unfused":
            return Built(lambda: fn(x, z, w, b), f"torch.add then {_LIBRARY[norm]} (eager)", [x, z, w, b])
        fused, impl = compiled(fn, device)
        return Built(lambda: fused(x, z, w, b), f"{impl}: add + {_LIBRARY[norm]}", [x, z, w, b])


for _n in ("layernorm", "rmsnorm"):
    _norm_builder(_n)
    _add_norm_builder(_n)


@builder("batchnorm")
def build_batchnorm(op: BatchNorm, dtype: DType, device: str) -> Built:
    """F.batch_norm with running statistics (inference) or the batch's (training): channels-last on the GPU, as
    a CNN runs there (cuDNN), NCHW on the CPU."""
    op.check_dtype(dtype)
    c = op.channels
    assert op.width is not None  # BatchNorm.resolve() set it
    x, layout = cnn_layout(rand((op.batch, c, op.height, op.width), dtype, device), device)
    w, b = _affine("layernorm", c, dtype, device)
    mean, var = rand((c,), dtype, device, scale=0.1), rand((c,), dtype, device, scale=0.1).abs() + 1
    training = bool(op.training)
    return Built(lambda: F.batch_norm(x, mean, var, w, b, training, 0.1, EPS),
                 f"F.batch_norm ({'training' if training else 'inference'}, {layout})", [x, w, b, mean, var])
