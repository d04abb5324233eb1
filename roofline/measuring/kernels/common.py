"""Input helpers for the builders: realistic random tensors (never zeros) of any supported dtype."""

from __future__ import annotations

from typing import Any

import torch

from roofline.core.dtypes import DType


def torch_dtype(dtype: DType) -> torch.dtype:
    return getattr(torch, dtype.torch_name)


def rand(shape: tuple[int, ...] | list[int], dtype: DType, device: str, scale: float = 1.0) -> torch.Tensor:
    """Normal(0, scale) values in `dtype`; int8 as uniform integers in [-64, 64); fp8 via bf16."""
    if dtype.name == "int8":
        return torch.randint(-64, 64, tuple(shape), dtype=torch.int8, device=device)
    if dtype.name == "fp8":
        return (torch.randn(tuple(shape), dtype=torch.bfloat16, device=device) * scale).to(torch.float8_e4m3fn)
    return torch.randn(tuple(shape), dtype=torch_dtype(dtype), device=device) * scale


def set_tf32(dtype: DType) -> Any:
    """TF32 on for tf32, off for fp32 (true FP32): the matmul precision the record claims."""
    torch.backends.cuda.matmul.allow_tf32 = dtype.name == "tf32"
    torch.backends.cudnn.allow_tf32 = dtype.name == "tf32"


def cnn_layout(x: torch.Tensor, device: str) -> tuple[torch.Tensor, str]:
    """An N x C x H x W input as a CNN runs it on `device`: channels-last on a GPU (what cuDNN's kernels take
    without transposes), NCHW on the CPU; and the layout's name for `impl`."""
    if device == "cpu":
        return x, "NCHW"
    return x.contiguous(memory_format=torch.channels_last), "channels-last"
