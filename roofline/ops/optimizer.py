"""Optimizer steps: AdamW over `numel` parameter elements in `tensors` equal tensors, as torch's fused kernel
(`torch._fused_adamw_`, `AdamW(fused=True)`) runs it: one multi-tensor pass, every element's parameter, gradient
and both moments read, the parameter and both moments written (the gradients are written back only with a grad
scale: torch's aten/src/ATen/native/cuda/fused_adam_utils.cuh, "Conditional Gradient Store").

FLOP convention: 12 per element (both moments updated: 4; their bias corrections: 2; sqrt, eps, the division,
lr and the decoupled weight decay: 6), as the profile's optimizer rule counts.
NB: the moments in the parameters' dtype (torch keeps them so); the fp32 step count per tensor read; amsgrad's
fourth state and a grad scale (AMP, which writes the unscaled gradients back) not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.core.dtypes import DType
from roofline.core.errors import UsageError
from roofline.core.validate import arg_name
from roofline.ops.base import HALF_AND_WIDER, INDEX, WEIGHTS, Operator, Traffic, operator, param, rw

ADAMW_FLOPS = 12  # per parameter element (module docstring)
STEP_BYTES = 4  # each tensor's fp32 step count


@operator("adamw", "optimizer")
@dataclass(frozen=True)
class AdamW(Operator):
    """One fused AdamW step over `tensors` tensors of numel / tensors elements each."""

    summary = "a fused AdamW step (torch._fused_adamw_): parameters, gradients and two moments in one pass"
    ignores = "NB: 12 FLOPs an element; p, g, m, v read once, p, m, v written once; no amsgrad, no grad scale."
    dtypes = HALF_AND_WIDER
    numel: int = param(2**27, "parameter elements in all")
    tensors: int = param(64, "parameter tensors (equal sizes; the multi-tensor kernel's lists)")

    def check(self) -> None:
        if self.tensors > self.numel:
            raise UsageError(f"{self.name}: {arg_name('tensors')} ({self.tensors}) exceeds {arg_name('numel')} "
                             f"({self.numel})")

    def flops(self) -> float:
        return float(ADAMW_FLOPS * self.numel)

    def traffic(self, dtype: DType) -> Traffic:
        return rw({WEIGHTS: 4 * self.numel * dtype.bytes, INDEX: self.tensors * STEP_BYTES},
                  {WEIGHTS: 3 * self.numel * dtype.bytes})
