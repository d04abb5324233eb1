"""The operator catalogue: hand-computed FLOPs and bytes (arithmetic beside each number), the claims the docs
make (fused add+LayerNorm, naive vs FlashAttention, fp8 KV cache), impossible shapes, and every kernel
builder run once on the CPU at a tiny shape."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from roofline.core.dtypes import get_dtype
from roofline.core.errors import UsageError
from roofline.measuring.kernels import BUILDERS, build, footprint_bytes
from roofline.ops import OPERATORS, make
from roofline.ops.attention import causal_pairs, kv_rows_per_query_head
from roofline.ops.base import ACTIVATIONS, INDEX, INTERMEDIATES, KV_CACHE, WEIGHTS

FP16, BF16, FP32 = get_dtype("fp16"), get_dtype("bf16"), get_dtype("fp32")


def traffic(name: str, dtype: str = "fp16", **params: Any) -> tuple[dict[str, float], dict[str, float]]:
    t = make(name, dtype, **params).traffic(get_dtype(dtype))
    return t.read, t.written


# -- normalisation ------------------------------------------------------------------------------------------

def test_layernorm() -> None:
    op = make("layernorm", rows=4, cols=8)
    assert op.flops() == 240  # 7*4*8 + 4*4 = 224 + 16
    read, written = traffic("layernorm", rows=4, cols=8)
    assert read == {ACTIVATIONS: 64, WEIGHTS: 32}  # x: 4*8*2; gamma, beta: 2*8*2
    assert written == {ACTIVATIONS: 64}  # y: 4*8*2


def test_rmsnorm() -> None:
    assert make("rmsnorm", rows=4, cols=8).flops() == 140  # 4*4*8 + 3*4 = 128 + 12
    read, written = traffic("rmsnorm", "fp32", rows=4, cols=8)
    assert read == {ACTIVATIONS: 128, WEIGHTS: 32}  # x: 4*8*4; weight: 8*4
    assert written == {ACTIVATIONS: 128}


def test_add_layernorm_variants() -> None:
    shape = {"rows": 4, "cols": 8}
    assert make("add_layernorm", **shape).flops() == 272  # 4*8 adds + 240 (layernorm above)
    # fused, sum written (default): read x, z (2*64) + gamma, beta (32); write y and x+z (2*64)
    assert traffic("add_layernorm", **shape) == ({ACTIVATIONS: 128, WEIGHTS: 32}, {ACTIVATIONS: 128})
    # fused, no sum: y only
    assert traffic("add_layernorm", write_sum=False, **shape) == ({ACTIVATIONS: 128, WEIGHTS: 32}, {ACTIVATIONS: 64})
    # unfused: the add writes x+z (64, an output here), the norm reads it back (64)
    assert traffic("add_layernorm", variant="unfused", **shape) == (
        {ACTIVATIONS: 128, WEIGHTS: 32, INTERMEDIATES: 64}, {ACTIVATIONS: 128})
    # unfused without the sum as an output: the same bytes, the sum now a pure temporary
    assert traffic("add_layernorm", variant="unfused", write_sum=False, **shape) == (
        {ACTIVATIONS: 128, WEIGHTS: 32, INTERMEDIATES: 64}, {ACTIVATIONS: 64, INTERMEDIATES: 64})


def test_add_rmsnorm() -> None:
    assert make("add_rmsnorm", rows=4, cols=8).flops() == 172  # 4*8 adds + 140
    # one weight vector: 8*2 bytes
    assert traffic("add_rmsnorm", rows=4, cols=8) == ({ACTIVATIONS: 128, WEIGHTS: 16}, {ACTIVATIONS: 128})


def test_fused_add_layernorm_saves_40_percent_without_the_sum() -> None:
    """Done-when: unfused moves >= 1.6x the fused bytes. True when the fused kernel writes y alone (post-norm, or
    the sum not needed): 5 passes of rows x cols against 3, 40% saved. Writing the sum (pre-norm, the default)
    makes it 5 against 4: 20% saved."""
    shape = {"rows": 4096, "cols": 4096}
    n = 4096 * 4096 * 2  # bytes of one fp16 rows x cols tensor
    w = 2 * 4096 * 2  # gamma and beta

    def total(**p: Any) -> float:
        return make("add_layernorm", **shape, **p).traffic(FP16).total

    fused, unfused = total(write_sum=False), total(variant="unfused", write_sum=False)
    assert (fused, unfused) == (3 * n + w, 5 * n + w)
    assert unfused >= 1.6 * fused
    assert 1 - fused / unfused == pytest.approx(0.40, abs=0.001)
    fused_sum = total()
    assert fused_sum == 4 * n + w
    assert total(variant="unfused") == unfused  # the unfused form writes the sum either way
    assert 1 - fused_sum / unfused == pytest.approx(0.20, abs=0.001)


# -- softmax ------------------------------------------------------------------------------------------------

def test_softmax() -> None:
    assert make("softmax", rows=3, cols=10).flops() == 150  # 5 * 3*10 (max, sub, exp, sum, div)
    assert traffic("softmax", "bf16", rows=3, cols=10) == ({ACTIVATIONS: 60}, {ACTIVATIONS: 60})  # 3*10*2


# -- attention ----------------------------------------------------------------------------------------------

ATT = {"batch": 2, "heads": 4, "kv_heads": 2, "seq": 16, "head_dim": 8}
# Q = O = 2*4*16*8*2 = 2048 bytes; K = V = 2*2*16*8*2 = 1024 bytes; S = P = 2*4*16*16*2 = 4096 bytes


def test_attention_flops() -> None:
    # flops: the two matrix products only, 4*D per pair; the softmax's 5 per pair are extra_flops
    assert make("attention", **ATT).flops() == 65536  # 4*8 * 2*4 * 16*16 = 32 * 2048
    assert make("attention", **ATT).extra_flops() == 10240  # 5 * 2048
    # causal: the 16 x 17 / 2 = 136 of the 256 pairs the mask keeps, diagonal included: 32 * 8 * 136
    assert make("attention", causal=True, **ATT).flops() == 34816
    assert make("attention", causal=True, **ATT).extra_flops() == 5440  # 5 * 8 * 136
    # causal with a cached prefix (Sq=4, Skv=10), bottom-right: the queries see 7, 8, 9, 10 keys = 34 pairs
    assert causal_pairs(4, 10, "bottom_right") == 34
    assert make("attention", **{**ATT, "seq": 4, "kv_seq": 10}, causal=True).flops() == 32 * 8 * 34


def test_attention_flash_traffic() -> None:
    assert traffic("attention", **ATT) == ({ACTIVATIONS: 2048, KV_CACHE: 2048}, {ACTIVATIONS: 2048})
    # --tile 4: 4 query tiles per (batch, query head), each streams all 16 K and V rows:
    # 2*4 * 4*16 = 512 rows of K and of V: 2 * 512 * 8 * 2 = 16384 bytes
    assert traffic("attention", tile=4, **ATT)[0] == {ACTIVATIONS: 2048, KV_CACHE: 16384}
    # causal, tile 4: the tiles see 4, 8, 12, 16 keys = 40 rows per head: 2 * 2*4*40 * 8 * 2 = 10240
    assert traffic("attention", tile=4, causal=True, **ATT)[0] == {ACTIVATIONS: 2048, KV_CACHE: 10240}


def test_kv_rows_per_query_head_matches_brute_force() -> None:
    for sq, skv, tile in [(16, 16, 4), (17, 20, 4), (5, 9, 2), (7, 7, 16), (100, 130, 12), (1, 3, 1)]:
        for causal in (False, True):
            brute = sum(skv if not causal else skv - sq + min((t + 1) * tile, sq)
                        for t in range(math.ceil(sq / tile)))
            assert kv_rows_per_query_head(sq, skv, tile, causal) == brute


def test_attention_naive_traffic() -> None:
    # S written, S read, P written, P read: 2 reads and 2 writes of 4096 bytes
    assert traffic("attention", variant="naive", **ATT) == (
        {ACTIVATIONS: 2048, KV_CACHE: 2048, INTERMEDIATES: 8192}, {ACTIVATIONS: 2048, INTERMEDIATES: 8192})
    # causal: masked_fill_ reads and writes S once more (3 * 4096 each way) and reads the 16*16 bool mask
    assert traffic("attention", variant="naive", causal=True, **ATT) == (
        {ACTIVATIONS: 2048, KV_CACHE: 2048, INTERMEDIATES: 12288, INDEX: 256},
        {ACTIVATIONS: 2048, INTERMEDIATES: 12288})


@pytest.mark.parametrize("causal", [False, True])
def test_naive_attention_moves_10x_flash(causal: bool) -> None:
    """Done-when: at seq 4096, head_dim 128 naive attention moves >= 10x FlashAttention's bytes.
    32 heads, fp16: Q, K, V, O are 32 MiB each (128 MiB); S is 32*4096*4096*2 = 1 GiB, moved 4 times (6 causal)."""
    shape = {"batch": 1, "heads": 32, "seq": 4096, "head_dim": 128, "causal": causal}
    flash = make("attention", **shape).traffic(FP16).total
    naive = make("attention", variant="naive", **shape).traffic(FP16).total
    assert flash == 4 * 2**25
    assert naive >= 10 * flash
    assert naive / flash == pytest.approx((4 * 2**25 + (6 if causal else 4) * 2**30 + causal * 2**24) / flash)


def test_decode_attention() -> None:
    shape = {"batch": 2, "heads": 8, "kv_heads": 2, "context": 100, "head_dim": 64}
    assert make("decode_attention", **shape).flops() == 409600  # 4*64 * 2*8 * 100 = 256 * 1600
    assert make("decode_attention", **shape).extra_flops() == 8000  # the softmax: 5 * 1600
    # q = O = 2*8*64*2 = 2048; K + V = 2 * 2*2*100*64*2 = 102400
    assert traffic("decode_attention", **shape) == ({ACTIVATIONS: 2048, KV_CACHE: 102400}, {ACTIVATIONS: 2048})
    # paged, 16 tokens a page: ceil(100/16) = 7 int32 entries per sequence: 2*7*4 = 56 bytes
    assert traffic("decode_attention", page_size=16, **shape)[0] == {ACTIVATIONS: 2048, KV_CACHE: 102400, INDEX: 56}


def test_fp8_kv_halves_decode_cache_bytes() -> None:
    """Done-when: an fp8 KV cache halves the decode KV-cache bytes (and, at long context, nearly the total)."""
    shape = {"batch": 16, "heads": 32, "kv_heads": 8, "context": 8192, "head_dim": 128}
    for dtype in ("fp16", "bf16"):
        base = make("decode_attention", **shape).traffic(get_dtype(dtype))
        fp8 = make("decode_attention", kv_dtype="fp8", **shape).traffic(get_dtype(dtype))
        assert fp8.by_kind()[KV_CACHE] == base.by_kind()[KV_CACHE] / 2
        assert fp8.by_kind()[ACTIVATIONS] == base.by_kind()[ACTIVATIONS]
        assert fp8.total / base.total == pytest.approx(0.5, abs=0.001)
    # --kv-dtype fp16 under --dtype bf16 moves what auto does: both 2 bytes
    assert make("decode_attention", kv_dtype="fp16", **shape).traffic(BF16).total == \
        make("decode_attention", **shape).traffic(BF16).total


# -- rope -----------------------------------------------------------------------------------------------------

def test_rope() -> None:
    shape = {"tokens": 4, "heads": 2, "head_dim": 8, "kv_heads": 1}
    assert make("rope", **shape).flops() == 288  # 3 * 4 * (2+1) * 8
    # q: 4*2*8*2 = 128 bytes, k: 4*1*8*2 = 64 bytes; cos, sin: 4*8*2 = 64 bytes each
    assert traffic("rope", **shape) == ({ACTIVATIONS: 192, WEIGHTS: 128}, {ACTIVATIONS: 192})
    # unfused, per tensor of n bytes: x read 2n, temporaries 3.5n each way, tables 2 x 64, out n
    # q (n=128) + k (n=64): x 256+128, temporaries 448+224, tables 128+128
    assert traffic("rope", variant="unfused", **shape) == (
        {ACTIVATIONS: 384, INTERMEDIATES: 672, WEIGHTS: 256}, {ACTIVATIONS: 192, INTERMEDIATES: 672})
    # q only: 3 * 4*2*8 = 192 FLOPs
    assert make("rope", tokens=4, heads=2, head_dim=8).flops() == 192


# -- conv2d ---------------------------------------------------------------------------------------------------

def test_conv2d() -> None:
    shape = {"batch": 2, "in_channels": 4, "height": 9, "width": 7, "out_channels": 6, "kernel_size": 3,
             "stride": 2, "padding": 1, "groups": 2, "bias": True}
    op = make("conv2d", **shape)
    # Hout = (9 + 2 - 2 - 1)//2 + 1 = 5; Wout = (7 + 2 - 2 - 1)//2 + 1 = 4; outputs 2*6*5*4 = 240
    assert op.out_hw() == (5, 4)
    assert op.flops() == 8640  # 2 * 240 * (4/2) * 3*3
    assert op.extra_flops() == 240  # the bias: 1 per output element
    # x 2*4*9*7 = 504, w 6*2*9 = 108 + bias 6, y 240; fp32
    assert traffic("conv2d", "fp32", **shape) == ({ACTIVATIONS: 2016, WEIGHTS: 456}, {ACTIVATIONS: 960})
    assert op.variant_name() == "direct" and "algo" not in op.params()


def test_a_stride_past_the_window_reads_only_the_pixels_it_touches() -> None:
    # 1x1, stride 2, 56x56 -> 28x28: a quarter of the input read (the H200 ran 64x1024x56x56 -> 128 in 35.2 us,
    # 2.5x faster than the whole input's 88 us at 4.8 TB/s allowed); bf16
    shape = {"batch": 64, "in_channels": 1024, "height": 56, "width": 56, "out_channels": 128, "kernel_size": 1,
             "stride": 2, "padding": 0}
    assert make("conv2d", **shape).touched_hw() == (28, 28)
    assert traffic("conv2d", "bf16", **shape) == ({ACTIVATIONS: 64 * 1024 * 28 * 28 * 2, WEIGHTS: 128 * 1024 * 2},
                                                  {ACTIVATIONS: 64 * 128 * 28 * 28 * 2})
    # a 3x3 with stride 2 overlaps its windows' span (3 > 2): every pixel read; ViT's 16x16 patches, stride 16,
    # tile the 224x224 image exactly: every pixel read too
    assert make("conv2d", **{**shape, "kernel_size": 3, "padding": 1}).touched_hw() == (56, 56)
    assert make("conv2d", batch=1, in_channels=3, height=224, width=224, out_channels=768, kernel_size=16,
                stride=16, padding=0).touched_hw() == (224, 224)
    # dilation 2 widens a 2x2 window to span 3: with stride 3 the windows abut and each skips its dilation gap
    # (4 windows x 2 taps = 8 of 12 rows); with stride 2 they overlap (every row read, the gaps aside: not modelled)
    dil = {"batch": 1, "in_channels": 1, "height": 12, "width": 12, "out_channels": 1, "kernel_size": 2,
           "dilation": 2, "padding": 0}
    assert make("conv2d", **dil, stride=3).touched_hw() == (8, 8)  # Hout 4 windows x 2 taps
    assert make("conv2d", **dil, stride=2).touched_hw() == (12, 12)


def test_conv2d_winograd() -> None:
    shape = {"batch": 1, "in_channels": 8, "height": 8, "width": 8, "out_channels": 8}  # 3x3, pad 1: 8x8 out
    direct = make("conv2d", **shape).flops()
    assert direct == 73728  # 2 * 1*8*8*8 * 8 * 9
    f2 = make("conv2d", algo="winograd", **shape)
    assert f2.variant_name() == "winograd2"  # "winograd" is F(2x2,3x3)
    assert f2.flops() == 32768  # 2 * 16 multiplies * (4*4 tiles) * (8*8 channel pairs)
    assert make("conv2d", algo="winograd4", **shape).flops() == 18432  # 2 * 36 * (2*2) * 64
    assert direct / f2.flops() == 2.25 and direct / make("conv2d", algo="winograd4", **shape).flops() == 4
    # a partial tile costs a whole one: 7x7 output in 2x2 tiles is 4*4 tiles, as 8x8
    assert make("conv2d", algo="winograd2", **{**shape, "height": 7, "width": 7}).flops() == 32768
    assert make("conv2d", algo="winograd", **shape).traffic(FP16) == make("conv2d", **shape).traffic(FP16)


# -- impossible shapes and dtypes ---------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "params", "message"), [
    ("conv2d", {"height": 2, "width": 8, "kernel_size": 5, "padding": 0}, "empty output"),
    ("conv2d", {"height": 8, "width": 8, "kernel_size": 3, "padding": 0, "dilation": 4}, "empty output"),
    ("conv2d", {"in_channels": 6, "groups": 4}, "not divisible by --groups"),
    ("conv2d", {"in_channels": 8, "out_channels": 6, "groups": 4}, "not divisible by --groups"),
    ("conv2d", {"kernel_size": 5, "algo": "winograd"}, "3x3"),
    ("conv2d", {"stride": 2, "algo": "winograd4"}, "3x3"),
    ("conv2d", {"padding": -1}, ">= 0"),
    ("attention", {"heads": 32, "kv_heads": 5}, "must divide"),
    ("attention", {"heads": 8, "kv_heads": 16}, "must divide"),
    ("attention", {"seq": 10, "kv_seq": 5, "causal": True}, "no key"),
    ("attention", {"variant": "naive", "tile": 64}, "flash only"),
    ("attention", {"head_dim": 0}, ">= 1"),
    ("decode_attention", {"heads": 12, "kv_heads": 8}, "must divide"),
    ("decode_attention", {"context": 0}, ">= 1"),
    ("decode_attention", {"kv_dtype": "int4"}, "must be one of"),
    ("rope", {"heads": 6, "kv_heads": 4}, "must divide"),
    ("rope", {"head_dim": 7}, "even"),
    ("layernorm", {"rows": 0}, ">= 1"),
    ("softmax", {"cols": -3}, ">= 1"),
    ("add_rmsnorm", {"variant": "fast"}, "must be one of"),
    ("conv2d", {"batch": 1.5}, "integer"),
])
def test_impossible_shapes_are_usage_errors(name: str, params: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        make(name, **params)


@pytest.mark.parametrize(("name", "dtype"), [("layernorm", "fp8"), ("softmax", "int8"), ("attention", "fp64"),
                                             ("decode_attention", "int8"), ("rope", "tf32"), ("conv2d", "fp8")])
def test_unsupported_dtypes_are_rejected(name: str, dtype: str) -> None:
    with pytest.raises(UsageError, match=f"does not support dtype {dtype}"):
        make(name, dtype)


def test_every_new_operator_says_what_it_ignores() -> None:
    for cls in OPERATORS.values():
        assert cls.ignores.startswith("NB: ") and "\n" not in cls.ignores, cls.name
        assert cls.summary and cls.dtypes, cls.name


# -- kernel builders ------------------------------------------------------------------------------------------

# (operator, params, expected output shape(s)) at tiny shapes, one per builder and variant.
TINY: list[tuple[str, dict[str, Any], list[tuple[int, ...]]]] = [
    ("gemm", {"m": 5, "n": 6, "k": 7}, [(5, 6)]),
    ("gemm", {"m": 5, "n": 6, "k": 7, "batch": 2}, [(2, 5, 6)]),
    ("gemm", {"m": 5, "n": 6, "k": 7, "epilogue": "bias"}, [(5, 6)]),
    ("gemm", {"m": 5, "n": 6, "k": 7, "epilogue": "gelu", "variant": "unfused"}, [(5, 6)]),
    ("gemv", {"m": 1, "n": 6, "k": 7}, [(1, 6)]),
    ("grouped_gemm", {"groups": 3, "m": 4, "n": 8, "k": 8}, [(12, 8)]),  # 3 groups of 4 rows; 16-byte strides
    *[(f, {"numel": 10}, [(10,)]) for f in ("relu", "add", "mul", "gelu", "silu", "copy")],
    ("swiglu", {"numel": 10}, [(10,)]),
    ("swiglu", {"numel": 10, "variant": "unfused"}, [(10,)]),
    ("chain", {"numel": 10, "length": 3}, [(10,)]),
    ("chain", {"numel": 10, "length": 3, "variant": "unfused"}, [(10,)]),
    ("cat", {"outer": 3, "length": 5, "tail": 1, "inner": 4}, [(3, 6, 4)]),
    ("cat", {"outer": 3, "length": 5, "tail": 2, "parts": 3, "inner": 1, "strided": True}, [(3, 9, 1)]),
    ("cast", {"numel": 10, "to": "fp32"}, [(10,)]),
    ("layernorm", {"rows": 5, "cols": 12}, [(5, 12)]),
    ("rmsnorm", {"rows": 5, "cols": 12}, [(5, 12)]),
    ("add_layernorm", {"rows": 5, "cols": 12}, [(5, 12), (5, 12)]),
    ("add_layernorm", {"rows": 5, "cols": 12, "variant": "unfused", "write_sum": False}, [(5, 12)]),
    ("add_rmsnorm", {"rows": 5, "cols": 12, "write_sum": False}, [(5, 12)]),
    ("add_rmsnorm", {"rows": 5, "cols": 12, "variant": "unfused"}, [(5, 12), (5, 12)]),
    ("batchnorm", {"batch": 2, "channels": 3, "height": 5, "width": 4}, [(2, 3, 5, 4)]),
    ("batchnorm", {"batch": 2, "channels": 3, "height": 5, "training": True}, [(2, 3, 5, 5)]),
    ("pool2d", {"batch": 2, "channels": 3, "height": 9}, [(2, 3, 3, 3), (2, 3, 3, 3)]),  # 3x3 s3 p1, with indices
    ("pool2d", {"batch": 2, "channels": 3, "height": 8, "kernel_size": 2, "padding": 0, "func": "avg"},
     [(2, 3, 4, 4)]),
    ("softmax", {"rows": 5, "cols": 12}, [(5, 12)]),
    *[("reduce", {"rows": 5, "cols": 12, "func": f}, [(5,)]) for f in ("sum", "mean", "amax")],
    ("attention", {"batch": 2, "heads": 4, "seq": 7, "head_dim": 8}, [(2, 4, 7, 8)]),
    ("attention", {"batch": 2, "heads": 4, "kv_heads": 2, "seq": 7, "kv_seq": 11, "head_dim": 8, "causal": True},
     [(2, 4, 7, 8)]),
    ("attention", {"batch": 2, "heads": 4, "kv_heads": 1, "seq": 7, "head_dim": 8, "variant": "naive",
                   "causal": True}, [(2, 4, 7, 8)]),
    ("decode_attention", {"batch": 2, "heads": 4, "context": 9, "head_dim": 8}, [(2, 4, 1, 8)]),
    ("decode_attention", {"batch": 2, "heads": 4, "kv_heads": 2, "context": 9, "head_dim": 8, "kv_dtype": "fp8",
                          "page_size": 4}, [(2, 4, 1, 8)]),
    ("rope", {"tokens": 6, "heads": 4, "head_dim": 8}, [(6, 4, 8)]),
    ("rope", {"tokens": 6, "heads": 4, "head_dim": 8, "kv_heads": 2, "variant": "unfused"}, [(6, 4, 8), (6, 2, 8)]),
    ("conv2d", {"batch": 2, "in_channels": 4, "height": 9, "width": 7, "out_channels": 6}, [(2, 6, 9, 7)]),
    ("conv2d", {"batch": 2, "in_channels": 4, "height": 9, "width": 7, "out_channels": 6, "nchw": True},
     [(2, 6, 9, 7)]),
    ("conv2d", {"batch": 2, "in_channels": 4, "height": 9, "width": 7, "out_channels": 6, "stride": 2,
                "groups": 2, "dilation": 2, "bias": True}, [(2, 6, 4, 3)]),
    ("embedding", {"tokens": 6, "vocab": 11, "dim": 8}, [(6, 8)]),
    ("embedding", {"tokens": 6, "vocab": 11, "dim": 8, "backward": True}, [(11, 8)]),  # the whole table's gradient
    ("attention", {"batch": 1, "heads": 2, "seq": 8, "head_dim": 8, "backward": True}, [(1, 2, 8, 8)] * 3),
    ("reduce", {"rows": 6, "cols": 5, "dim": "first"}, [(5,)]),
    ("adamw", {"numel": 12, "tensors": 3}, [(4,)] * 3),  # the parameters, updated in place
]


def _shapes(out: Any) -> list[tuple[int, ...]]:
    return [tuple(o.shape) for o in out] if isinstance(out, tuple) else [tuple(out.shape)]


def test_every_builder_has_a_tiny_case() -> None:
    build(make("relu", numel=1), FP32, "cpu")  # loads every builder module
    assert set(BUILDERS) <= {name for name, _, _ in TINY}
    # every operator can be timed, but collectives (timed by `roofline collectives`, across processes)
    assert set(BUILDERS) == {n for n, c in OPERATORS.items() if c.family != "collectives"}


@pytest.mark.parametrize(("name", "params", "shapes"), TINY,
                         ids=[f"{n}-{'-'.join(f'{k}={v}' for k, v in p.items())}" for n, p, _ in TINY])
def test_builder_runs_on_cpu(name: str, params: dict[str, Any], shapes: list[tuple[int, ...]]) -> None:
    op = make(name, "fp32", **params)
    built = build(op, FP32, "cpu")
    out = built.fn()
    assert _shapes(out) == shapes
    for o in (out if isinstance(out, tuple) else (out,)):
        assert torch.isfinite(o).all(), f"{name}: non-finite output"
    assert footprint_bytes(op, FP32) > 0
    assert built.impl


def test_cast_to_its_own_dtype_copies() -> None:
    """issue 30: `roofline analyze cast` on the CPU (fp32, to fp32 by default) timed x.to(fp32), which returns x
    itself: 1.9 us for 128 MB of traffic, 324257% of the roofline. The same dtype is timed as the copy the model
    counts (numel read and written); another dtype is the plain cast."""
    built = build(make("cast", "fp32", numel=64, to="fp32"), FP32, "cpu")
    x, out = built.inputs[0], built.fn()
    assert out.data_ptr() != x.data_ptr() and torch.equal(out, x) and "copy" in built.impl
    other = build(make("cast", "fp32", numel=64, to="bf16"), FP32, "cpu")
    assert other.fn().dtype == torch.bfloat16 and other.impl == "Tensor.to(bf16)"


def test_cpu_attention_names_the_cpu_kernel_it_ran() -> None:
    """On the CPU, 'ran' read 'fused backend: flash / efficient / cuDNN', CUDA's backends: it names the CPU's."""
    built = build(make("attention", batch=1, heads=2, seq=16, head_dim=8), FP32, "cpu")
    assert built.impl.startswith("F.scaled_dot_product_attention") and "cuDNN" not in built.impl
    assert "CPU flash-attention kernel" in built.impl or "math backend" in built.impl


@pytest.mark.parametrize("params", [
    {"batch": 2, "heads": 4, "kv_heads": 2, "seq": 7, "kv_seq": 11, "head_dim": 8, "causal": True},
    {"batch": 1, "heads": 6, "kv_heads": 1, "seq": 9, "head_dim": 16, "causal": True},
    {"batch": 2, "heads": 2, "seq": 5, "kv_seq": 3, "head_dim": 8},
])
def test_naive_and_flash_builders_agree(params: dict[str, Any]) -> None:
    """Same seed, same q, k, v: the eager naive form (GQA folded into rows, bottom-right causal mask) computes
    what SDPA does."""
    outs = []
    for variant in ("naive", "flash"):
        torch.manual_seed(0)
        outs.append(build(make("attention", variant=variant, **params), FP32, "cpu").fn())
    torch.testing.assert_close(outs[0], outs[1], rtol=1e-4, atol=1e-5)


def test_attention_footprints() -> None:
    """What the builders allocate: naive holds S and P at once; the traffic counts each twice instead."""
    shape = {"batch": 1, "heads": 2, "seq": 4, "head_dim": 8}
    # q, k, v, o: 4 * 1*2*4*8*4 = 1024; S and P: 2 * 1*2*4*4*4 = 256; causal bool mask: 4*4 = 16
    assert footprint_bytes(make("attention", variant="naive", **shape), FP32) == 1024 + 256
    assert footprint_bytes(make("attention", variant="naive", causal=True, **shape), FP32) == 1024 + 256 + 16
    # flash: q, k, v, o + the fp32 log-sum-exp per query row and head: 1*2*4*4 = 32
    assert footprint_bytes(make("attention", **shape), FP32) == 1024 + 32
    # decode, fp8 cache under fp32 queries: q, o 2*1*2*8*4 = 128; cache 2*1*2*4*8*1 = 128; its fp32 copy 512
    assert footprint_bytes(make("decode_attention", batch=1, heads=2, context=4, head_dim=8, kv_dtype="fp8"),
                           FP32) == 128 + 128 + 512


@pytest.mark.parametrize(("kv_heads", "seq", "kv_seq", "direct"), [(4, 16, 16, True), (2, 16, 16, True),
                                                                   (4, 16, 40, False), (2, 16, 40, False)])
def test_attention_backward_gradients_are_sdpas(kv_heads: int, seq: int, kv_seq: int, direct: bool) -> None:
    # the backward builder calls the fused backend's backward op where its is_causal is the mask (a square block),
    # else autograd over SDPA with the bottom-right mask; either way dQ, dK, dV are the math backend's
    import torch.nn.functional as F
    from torch.nn.attention.bias import causal_lower_right

    op = make("attention", "fp32", batch=2, heads=4, kv_heads=kv_heads, seq=seq, kv_seq=kv_seq, head_dim=8,
              causal=True, backward=True)
    built = build(op, FP32, "cpu")
    assert built.graph_safe is direct and ("called on the forward's outputs" in built.impl) is direct
    got = built.fn()
    q, k, v = (t.detach().clone().requires_grad_(True) for t in built.inputs[:3])
    mask = None if seq == kv_seq else causal_lower_right(seq, kv_seq)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None,
                                         enable_gqa=k.shape[1] != q.shape[1])
    out.backward(built.inputs[-1])
    for g, want in zip(got, (q.grad, k.grad, v.grad), strict=True):
        assert torch.allclose(g, want, atol=1e-5), op
