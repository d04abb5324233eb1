"""Builder for reduce: torch.sum / torch.mean / torch.amax over the last dimension, or the first (`--dim first`),
one library kernel."""

from __future__ import annotations

from collections.abc import Callable

import torch

from roofline.core.dtypes import DType
from roofline.measuring.kernels.common import rand
from roofline.measuring.kernels.registry import Built, builder
from roofline.ops.reduce import Reduce

_FUNCS: dict[str, Callable[..., torch.Tensor]] = {"sum": torch.sum, "mean": torch.mean, "amax": torch.amax}


@builder("reduce")
def build_reduce(op: Reduce, dtype: DType, device: str) -> Built:
    op.check_dtype(dtype)
    x = rand((op.rows, op.cols), dtype, device)
    f = _FUNCS[op.func]
    dim = 0 if op.dim == "first" else -1
    return Built(lambda: f(x, dim=dim), f"torch.{op.func} (dim {dim})", [x])
