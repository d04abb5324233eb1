"""Builder for softmax: torch.softmax over the last dimension (one library kernel)."""

from __future__ import annotations

import torch

from roofline.core.dtypes import DType
from roofline.measuring.kernels.common import rand
from roofline.measuring.kernels.registry import Built, builder
from roofline.ops.softmax import Softmax


@builder("softmax")
def build_softmax(op: Softmax, dtype: DType, device: str) -> Built:
    op.check_dtype(dtype)
    x = rand((op.rows, op.cols), dtype, device, scale=3.0)  # attention-like logits
    return Built(lambda: torch.softmax(x, dim=-1), "torch.softmax", [x])
