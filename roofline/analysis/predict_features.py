"""Where the predictor places an op among its family's points (analysis/predict.py): decades of roofline time
and intensity, and the coordinates and work factors the families declare (analysis/families.py: a GEMM's and a
convolution's implicit-GEMM dimensions, a cat's runs, an elementwise pass's strided input, a reduction's dimension,
a norm's rows, attention's padded tiles). Each coordinate entered because it lowered its family's leave-one-out
error in the sweep. Pure functions of a record's or a point's parameters, torch-free."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def features(roofline_time_s: float, intensity: float) -> tuple[float, float]:
    """(decades of roofline time, decades of intensity); an intensity of 0 counts as 1e-6 FLOP/byte."""
    return math.log10(roofline_time_s), math.log10(max(intensity, 1e-6))


def gemm_dims(params: Mapping[str, Any]) -> tuple[float, ...]:
    """Decades of the product's rows (batch included), columns and reduction depth; ALIGN_DISTANCE more when a
    leading dimension is not a multiple of ALIGN_ELEMENTS (`misaligned`)."""
    return (math.log10(params["m"] * params.get("batch", 1)), math.log10(params["n"]), math.log10(params["k"]),
            ALIGN_DISTANCE * float(misaligned(params)))


def grouped_dims(params: Mapping[str, Any]) -> tuple[float, ...]:
    """Decades of a grouped GEMM's groups, rows per group, columns and depth, and its alignment (`gemm_dims`): the
    grouped kernels tile each group apart, so a few rows per group (a decode's experts) fill few tiles."""
    return (math.log10(params["groups"]), math.log10(params["m"]), math.log10(params["n"]), math.log10(params["k"]),
            ALIGN_DISTANCE * float(misaligned(params)))


def misaligned(params: Mapping[str, Any]) -> bool:
    """Whether a GEMM's operands have a leading dimension that is not a multiple of ALIGN_ELEMENTS: the ones a
    profile recorded (`ld`, from the inputs' strides: a transposed operand's is its other dimension), else those
    of row-major operands (A: k, B and the output: n). cuBLAS's tensor-core kernels load 16-byte vectors; an
    unaligned leading dimension sends the product to slower kernels (a vocabulary of 50257 columns)."""
    lds = params.get("ld") or (params["k"], params["n"])
    return any(int(ld) % ALIGN_ELEMENTS for ld in lds)


def conv_dims(params: Mapping[str, Any]) -> tuple[float, ...]:
    """Decades of the implicit GEMM a convolution is: N x Hout x Wout rows, Cout columns, Cin/groups x K x K deep;
    NCHW_DISTANCE more for an NCHW input on a GPU (cuDNN's NCHW kernels are others than its channels-last ones);
    and decades of the window (K x K) and of the stride squared: the same implicit GEMM runs other kernels for a 1x1
    and a 16x16 window, or a strided 1x1."""
    from roofline.ops.conv import conv_out_size

    k, s, pad, d = params["kernel_size"], params.get("stride", 1), params.get("padding", 0), params.get("dilation", 1)
    hout, wout = (conv_out_size(params[side], k, s, pad, d) for side in ("height", "width"))
    groups = params.get("groups", 1)
    return (math.log10(params["batch"] * max(hout * wout, 1)), math.log10(params["out_channels"] / groups),
            math.log10(params["in_channels"] // groups * k * k), NCHW_DISTANCE * float(bool(params.get("nchw"))),
            math.log10(k * k), math.log10(s * s))


def cat_dims(params: Mapping[str, Any]) -> tuple[float, ...]:
    """Decades of the contiguous run each input contributes per outer index (tail x inner) and of inner, and a
    decade more for inputs with gaps (their copies leave the contiguous path)."""
    return (math.log10(params["tail"] * params["inner"]), math.log10(params["inner"]),
            float(bool(params.get("strided"))))


def elementwise_dims(params: Mapping[str, Any]) -> tuple[float, ...]:
    """Decades of the contiguous run a strided or broadcast input is read in (`run`), RUN_DENSE for dense
    inputs, and a decade more for a broadcast one (`bcast`: torch's kernel leaves its vectorised path for both)."""
    run = params.get("run") or 0
    return (math.log10(min(run, RUN_DENSE) if run > 0 else RUN_DENSE), float(bool(params.get("bcast"))))


def reduction_dims(params: Mapping[str, Any]) -> tuple[float, ...]:
    """COLUMNS_DISTANCE for a reduction over the first dimension (each column: torch's column kernels, much slower than
    its row kernels at the same bytes), 0 over the last."""
    return (COLUMNS_DISTANCE * float(params.get("dim") == "first"),)


def norm_dims(params: Mapping[str, Any]) -> tuple[float, ...]:
    """Decades of rows: torch's norm kernels give each row its own block (or warp), so the rows, not the bytes,
    set how full the GPU is (few long rows fill few SMs)."""
    return (math.log10(params["rows"]),)


def optimizer_dims(params: Mapping[str, Any]) -> tuple[float, ...]:
    """Decades of each tensor's elements: the multi-tensor kernel's chunks of one tensor (a model's many small
    norm weights beside its large projections)."""
    return (math.log10(params["numel"] / params["tensors"]),)


# A leading dimension a multiple of this many elements keeps 16-byte loads of 16-bit operands.
ALIGN_ELEMENTS = 8
# How far (in decades) a GEMM with an unaligned leading dimension sits from an aligned one of the same size: beyond
# the neighbours' spread, so each is predicted from its own points where there are some.
ALIGN_DISTANCE = 2.0
# How far (in decades) a column reduction sits from a row reduction of the same size: beyond the neighbours' spread.
COLUMNS_DISTANCE = 2.0
# How far (in decades) an NCHW convolution sits from a channels-last one of the same implicit GEMM: beyond the
# 4 nearest neighbours' spread within a layout, so each layout is predicted from its own points where it has them.
NCHW_DISTANCE = 2.0
# Where a dense input sits on the elementwise run coordinate: beyond every swept run (64, 1024), 3 decades from
# the longest, so a dense query's nearest points are dense ones.
RUN_DENSE = 2**20
# Catalog operators of one family that run other kernels: a coordinate (decades) apart, beyond the neighbours'
# spread, so each is predicted from its own points where it has them (torch's RMS norm kernel reaches a larger
# share of its bound than its LayerNorm on the same shapes).
KIND_DISTANCE = 2.0
NORM_KINDS = {"rmsnorm": KIND_DISTANCE, "add_rmsnorm": KIND_DISTANCE}
# The square of query rows by keys a fused attention kernel computes as one tile: FlashAttention-2's and cuDNN's
# forward on Hopper take 128 query rows a block over blocks of 64-128 keys.
ATTENTION_TILE = 128


def padded_pairs_ratio(params: Mapping[str, Any]) -> float:
    """`ops.attention.tile_padding` of an attention shape at ATTENTION_TILE (ViT-B/16's 197 tokens: 1.69)."""
    from roofline.ops.attention import tile_padding

    sq = int(params["seq"])
    return tile_padding(sq, int(params.get("kv_seq") or sq), bool(params.get("causal")), ATTENTION_TILE)
