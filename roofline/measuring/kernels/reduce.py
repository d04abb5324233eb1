"""Builder for reduce: torch.sum / torch.mean / torch.amax over the last dimension (one library kernel)."""

from __future__ import annotations

import torch

from roofline.core.dtypes import DType
from roofline.measuring.kernels.common import rand
from roofline.measuring.kernels.registry import Built, builder
from roofline.ops.base import Operator

_FUNCS = {"sum": torch.sum, "mean": torch.mean, "amax": torch.amax}


@builder("reduce")
def build_reduce(op: Operator, dtype: DType, device: str) -> Built:
    op.check_dtype(dtype)
    x = rand((op.rows, op.cols), dtype, device)  # type: ignore[attr-defined]
    f = _FUNCS[op.func]  # type: ignore[attr-defined]
    return Built(lambda: f(x, dim=-1), f"torch.{op.func} (dim -1)", [x])  # type: ignore[attr-defined]
