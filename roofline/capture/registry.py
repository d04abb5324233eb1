"""The registry of FLOP formulas for recorded aten operator calls, and the element-count rules for the ops
without one (a leaf: the formula families import it; `capture.cost.cost_of` looks a call up).

Each formula takes an `OpCall` (shapes and arguments, never tensor data) and returns a `Cost`: FLOPs per
call, where they come from (`source`), the one-line NB of what the count ignores, and the catalog operator it
maps to when the project's catalog (`roofline.ops`) has one, so a profile's GEMM counts what
`roofline analyze gemm` counts.

FLOP convention, as the catalog's: 2 per multiply-add, 1 per add, mul, compare or transcendental call. The
matrix-product part (`Cost.matmul_flops`) is what torch's FlopCounterMode counts, so totals can be compared
with it. A tensor-core op's elementwise part (addmm's and convolution's bias add, 1 per output element; a
fused activation; attention's softmax, 5 per score), which torch leaves out, is `Cost.extra_flops` (the
record's `extra_flops`), not `flops`: it is not placed on the tensor-core roof (the catalog's convention,
`ops.base.Operator.extra_flops`). Our causal attention counts the scores its mask keeps and grouped-query attention its
real heads, which torch does not.

Minimum bytes are counted from the call's tensors in capture/traffic.py; a formula only says which inputs
are read in part (`Cost.read_bytes`: a gather's table) or not at all (`Cost.unread`: fill_'s self).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from roofline.capture.trace import OpCall, TensorMeta
from roofline.core import layout
from roofline.core.aten_names import base_name, op_name
from roofline.core.registry import add_once
from roofline.ops import make
from roofline.ops.base import Operator
from roofline.ops.elementwise import ARITY, FLOPS_PER_ELEMENT


@dataclass(frozen=True)
class Cost:
    """The count for one call: FLOPs (None: no formula), their source, what the count ignores."""

    flops: float | None
    source: str | None  # "catalog:gemm", "torch.utils.flop_counter", "rule:pointwise", ... (None: no formula)
    note: str  # NB: what the formula ignores
    catalog: Operator | None = None  # the catalog operator the call maps to (its variant and params)
    matmul_flops: float = 0.0  # the matrix-product part (what FlopCounterMode counts)
    tensor_cores: bool = False  # placed on the tensor-core roof (matmul, convolution, attention)
    unread: frozenset[int] = frozenset()  # inputs the op writes without reading (fill_, copy_'s self)
    unwritten: frozenset[int] = frozenset()  # inputs its schema marks mutable that the kernel leaves (AdamW's grads)
    read_bytes: dict[int, float] = field(default_factory=dict)  # inputs read only in part (a gather's table)
    explicit_mask: bool = False  # attention with a mask tensor whose values were not read: every score counted
    extra_flops: float = 0.0  # a tensor-core op's elementwise part (bias, activation, softmax): not in flops
    mask: str | None = None  # attention: the mask the count assumed ("causal", "sliding window 4", "unknown", ...)
    masked_flops: float = 0.0  # attention: work a full-square kernel spends on masked scores (not in flops)


Formula = Callable[[OpCall], "Cost | None"]  # None: the formula does not apply to these arguments
FORMULAS: dict[str, Formula] = {}


def formula(*names: str) -> Callable[[Formula], Formula]:
    """Register a formula for aten overloads or packets ("aten::mm", "aten::add.Tensor"); twice is a bug."""

    def wrap(fn: Formula) -> Formula:
        for name in names:
            add_once(FORMULAS, name, fn, "FLOP formula for")
        return fn

    return wrap


def none(note: str = "NB: no FLOP formula for this op: listed with its time, FLOPs unknown.") -> Cost:
    return Cost(None, None, note)


# What each catalog count leaves out, as the record's NB line (the catalog's own `ignores` lines speak of its
# traffic model; a profile's bytes are the op's tensors instead, every output included).
CATALOG_NOTES = {
    "gemm": "NB: 2 FLOPs per multiply-add (a bias's 1 per output in extra_flops); operands as stored, read once.",
    "gemv": "NB: 2 FLOPs per multiply-add; the matrix read once.",
    "conv2d": "NB: 2 FLOPs per multiply-add (direct; a bias's 1 per output in extra_flops); Winograd/FFT do fewer.",
    "attention": "NB: 4D FLOPs per score (QK^T, PV); the softmax's 5 in extra_flops; causal: the kept scores.",
    "layernorm": "NB: 7 FLOPs per element + 4 per row (gamma, beta counted even when absent).",
    "rmsnorm": "NB: 4 FLOPs per element + 3 per row.",
    "embedding": "NB: 0 FLOPs a lookup, 1 an add in the backward; the backward's index sort on a GPU not counted.",
    "adamw": "NB: 12 FLOPs per parameter element; parameters, gradients and both moments read once, the gradients "
             "not written back (no grad scale).",
    "pool2d": "NB: 1 FLOP (a compare or an add) per window tap per output; the average's division not counted.",
    "batchnorm": "NB: 4 FLOPs per element + 2 per channel (7 + 4 training); running-statistics updates not counted.",
    "softmax": "NB: 5 FLOPs per element (max, sub, exp, sum, div).",
    "cat": "NB: data movement only: 0 FLOPs; every input read once, the output written once.",
    "reduce": "NB: 1 FLOP per input element (an add or a compare); mean's division per row not counted.",
}
POINTWISE_NOTE = "NB: output elements x FLOPs per element (transcendentals count 1); broadcast inputs read once."


def catalog_cost(name: str, matmul: float = 0.0, extra_flops: float = 0.0, note: str = "", **params: Any) -> Cost:
    """The catalog operator's FLOPs; `extra_flops` for the elementwise work the call adds beyond it (a fused
    activation), `note` to say so. A tensor-core operator's elementwise part is `Cost.extra_flops`."""
    op = make(name, **params)
    text = " ".join(x for x in (CATALOG_NOTES[name], note) if x)
    if op.uses_tensor_cores:
        return Cost(op.flops(), f"catalog:{name}", text, op, matmul, True, extra_flops=op.extra_flops() + extra_flops)
    return Cost(op.flops() + op.extra_flops() + extra_flops, f"catalog:{name}", text, op, matmul, False)


def rule(flops: float, kind: str, note: str, matmul: float = 0.0, tensor_cores: bool = False,
         extra_flops: float = 0.0) -> Cost:
    """A count by one of our element-count rules (source 'rule:<kind>')."""
    return Cost(float(flops), f"rule:{kind}", note, None, matmul, tensor_cores, extra_flops=float(extra_flops))


def tensor(call: OpCall, name: str) -> TensorMeta | None:
    """The call's tensor argument `name` (None when absent or not a tensor)."""
    v = call.args.get(name)
    return v if isinstance(v, TensorMeta) else None


def dense(t: TensorMeta) -> bool:
    """Whether a tensor's elements lie contiguous in row-major order (size-1 dimensions' strides aside)."""
    return layout.dense(t.shape, t.strides)


def strided_run(call: OpCall) -> layout.Walk:
    """How the walk of the call's first output reads its tensors at worst (`core.layout.strided_run`): a
    transposed view added into a row-major output runs its last dimension, a bias broadcast over rows its length."""
    out = call.outputs[0] if call.outputs else None
    return layout.strided_run(None if out is None else (out.shape, out.strides),
                              ((t.shape, t.strides) for t in call.inputs))


def arg(call: OpCall, name: str, default: Any) -> Any:
    """The call's argument `name`, `default` when the caller left it out or passed None."""
    v = call.args.get(name, default)
    return default if v is None else v


# -- element-count rules ----------------------------------------------------------------------------------

# Copies, fills, concatenations and factories: 0 FLOPs, the bytes are the work.
COPIES = frozenset({
    "_to_copy", "copy_", "clone", "cat", "stack", "fill_", "zero_", "zeros", "ones", "full", "full_like",
    "zeros_like", "ones_like", "new_zeros", "new_ones", "new_full", "scalar_tensor", "arange", "linspace",
    "constant_pad_nd", "repeat", "roll", "flip", "tril", "triu", "tril_", "triu_", "lift_fresh_copy",
    "slice_scatter", "select_scatter", "index_put", "index_put_", "_unsafe_index_put", "masked_scatter",
    "scatter", "scatter_", "_reshape_copy", "view_copy", "expand_copy", "permute_copy", "transpose_copy",
    "unsqueeze_copy", "t_copy", "alias_copy", "detach_copy", "split_with_sizes_copy", "unbind_copy",
    "_pin_memory", "_local_scalar_dense", "index_copy", "narrow_copy", "_copy_from", "_copy_from_and_resize",
    "repeat_interleave", "_unsafe_view_copy", "as_strided_copy", "slice_copy", "select_copy", "upsample_nearest1d",
    "upsample_nearest2d", "upsample_nearest3d", "_upsample_nearest_exact2d", "pixel_shuffle", "pixel_unshuffle"})
# Copies that write `self` without reading it (its old contents are overwritten).
WRITE_ONLY_SELF = frozenset({"copy_", "fill_", "zero_", "_copy_from", "_copy_from_and_resize"})

# FLOPs per output element of pointwise functions (1 FLOP per add, mul, compare or transcendental, as the
# catalog counts); the catalog's own functions map to its operators. Functions not listed count 1.
POINTWISE_FLOPS: dict[str, int] = {
    **FLOPS_PER_ELEMENT, "gelu_tanh": 8, "sigmoid": 4, "hardswish": 4, "hardsigmoid": 3, "mish": 6,
    "softplus": 3, "elu": 3, "leaky_relu": 2, "addcmul": 2, "addcdiv": 2, "lerp": 2, "clamp": 2,
    "sigmoid_backward": 3, "tanh_backward": 3, "gelu_backward": 9, "silu_backward": 7, "threshold_backward": 1,
    "where": 1, "masked_fill": 1, "copysign": 1}
# The catalog's elementwise operators (aten base name -> catalog name).
CATALOG_POINTWISE = {"relu": "relu", "add": "add", "mul": "mul", "gelu": "gelu", "silu": "silu"}

# FLOPs per input element of reductions; not listed count 1 (one add, max or compare each).
REDUCTION_FLOPS: dict[str, int] = {"var": 3, "std": 3, "var_mean": 3, "std_mean": 3, "logsumexp": 4,
                                   "linalg_vector_norm": 2, "norm": 2, "_log_softmax": 5}
# Reductions torch does not tag.
UNTAGGED_REDUCTIONS = frozenset({"cumsum", "cumprod", "cummax", "cummin", "_cummax_helper", "_cummin_helper"})


def copy_cost(call: OpCall) -> Cost:
    name = op_name(call.op)
    unread = frozenset(i for i, t in enumerate(call.inputs) if t is call.args.get("self")) \
        if name in WRITE_ONLY_SELF else frozenset()
    return Cost(0.0, "rule:copy", "NB: data movement only: 0 FLOPs; a partial write counts the whole output.",
                unread=unread)


def pointwise_cost(call: OpCall) -> Cost:
    numel = max((t.numel for t in call.outputs), default=0)
    name = base_name(call.op)
    if name == "gelu" and call.args.get("approximate") == "tanh":
        name = "gelu_tanh"
    if name in CATALOG_POINTWISE and numel >= 1:
        walk = strided_run(call)
        binary = ARITY[CATALOG_POINTWISE[name]] > 1  # a unary op has no bcast
        bcast: dict[str, Any] = {"bcast": walk.broadcast} if binary else {}
        op = make(CATALOG_POINTWISE[name], numel=numel, run=walk.run, **bcast)
        return Cost(op.flops(), f"catalog:{op.name}", POINTWISE_NOTE, op)
    per = POINTWISE_FLOPS.get(name, 1)
    return rule(per * numel, "pointwise", f"NB: {per} FLOP(s) per output element; transcendentals count 1.")


def foreach_cost(call: OpCall, name: str) -> Cost:
    """torch._foreach_* (optimizers' multi-tensor ops): the pointwise rule over the first list's elements;
    _foreach_norm is a reduction of the same elements."""
    first = call.args.get("self")
    tensors = [t for t in first if isinstance(t, TensorMeta)] if isinstance(first, (list, tuple)) else []
    numel = sum(t.numel for t in tensors)
    base = name.removeprefix("_foreach_").rstrip("_")
    per = REDUCTION_FLOPS.get(base, 1) if base == "norm" else POINTWISE_FLOPS.get(base, 1)
    return rule(per * numel, "foreach", f"NB: {per} FLOP(s) per element of each tensor in the list.")


# Reductions the catalog's `reduce` is, when they reduce a dense input's trailing dimensions (rows x cols -> rows)
# or its leading ones (`dim = "first"`, rows x cols -> cols: a bias's gradient over the tokens).
CATALOG_REDUCTIONS = {"sum": "sum", "mean": "mean", "amax": "amax"}


def _reduced_shape(call: OpCall) -> tuple[int, int, str] | None:
    """(rows, cols, dim) when the call reduces exactly the trailing ("last") or the leading ("first") dimensions
    of a dense input, else None."""
    x = call.inputs[0] if call.inputs else None
    if x is None or not x.shape or x.numel == 0 or not dense(x):
        return None
    dims = call.args.get("dim")
    n = len(x.shape)
    reduced = set(range(n)) if dims in (None, []) else {d % n for d in ([dims] if isinstance(dims, int) else dims)}
    size = math.prod(x.shape[d] for d in reduced)
    if reduced == set(range(n - len(reduced), n)):
        return x.numel // size, size, "last"
    if reduced == set(range(len(reduced))):
        return size, x.numel // size, "first"
    return None


def reduction_cost(call: OpCall) -> Cost:
    numel = call.inputs[0].numel if call.inputs else 0
    name = base_name(call.op)
    per = REDUCTION_FLOPS.get(name, 1)
    shape = _reduced_shape(call) if name in CATALOG_REDUCTIONS and per == 1 else None
    if shape is not None:  # the same count as the rule's, on the catalog's shape (the predictor's family)
        return catalog_cost("reduce", rows=shape[0], cols=shape[1], func=CATALOG_REDUCTIONS[name], dim=shape[2])
    return rule(per * numel, "reduction", f"NB: {per} FLOP(s) per input element; the final division or "
                 "rounding per output not counted.")


def torch_cost(call: OpCall) -> Cost | None:
    """torch.utils.flop_counter's formula, called with the recorded shapes in place of tensors."""
    try:
        from torch.utils._pytree import tree_map
        from torch.utils.flop_counter import flop_registry
    except ImportError:  # pragma: no cover - torch always ships it
        return None
    fn = flop_registry.get(call.packet)
    if fn is None:
        return None

    def shape(x: Any) -> Any:
        return x.shape if isinstance(x, TensorMeta) else x

    try:
        flops = fn(*tree_map(shape, call.raw_args), out_val=tree_map(shape, call.out_tree),
                   **tree_map(shape, call.raw_kwargs))
    except Exception:  # a formula that needs tensor data (nested lengths) has no count here
        return None
    return Cost(float(flops), "torch.utils.flop_counter", "NB: torch's count (matrix products only).", None,
                float(flops), True)
