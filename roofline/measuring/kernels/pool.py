"""Builder for pool2d: F.max_pool2d (with its argmax indices when `indices`, as max_pool2d_with_indices runs on a
GPU) or F.avg_pool2d; channels-last on the GPU, as a CNN converted to it runs there, NCHW on the CPU."""

from __future__ import annotations

import torch.nn.functional as F

from roofline.core.dtypes import DType
from roofline.measuring.kernels.common import cnn_layout, rand
from roofline.measuring.kernels.registry import Built, builder
from roofline.ops.base import Operator


@builder("pool2d")
def build_pool2d(op: Operator, dtype: DType, device: str) -> Built:
    op.check_dtype(dtype)
    shape = (op.batch, op.channels, op.height, op.width)  # type: ignore[attr-defined]
    x, layout = cnn_layout(rand(shape, dtype, device), device)
    k, s, p = op.kernel_size, op.stride, op.padding  # type: ignore[attr-defined]
    if op.func == "avg":  # type: ignore[attr-defined]
        return Built(lambda: F.avg_pool2d(x, k, s, p), f"F.avg_pool2d ({layout})", [x])
    indices = bool(op.indices)  # type: ignore[attr-defined]
    return Built(lambda: F.max_pool2d(x, k, s, p, return_indices=indices),
                 f"F.max_pool2d ({layout}{', with indices' if indices else ''})", [x])
