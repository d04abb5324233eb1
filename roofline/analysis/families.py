"""Prediction families: which family of the operator database predicts a record (a catalog operator's, a profile
op's through its formula, a memory pass for the rest) and the parameters it is placed among its family's points
with. Pure and torch-free."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from roofline.core.layout import dense, strided_run

if TYPE_CHECKING:
    from roofline.core.record import RecordLike

# Catalog operator -> prediction family (collectives have none: their time is the link's, not the kernels').
FAMILY_OF_OP = {
    "gemm": "gemm", "gemv": "gemm", "attention": "attention", "decode_attention": "decode_attention",
    "conv2d": "conv", "layernorm": "norm", "rmsnorm": "norm", "add_layernorm": "norm", "add_rmsnorm": "norm",
    "softmax": "softmax", "relu": "elementwise", "add": "elementwise", "mul": "elementwise", "gelu": "elementwise",
    "silu": "elementwise", "copy": "elementwise", "swiglu": "elementwise", "chain": "elementwise", "rope": "rope",
    "cat": "cat",
    "reduce": "reduction", "batchnorm": "batchnorm", "pool2d": "pool", "cast": "cast", "embedding": "embedding",
    "adamw": "optimizer",
}
# A catalog operator's pass that runs other kernels than its forward: its own family, its points apart.
BACKWARD_FAMILY = {"attention": "attention_backward", "embedding": "embedding_backward"}
# A backward family a database swept before it existed lacks borrows its forward's points (said in the source:
# a backward runs slower than its forward's points say).
FORWARD_OF = {b: f for f, b in BACKWARD_FAMILY.items()}
# Profile copies that are casts when they change the dtype (their bytes written differ from those read): the
# catalog's `cast` (a mixed-precision step's bf16 -> fp32 upcasts write twice what they read, slower than an
# elementwise pass of the same bytes).
CAST_OPS = ("aten::_to_copy", "aten::copy_")
# Profile ops counted by a rule, not a catalog shape, that still run a family's kernels: SDPA with a mask tensor
# or top-left causal alignment (the flash kernels), and its backward (the backward's kernels); a log-softmax and
# a softmax's backward (softmax kernels, row by row).
RULE_FAMILY = {"rule:attention": "attention", "rule:attention backward": "attention_backward",
               "rule:log_softmax": "softmax", "rule:softmax backward": "softmax"}
# The family a memory-bound profile op without a catalog operator borrows: one pass over its bytes.
MEMORY_PASS = "elementwise"
# Memory-bound families: a record of a dtype the database lacks borrows another dtype's points (its bound
# already counts its bytes; what the points teach, the launch floor and the bandwidth reached, is the same).
DTYPE_FREE = ("elementwise", "norm", "softmax", "rope", "cat", "reduction", "batchnorm", "pool", "cast", "embedding",
              "embedding_backward", "optimizer")



def query_params(family: str, record: RecordLike) -> dict[str, Any]:
    """The parameters a record is placed among its family's points with: its own, and for an elementwise pass
    the contiguous run of the inputs its output's walk reads strided, from the shapes and strides the profile
    recorded (`core.layout.strided_run`)."""
    params = dict(record.params or {})
    outs, ins = getattr(record, "output_strides", None), getattr(record, "input_strides", None)
    in_shapes, out_shapes = getattr(record, "input_shapes", None), getattr(record, "output_shapes", None)
    if family == "conv" and ins and in_shapes and len(in_shapes[0]) == 4:
        (_, c, h, w), strides = in_shapes[0], ins[0]
        if c > 1 and h * w > 1 and strides[1] != 1 and dense(in_shapes[0], strides):
            params["nchw"] = True  # a row-major (not channels-last) input
    if family == "elementwise" and outs and ins and out_shapes and in_shapes:
        params["run"], params["bcast"] = strided_run((out_shapes[0], outs[0]), zip(in_shapes, ins, strict=False))
    return params


def _changes_dtype(record: RecordLike) -> bool:
    read, written = getattr(record, "bytes_read", None), getattr(record, "bytes_written", None)
    return bool(read and written) and written != read


def op_family(name: str, params: Mapping[str, Any] | None) -> str | None:
    """The prediction family of catalog operator `name` with `params`: its FAMILY_OF_OP, a backward pass's own
    (BACKWARD_FAMILY)."""
    if (params or {}).get("backward") and name in BACKWARD_FAMILY:
        return BACKWARD_FAMILY[name]
    return FAMILY_OF_OP.get(name)


def catalog_op(record: RecordLike) -> str | None:
    """The catalog operator a record is (its own op, or the one its profile op's formula maps to), or None."""
    if record.op in FAMILY_OF_OP:
        return str(record.op)
    source = record.flops_source or ""
    return source.split(":", 1)[1] if source.startswith("catalog:") else None


def family_of(record: RecordLike) -> str | None:
    """The prediction family of a record (the module docstring's rule), None when it has none."""
    if record.op in FAMILY_OF_OP:
        return op_family(record.op, record.params)
    source = record.flops_source or ""
    if (name := catalog_op(record)) is not None:
        if name == "attention" and (record.params or {}).get("seq") == 1:
            return "decode_attention"  # one query token per sequence: a decode step's kernel
        return op_family(name, record.params)
    if source in RULE_FAMILY:
        return RULE_FAMILY[source]
    if record.op in CAST_OPS and _changes_dtype(record):
        return "cast"
    if source and record.bound == "memory" and not record.tensor_cores:
        return MEMORY_PASS
    return None
