"""Golden values of the analytic operator models (as LLM-Viewer locks its analyzer's numbers).

Every (operator, shape, dtype, variant) case below has its FLOPs, bytes read, bytes written and bytes by kind
stored in tests/golden/operators.json. A change to a formula fails here with one line per case:
    NEW      a case with no golden entry        MISSING  a golden entry with no case
    FAIL     a value off by more than REL_TOL
When a change is intended, rewrite the file on purpose and review its diff:
    ROOFLINE_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from roofline.core.dtypes import get_dtype
from roofline.ops import OPERATORS, make

GOLDEN = Path(__file__).parent / "golden" / "operators.json"
UPDATE_ENV = "ROOFLINE_UPDATE_GOLDEN"
# The models are exact integer arithmetic carried in floats: any difference beyond float rounding is a change.
REL_TOL = 1e-9
FIELDS = ("flops", "extra_flops", "bytes_read", "bytes_written")
# Why the golden values changed when they did, written into the file with every rewrite.
NOTES = [
    "2026-12-01 (issue 19): `flops` of attention, decode_attention, a GEMM with an epilogue and a conv2d with a "
    "bias counts the matrix products alone (4*B*H*Sq*Skv*D for attention, the causal region halved), as the "
    "FlashAttention papers and torch's flop counter do, so achieved TFLOP/s compare with published figures. "
    "The elementwise part (the softmax's 5 per score, an epilogue's or bias's FLOPs per output) moved to "
    "`extra_flops` (new here), which is placed on no roof. Bytes unchanged.",
    "2026-12-01 (issue 29): causal attention counts the scores the mask keeps, diagonal included "
    "(ops.attention.causal_pairs: S(S+1)/2 when square, Sq(Skv-Sq) + Sq(Sq+1)/2 bottom-right), not Sq*Skv - Sq^2/2: "
    "`flops` and `extra_flops` of the causal attention cases 1/Sq more. Bytes unchanged.",
    "2026-12-02 (issue 32): the cat and reduce operators (new cases); a conv2d whose stride is at least its "
    "window's span reads only the rows and columns its windows touch (the new 1x1 stride-2 case: a quarter of "
    "the input). Existing cases unchanged.",
    "2026-12-02 (issue 32): batchnorm (new cases, its FLOPs the rule's of before), add with a strided input and "
    "mul with a broadcast row (bytes (2n + run) elements). Existing cases unchanged.",
    "2026-12-02 (issue 32): attention --backward (new cases: torch's five products of SDPA's backward, the "
    "softmax's backward 4 per score in extra_flops; Q, O, dO, K, V and the log-sum-exp read, dQ, dK, dV written). "
    "Existing cases unchanged.",
    "2026-12-02 (issue 32): adamw (a new case: p, g, m, v read, p, m, v written, the fp32 step per tensor read; "
    "12 FLOPs an element, the profile's optimizer rule's). Existing cases unchanged.",
    "2026-12-02 (issue 32): embedding and its backward (new cases: the rows gathered and the int64 indices read; "
    "the backward reads dY and the indices and writes the whole table's gradient). Existing cases unchanged.",
    "2026-12-02 (issue 32): reduce --dim first (a new case: each column over the rows, cols values written). "
    "Existing cases unchanged.",
    "2026-12-02 (issue 32): pool2d (new cases, its FLOPs the pooling rule's of before; max with indices writes "
    "8 bytes an output more). Existing cases unchanged.",
    "2026-12-02 (issue 32): the copy operator (new case: x.contiguous() of a transposed view). Existing cases "
    "unchanged.",
]

LLAMA_ATT = {"batch": 1, "heads": 32, "seq": 4096, "head_dim": 128}
ROWS = {"rows": 4096, "cols": 4096}

# (operator, dtype, parameters including the variant)
CASES: list[tuple[str, str, dict[str, Any]]] = [
    # collectives: 256 MiB per GPU on 8 GPUs (all_reduce: 2 x 7/8 x S sent and received; FLOPs 7/8 of the elements)
    ("all_reduce", "bf16", {"bytes": 268435456, "ranks": 8}),
    ("all_gather", "bf16", {"bytes": 268435456, "ranks": 8}),
    ("reduce_scatter", "fp32", {"bytes": 268435456, "ranks": 4}),
    ("all_to_all", "bf16", {"bytes": 67108864, "ranks": 8}),
    ("broadcast", "bf16", {"bytes": 1048576, "ranks": 2}),
    # gemm family
    ("gemm", "fp16", {"m": 4096}),
    ("gemm", "bf16", {"m": 4096, "n": 11008, "k": 4096, "epilogue": "silu"}),
    ("gemm", "bf16", {"m": 4096, "n": 11008, "k": 4096, "epilogue": "silu", "variant": "unfused"}),
    ("gemm", "fp32", {"m": 128, "n": 256, "k": 64, "batch": 8}),
    ("gemm", "fp8", {"m": 1024, "epilogue": "bias"}),
    ("gemm", "int8", {"m": 2048}),
    ("gemm", "tf32", {"m": 777, "n": 333, "k": 555, "epilogue": "gelu", "variant": "unfused"}),
    ("gemv", "fp16", {}),
    ("gemv", "int8", {"m": 16, "n": 4096, "k": 14336}),
    # Mixtral-8x7B's experts at a prefill of 4096 tokens, top 2: 1024 rows an expert; 2 x 8 x 1024 x 14336 x 4096
    ("grouped_gemm", "bf16", {"groups": 8, "m": 1024, "n": 14336, "k": 4096}),
    # elementwise family
    ("relu", "fp16", {"numel": 2**24}),
    ("add", "fp32", {"numel": 1000003}),
    ("mul", "bf16", {"numel": 2**20}),
    ("gelu", "fp16", {"numel": 3 * 2**20}),
    ("silu", "fp32", {"numel": 12345}),
    ("swiglu", "fp16", {"numel": 4096 * 11008}),
    ("swiglu", "bf16", {"numel": 4096 * 11008, "variant": "unfused"}),
    ("chain", "fp16", {"numel": 2**24, "length": 4}),
    ("chain", "fp32", {"numel": 2**20, "length": 6, "variant": "unfused"}),
    ("cat", "bf16", {"outer": 64, "length": 4096, "tail": 1, "inner": 64}),  # a decode step's KV append
    ("reduce", "fp32", {"rows": 2048, "cols": 2048, "func": "mean"}),  # an RMSNorm's mean of squares, HF's fp32
    ("adamw", "bf16", {"numel": 134217728, "tensors": 64}),  # 128 Mi bf16 parameters, their moments bf16
    # a training step's embedding (Llama's 32000 x 4096 table, 8192 tokens) and its backward (the whole table's
    # gradient written)
    ("embedding", "bf16", {"tokens": 8192, "vocab": 32000, "dim": 4096}),
    ("embedding", "bf16", {"tokens": 8192, "vocab": 32000, "dim": 4096, "backward": True}),
    ("reduce", "bf16", {"rows": 4096, "cols": 1024, "dim": "first"}),  # a bias's gradient over 4096 tokens
    ("cat", "fp32", {"outer": 65536, "length": 32, "tail": 32, "inner": 1, "strided": True}),  # rotate_half
    ("add", "bf16", {"numel": 2**22, "run": 64}),  # a transposed head split: the same bytes as a dense add
    ("copy", "bf16", {"numel": 2**22, "run": 768}),  # a head merge's contiguous(): read once, written once, 0 FLOPs
    ("mul", "bf16", {"numel": 2**22, "run": 2048, "bcast": True}),  # an RMSNorm's weight over 2048 rows
    ("cast", "bf16", {"numel": 2**22, "to": "fp32"}),  # a Llama RMSNorm's upcast: 2 bytes read, 4 written each
    ("cast", "fp32", {"numel": 2**22, "to": "bf16"}),  # and its downcast
    # norm family
    ("layernorm", "fp16", ROWS),
    ("batchnorm", "bf16", {"batch": 32, "channels": 64, "height": 112}),  # ResNet-50's first
    ("pool2d", "bf16", {"batch": 32, "channels": 64, "height": 112, "kernel_size": 3, "stride": 2}),  # its max pool
    ("pool2d", "fp32", {"batch": 8, "channels": 256, "height": 14, "kernel_size": 2, "padding": 0, "func": "avg"}),
    ("batchnorm", "fp32", {"batch": 8, "channels": 256, "height": 14, "width": 7, "training": True}),
    ("layernorm", "fp32", {"rows": 8, "cols": 1000}),
    ("rmsnorm", "bf16", {"rows": 4096, "cols": 8192}),
    ("add_layernorm", "fp16", ROWS),
    ("add_layernorm", "fp16", {**ROWS, "write_sum": False}),
    ("add_layernorm", "fp16", {**ROWS, "variant": "unfused"}),
    ("add_layernorm", "fp16", {**ROWS, "variant": "unfused", "write_sum": False}),
    ("add_rmsnorm", "bf16", {"rows": 2048, "cols": 5120}),
    ("add_rmsnorm", "bf16", {"rows": 2048, "cols": 5120, "variant": "unfused"}),
    # softmax
    ("softmax", "fp16", ROWS),
    ("softmax", "fp32", {"rows": 4096, "cols": 50257}),
    # attention family
    ("attention", "fp16", LLAMA_ATT),
    ("attention", "bf16", {**LLAMA_ATT, "causal": True}),
    ("attention", "fp16", {**LLAMA_ATT, "variant": "naive"}),
    ("attention", "fp16", {**LLAMA_ATT, "variant": "naive", "causal": True}),
    ("attention", "fp16", {**LLAMA_ATT, "tile": 128}),
    ("attention", "bf16", {**LLAMA_ATT, "backward": True}),
    ("attention", "bf16", {"batch": 2, "heads": 32, "kv_heads": 8, "seq": 1500, "head_dim": 64, "causal": True,
                           "backward": True}),
    ("attention", "bf16", {"batch": 2, "heads": 32, "kv_heads": 8, "seq": 2048, "kv_seq": 8192, "head_dim": 128,
                           "causal": True, "tile": 64}),
    ("attention", "fp32", {"batch": 3, "heads": 12, "kv_heads": 4, "seq": 333, "kv_seq": 1000, "head_dim": 64,
                           "variant": "naive"}),
    ("decode_attention", "fp16", {}),
    ("decode_attention", "bf16", {"batch": 64, "heads": 32, "kv_heads": 8, "context": 8192, "kv_dtype": "fp8"}),
    ("decode_attention", "fp16", {"page_size": 16}),
    ("decode_attention", "fp16", {"batch": 16, "heads": 64, "kv_heads": 1, "context": 32768, "kv_dtype": "fp8",
                                  "page_size": 256}),
    # rope
    ("rope", "fp16", {}),
    ("rope", "bf16", {"tokens": 8192, "heads": 32, "kv_heads": 8}),
    ("rope", "fp16", {"tokens": 8192, "heads": 32, "kv_heads": 8, "variant": "unfused"}),
    ("rope", "fp32", {"tokens": 1000, "heads": 16, "head_dim": 64, "variant": "unfused"}),
    # conv
    ("conv2d", "fp16", {}),
    ("conv2d", "bf16", {"batch": 32, "in_channels": 3, "height": 224, "width": 224, "out_channels": 64,
                        "kernel_size": 7, "stride": 2, "padding": 3}),
    ("conv2d", "fp32", {"batch": 8, "in_channels": 96, "height": 28, "width": 28, "out_channels": 96, "groups": 96,
                        "bias": True}),
    ("conv2d", "bf16", {"batch": 64, "in_channels": 1024, "height": 56, "width": 56, "out_channels": 128,
                        "kernel_size": 1, "stride": 2, "padding": 0}),  # a projection shortcut: a quarter read
    ("conv2d", "fp16", {"algo": "winograd"}),
    ("conv2d", "fp16", {"algo": "winograd4"}),
    ("conv2d", "tf32", {"batch": 4, "in_channels": 256, "height": 33, "width": 33, "out_channels": 256,
                        "padding": 2, "dilation": 2}),
]


def case_key(name: str, dtype: str, params: dict[str, Any]) -> str:
    return f"{name}/{dtype}/" + ",".join(f"{k}={v}" for k, v in sorted(params.items()))


def compute(name: str, dtype: str, params: dict[str, Any]) -> dict[str, Any]:
    op = make(name, dtype, **params)
    t = op.traffic(get_dtype(dtype))
    return {"op": name, "dtype": dtype, "variant": op.variant_name(), "params": op.params(),
            "flops": float(op.flops()), "extra_flops": float(op.extra_flops()),
            "bytes_read": t.bytes_read, "bytes_written": t.bytes_written,
            "bytes_by_kind": {k: float(v) for k, v in sorted(t.by_kind().items())}}


def current() -> dict[str, dict[str, Any]]:
    return {case_key(*c): compute(*c) for c in CASES}


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= REL_TOL * max(abs(a), abs(b))


def differences(key: str, got: dict[str, Any], want: dict[str, Any]) -> list[str]:
    """'FAIL' lines for every value of one case off by more than REL_TOL."""
    lines = []
    for f in FIELDS:
        if not _close(got[f], want[f]):
            lines.append(f"FAIL     {key}: {f} {got[f]:.17g} != golden {want[f]:.17g}")
    for kind in sorted(set(got["bytes_by_kind"]) | set(want["bytes_by_kind"])):
        g, w = got["bytes_by_kind"].get(kind, 0.0), want["bytes_by_kind"].get(kind, 0.0)
        if not _close(g, w):
            lines.append(f"FAIL     {key}: bytes_by_kind[{kind}] {g:.17g} != golden {w:.17g}")
    return lines


def compare(got: dict[str, dict[str, Any]], golden: dict[str, dict[str, Any]]) -> list[str]:
    lines = [f"NEW      {k}" for k in sorted(set(got) - set(golden))]
    lines += [f"MISSING  {k}" for k in sorted(set(golden) - set(got))]
    for k in sorted(set(got) & set(golden)):
        lines += differences(k, got[k], golden[k])
    return lines


def test_golden_operator_values() -> None:
    got = current()
    if os.environ.get(UPDATE_ENV) == "1":
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps({"notes": NOTES, "rel_tol": REL_TOL, "cases": got}, indent=1, sort_keys=True)
                          + "\n")
        pytest.skip(f"{UPDATE_ENV}=1: rewrote {GOLDEN.name} with {len(got)} cases; review its diff")
    saved = json.loads(GOLDEN.read_text())
    assert saved.get("notes") == NOTES, "the golden file's notes are NOTES: rewrite it (below)"
    golden = saved["cases"]
    lines = compare(got, golden)
    assert not lines, (f"{len(lines)} golden difference(s) (relative tolerance {REL_TOL}):\n" + "\n".join(lines)
                       + f"\nIf intended: {UPDATE_ENV}=1 python -m pytest tests/test_golden.py, then review the diff.")


def test_golden_cases_cover_every_operator() -> None:
    assert len(CASES) >= 40
    assert {name for name, _, _ in CASES} == set(OPERATORS)
    assert len({case_key(*c) for c in CASES}) == len(CASES), "duplicate golden case"


def test_compare_reports_new_missing_and_fail() -> None:
    """The failure message names each kind of difference on its own line."""
    a = compute("relu", "fp16", {"numel": 10})
    b = {**a, "flops": a["flops"] + 1, "bytes_by_kind": {**a["bytes_by_kind"], "weights": 4.0}}
    lines = compare({"x": a, "new": a}, {"x": b, "gone": a})
    assert lines == ["NEW      new", "MISSING  gone", "FAIL     x: flops 10 != golden 11",
                     "FAIL     x: bytes_by_kind[weights] 0 != golden 4"]
