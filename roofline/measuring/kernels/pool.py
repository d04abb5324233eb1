"""Builder for pool2d: F.max_pool2d (with its argmax indices when `indices`, as max_pool2d_with_indices runs on a
GPU) or F.avg_pool2d; channels-last on the GPU, as a CNN converted to it runs there, NCHW on the CPU."""

from __future__ import annotations

import torch.nn.functional as F

from roofline.core.dtypes import DType
from roofline.measuring.kernels.common import cnn_layout, rand
from roofline.measuring.kernels.registry import Built, builder
from roofline.ops.pool import Pool2d


@builder("pool2d")
def build_pool2d(op: Pool2d, dtype: DType, device: str) -> Built:
    op.check_dtype(dtype)
    assert op.width is not None  # Pool2d.resolve() set it
    shape = (op.batch, op.channels, op.height, op.width)
    x, layout = cnn_layout(rand(shape, dtype, device), device)
    k, s, p = op.kernel_size, op.stride, op.padding
    if op.func == "avg":
        return Built(lambda: F.avg_pool2d(x, k, s, p), f"F.avg_pool2d ({layout})", [x])
    if op.indices:  # two calls: torch's hints type return_indices as a literal True or False
        return Built(lambda: F.max_pool2d(x, k, s, p, return_indices=True), f"F.max_pool2d ({layout}, with indices)",
                     [x])
    return Built(lambda: F.max_pool2d(x, k, s, p, return_indices=False), f"F.max_pool2d ({layout})", [x])
