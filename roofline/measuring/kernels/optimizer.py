"""Builder for adamw: torch._fused_adamw_ (AdamW(fused=True)'s kernel) over `tensors` parameters of equal size,
their gradients and moments random, the fp32 step counts on the device (as the fused optimizer keeps them)."""

from __future__ import annotations

import torch

from roofline.core.dtypes import DType
from roofline.measuring.kernels.common import rand
from roofline.measuring.kernels.registry import Built, builder
from roofline.ops.optimizer import AdamW


@builder("adamw")
def build_adamw(op: AdamW, dtype: DType, device: str) -> Built:
    op.check_dtype(dtype)
    n, size = op.tensors, op.numel // op.tensors
    params, grads = [rand((size,), dtype, device) for _ in range(n)], [rand((size,), dtype, device) for _ in range(n)]
    avgs = [rand((size,), dtype, device, 0.01) for _ in range(n)]
    sqs = [rand((size,), dtype, device, 0.01).abs() for _ in range(n)]
    steps = [torch.ones((), dtype=torch.float32, device=device) for _ in range(n)]

    def step() -> tuple[torch.Tensor, ...]:  # the parameters, updated in place
        torch._fused_adamw_(params, grads, avgs, sqs, [], steps, lr=1e-3, beta1=0.9, beta2=0.999,
                            weight_decay=0.01, eps=1e-8, amsgrad=False, maximize=False)
        return tuple(params)

    return Built(step, "torch._fused_adamw_ (AdamW(fused=True))", [params, grads, avgs, sqs, steps])
