"""Builder for conv2d: F.conv2d (cuDNN on the GPU, channels-last so the tensor cores take it without
transposes, or NCHW with --nchw, as a model not converted to channels_last runs; NCHW on the CPU). torch cannot
force an algorithm: with --algo winograd* the library still picks its own (maybe Winograd, maybe implicit GEMM),
which `impl` says.

cudnn.benchmark stays off (torch's default, cuDNN's heuristic choice). With it on, cuDNN's own timing chooses
per process between launch shapes of one kernel whose times differ by several percent, so two runs of one shape
disagree; off, every process runs the same launch shape."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from roofline.core.dtypes import DType
from roofline.measuring.kernels.common import rand, set_tf32
from roofline.measuring.kernels.registry import Built, builder
from roofline.ops.conv import Conv2d


@builder("conv2d")
def build_conv2d(op: Conv2d, dtype: DType, device: str) -> Built:
    op.check_dtype(dtype)
    set_tf32(dtype)
    n, cin, hgt, wid = op.batch, op.in_channels, op.height, op.width
    cout, k, groups = op.out_channels, op.kernel_size, op.groups
    stride, padding, dilation = op.stride, op.padding, op.dilation
    fan_in = cin // groups * k * k
    x = rand((n, cin, hgt, wid), dtype, device)
    w = rand((cout, cin // groups, k, k), dtype, device, scale=1 / math.sqrt(fan_in))  # Kaiming-like scale
    bias = rand((cout,), dtype, device, scale=0.1) if op.bias else None
    if device == "cpu":
        impl = "F.conv2d (NCHW)"
    elif op.nchw:
        torch.backends.cudnn.benchmark = False
        impl = "F.conv2d (cuDNN heuristic choice, NCHW)"
    else:
        torch.backends.cudnn.benchmark = False
        x, w = x.contiguous(memory_format=torch.channels_last), w.contiguous(memory_format=torch.channels_last)
        impl = "F.conv2d (cuDNN heuristic choice, channels-last)"
    if op.algo != "direct":
        impl += f"; --algo {op.algo} not forced: the library picks its algorithm"
    return Built(lambda: F.conv2d(x, w, bias, stride, padding, dilation, groups), impl, [x, w, bias])
