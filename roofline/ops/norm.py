"""Normalisation over the last dimension: LayerNorm, RMSNorm, and each with the residual add fused in; and batch
norm over a CNN's channels.

FLOP convention (one FLOP per add, mul, compare, division or rsqrt, as in elementwise.py), for an x of
`rows` x `cols` normalised along `cols`:
- layernorm: 7 per element (sum for the mean, subtract the mean, square, sum for the variance, scale by
  rstd, multiply by gamma, add beta) + 4 per row (mean = sum / cols, var = sum / cols, + eps, rsqrt);
- rmsnorm: 4 per element (square, sum, scale by rstd, multiply by the weight) + 3 per row (/ cols, + eps,
  rsqrt);
- the fused residual add: 1 more per element (x + z).

NB: x is read once (a row is kept on chip between the statistics and the normalisation), and the mean/rstd
that torch's native_layer_norm also writes for the backward pass (8 bytes a row) are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from roofline.core.dtypes import DType
from roofline.ops.base import (
    ACTIVATIONS,
    HALF_AND_WIDER,
    INTERMEDIATES,
    WEIGHTS,
    Operator,
    Traffic,
    choice,
    flag,
    operator,
    param,
    rw,
)
from roofline.ops.counts import FLOPS_PER_ELEMENT

NORM_DTYPES = HALF_AND_WIDER

# FLOPs of each norm, per element and per row (see the module docstring for what is counted).
FLOPS_PER_ELEMENT_OF: dict[str, int] = {"layernorm": 7, "rmsnorm": 4}
FLOPS_PER_ROW_OF: dict[str, int] = {"layernorm": 4, "rmsnorm": 3}
# Affine parameter vectors of length `cols`: gamma and beta for LayerNorm, the weight for RMSNorm.
AFFINE_VECTORS_OF: dict[str, int] = {"layernorm": 2, "rmsnorm": 1}


def norm_flops(norm: str, rows: int, cols: int) -> int:
    return FLOPS_PER_ELEMENT_OF[norm] * rows * cols + FLOPS_PER_ROW_OF[norm] * rows


def affine_bytes(norm: str, cols: int, dtype: DType) -> float:
    """The affine parameters, read once (they stay in L2/registers across rows)."""
    return AFFINE_VECTORS_OF[norm] * cols * dtype.bytes


@dataclass(frozen=True)
class _Norm(Operator):
    """y = norm(x) * weight (+ bias) over the last dimension of a rows x cols tensor."""

    dtypes = NORM_DTYPES
    norm: ClassVar[str] = ""
    rows: int = param(4096, "rows normalised independently (tokens)")
    cols: int = param(4096, "elements per row: the normalised (hidden) dimension")

    def flops(self) -> float:
        return norm_flops(self.norm, self.rows, self.cols)

    def traffic(self, dtype: DType) -> Traffic:
        n = self.rows * self.cols * dtype.bytes
        return rw({ACTIVATIONS: n, WEIGHTS: affine_bytes(self.norm, self.cols, dtype)}, {ACTIVATIONS: n})


@operator("layernorm", "norm")
@dataclass(frozen=True)
class LayerNorm(_Norm):
    """y = (x - mean) / sqrt(var + eps) * gamma + beta, per row."""

    summary = "LayerNorm over the last dimension, with gamma and beta (the affine params are WEIGHTS)"
    ignores = "NB: x read once (row kept on chip); the mean/rstd torch saves for backward not counted."
    norm = "layernorm"


@operator("rmsnorm", "norm")
@dataclass(frozen=True)
class RMSNorm(_Norm):
    """y = x / sqrt(mean(x^2) + eps) * weight, per row."""

    summary = "RMSNorm over the last dimension, with a weight (WEIGHTS)"
    ignores = "NB: x read once (row kept on chip); the rstd torch may save for backward not counted."
    norm = "rmsnorm"


@dataclass(frozen=True)
class _AddNorm(Operator):
    """s = x + z (z the residual stream); y = norm(s). Pre-norm transformers need s as the new residual.

    fused: one pass reads x and z, writes y, and writes s when `write_sum` (the default).
    unfused: an add kernel reads x and z and writes s; the norm kernel reads s back and writes y. s is written
    whatever `write_sum` says (the norm kernel needs it); without `write_sum` it is a pure temporary.
    """

    dtypes = NORM_DTYPES
    norm: ClassVar[str] = ""
    rows: int = param(4096, "rows normalised independently (tokens)")
    cols: int = param(4096, "elements per row: the normalised (hidden) dimension")
    write_sum: bool = flag(True, "also write x + z, the new residual stream pre-norm transformers need "
                                 "(default on); --no-write-sum when only the normalised output is used")
    variant: str = choice("fused", ("fused", "unfused"),
                          "fused: one pass; unfused: add kernel writes x + z, the norm reads it back")

    def flops(self) -> float:
        return FLOPS_PER_ELEMENT["add"] * self.rows * self.cols + norm_flops(self.norm, self.rows, self.cols)

    def traffic(self, dtype: DType) -> Traffic:
        n = self.rows * self.cols * dtype.bytes
        t = rw({ACTIVATIONS: 2 * n, WEIGHTS: affine_bytes(self.norm, self.cols, dtype)}, {ACTIVATIONS: n})
        if self.variant == "fused":
            if self.write_sum:
                t = t + rw(written={ACTIVATIONS: n})
            return t
        # unfused: the sum is written by the add kernel and read back by the norm kernel
        written_kind = ACTIVATIONS if self.write_sum else INTERMEDIATES
        return t + rw({INTERMEDIATES: n}, {written_kind: n})


@operator("add_layernorm", "norm")
@dataclass(frozen=True)
class AddLayerNorm(_AddNorm):
    summary = "residual add fused into LayerNorm: y = layernorm(x + z), optionally writing x + z"
    ignores = "NB: unfused = add writes x+z and LayerNorm reads it back; mean/rstd for backward not counted."
    norm = "layernorm"


@operator("add_rmsnorm", "norm")
@dataclass(frozen=True)
class AddRMSNorm(_AddNorm):
    summary = "residual add fused into RMSNorm: y = rmsnorm(x + z), optionally writing x + z"
    ignores = "NB: unfused = add writes x+z and RMSNorm reads it back; rstd for backward not counted."
    norm = "rmsnorm"


# Batch norm's FLOPs per element and per channel: inference normalises with the running statistics (subtract the
# mean, scale by rstd, multiply by the weight, add the bias; per channel var + eps and rsqrt); training also
# computes the statistics (LayerNorm's 7 per element, 4 per channel).
BN_INFERENCE = (4, 2)
BN_TRAINING = (7, 4)
# Per-channel vectors batch norm reads: weight, bias, running mean and variance.
BN_VECTORS = 4


@operator("batchnorm", "norm")
@dataclass(frozen=True)
class BatchNorm(Operator):
    """y = (x - mean[c]) / sqrt(var[c] + eps) * weight[c] + bias[c] over an N x C x H x W input."""

    summary = "BatchNorm2d: per-channel statistics over batch and pixels (a CNN's norm)"
    ignores = "NB: x read once and y written once; running-statistics updates and saved statistics not counted."
    dtypes = NORM_DTYPES
    batch: int = param(32, "images (N)")
    channels: int = param(256, "channels (C), one mean and variance each")
    height: int = param(56, "height (H)")
    width: int | None = param(None, "width (W); default: the height")
    training: bool = flag(False, "compute the batch's statistics (a training step) instead of the running ones")

    def resolve(self) -> None:
        if self.width is None:
            self._set("width", self.height)

    def numel(self) -> int:
        return self.batch * self.channels * self.height * (self.width or self.height)

    def flops(self) -> float:
        per_elem, per_channel = BN_TRAINING if self.training else BN_INFERENCE
        return per_elem * self.numel() + per_channel * self.channels

    def traffic(self, dtype: DType) -> Traffic:
        n = self.numel() * dtype.bytes
        return rw({ACTIVATIONS: n, WEIGHTS: BN_VECTORS * self.channels * dtype.bytes}, {ACTIVATIONS: n})
