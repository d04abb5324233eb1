"""Prediction families, declared once (`FAMILIES`): which catalog operators each predicts, whether its kernels are
memory-bound (a dtype the database lacks borrows another's points), whether the sweep times it with a warm L2 too,
a backward pass's forward, whether its kernels copy a strided input first, its shape coordinates, the catalog
operators of one family that run other kernels, and the work its kernels do beyond the bound. The sweep
(measuring/opsweep.py), the store's points (their `family`) and the predictor (analysis/predict.py) all read it.
Which family predicts a record (`family_of`): its catalog operator's, a profile op's through its formula, a memory
pass for the rest. Pure and torch-free."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from roofline.analysis import predict_features as shape
from roofline.core.layout import dense, strided_run

if TYPE_CHECKING:
    from roofline.core.record import RecordLike

Coordinates = Callable[[Mapping[str, Any]], tuple[float, ...]]


@dataclass(frozen=True)
class Family:
    """One prediction family of the operator database.

    `ops`: the catalog operators it predicts (a backward family predicts their `backward=True` pass);
    `memory_bound`: its kernels are bound by their bytes, so a record of a dtype the database lacks borrows another
    dtype's points (its bound already counts its bytes; what the points teach, the launch floor and the bandwidth
    reached, is the same); `warm_l2`: the sweep times each point again with a warm L2 where it fits (a model's op
    reads what the op before it left there); `forward`: a backward pass's forward family, whose points a database
    swept before the backward existed lends (said in the source); `contiguous_first`: torch's kernels copy a strided
    input to a contiguous tensor before they start (`input.contiguous()`), one more pass inside the op's time;
    `coordinates`: shape coordinates (decades) beyond roofline time and intensity; `kinds`: catalog operators of the
    family that run other kernels, a coordinate apart; `work`: how much more work than the bound its kernels do."""

    name: str
    ops: tuple[str, ...] = ()
    memory_bound: bool = False
    warm_l2: bool = False
    forward: str | None = None
    contiguous_first: bool = False
    coordinates: Coordinates | None = None
    kinds: Mapping[str, float] = field(default_factory=dict)
    work: Callable[[Mapping[str, Any]], float] | None = None


FAMILIES: dict[str, Family] = {}


def family(name: str, **declared: Any) -> Family:
    """Register a family (a name or a catalog operator claimed twice is an error)."""
    if name in FAMILIES:
        raise RuntimeError(f"prediction family {name!r} registered twice")
    fam = Family(name, **declared)
    if fam.forward is None:
        claimed = {op for f in FAMILIES.values() if f.forward is None for op in f.ops} & set(fam.ops)
        if claimed:
            raise RuntimeError(f"catalog operator(s) {sorted(claimed)} already have a prediction family")
    FAMILIES[name] = fam
    return fam


# Collectives have none: their time is the link's, not the kernels'.
family("gemm", ops=("gemm", "gemv"), coordinates=shape.gemm_dims)
family("grouped_gemm", ops=("grouped_gemm",), coordinates=shape.grouped_dims)
family("attention", ops=("attention",), work=shape.padded_pairs_ratio)
family("attention_backward", ops=("attention",), forward="attention", work=shape.padded_pairs_ratio)
family("decode_attention", ops=("decode_attention",))
family("conv", ops=("conv2d",), warm_l2=True, coordinates=shape.conv_dims)
family("norm", ops=("layernorm", "rmsnorm", "add_layernorm", "add_rmsnorm"), memory_bound=True, warm_l2=True,
       contiguous_first=True, coordinates=shape.norm_dims, kinds=shape.NORM_KINDS)
family("softmax", ops=("softmax",), memory_bound=True, warm_l2=True, contiguous_first=True)
family("elementwise", ops=("relu", "add", "mul", "gelu", "silu", "copy", "swiglu", "chain"), memory_bound=True,
       warm_l2=True, coordinates=shape.elementwise_dims)
family("rope", ops=("rope",), memory_bound=True, warm_l2=True)
family("cat", ops=("cat",), memory_bound=True, warm_l2=True, coordinates=shape.cat_dims)
family("reduction", ops=("reduce",), memory_bound=True, warm_l2=True, coordinates=shape.reduction_dims)
family("batchnorm", ops=("batchnorm",), memory_bound=True, warm_l2=True)
family("pool", ops=("pool2d",), memory_bound=True, warm_l2=True)
family("cast", ops=("cast",), memory_bound=True, warm_l2=True)
family("embedding", ops=("embedding",), memory_bound=True, warm_l2=True)
family("embedding_backward", ops=("embedding",), forward="embedding", memory_bound=True, warm_l2=True)
family("optimizer", ops=("adamw",), memory_bound=True, coordinates=shape.optimizer_dims)

# Catalog operator -> its forward's family; a backward pass's family by its forward's name.
FAMILY_OF_OP = {op: f.name for f in FAMILIES.values() if f.forward is None for op in f.ops}
BACKWARD_FAMILY = {f.forward: f.name for f in FAMILIES.values() if f.forward is not None}
# Profile copies that are casts when they change the dtype (their bytes written differ from those read): the
# catalog's `cast` (a mixed-precision step's bf16 -> fp32 upcasts write twice what they read, slower than an
# elementwise pass of the same bytes).
CAST_OPS = ("aten::_to_copy", "aten::copy_")
# Profile ops counted by a rule, not a catalog shape, that still run a family's kernels: SDPA with a mask tensor
# or top-left causal alignment (the flash kernels), and its backward (the backward's kernels); a log-softmax and
# a softmax's backward (softmax kernels, row by row); torch._grouped_mm (an MoE's experts: `grouped_params`).
RULE_FAMILY = {"rule:attention": "attention", "rule:attention backward": "attention_backward",
               "rule:log_softmax": "softmax", "rule:softmax backward": "softmax",
               "rule:grouped gemm": "grouped_gemm"}
# The family a memory-bound profile op without a catalog operator borrows: one pass over its bytes.
MEMORY_PASS = "elementwise"


def declared(name: str | None) -> Family | None:
    """The family named `name` (None for None or a name no family has: a database of a later version's)."""
    return FAMILIES.get(name) if name is not None else None


def shape_features(name: str, params: Mapping[str, Any] | None, op: str | None = None) -> tuple[float, ...] | None:
    """The family's shape coordinates of `params` (and of catalog operator `op` where the family's operators run
    other kernels: `Family.kinds`), None when it has none or they lack a parameter or the operator."""
    fam = FAMILIES.get(name)
    if fam is None or fam.coordinates is None or not params:
        return None
    if fam.kinds and op is None:
        return None
    try:
        dims = fam.coordinates(params)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    return dims if not fam.kinds else (*dims, fam.kinds.get(op or "", 0.0))


def work_factor(name: str, params: Mapping[str, Any] | None) -> float:
    """How much more work than the bound counts a family's kernels do for a shape (`Family.work`; 1 without one or
    without the parameters): points and queries are placed, and their efficiency taken, at the bound times it."""
    fam = FAMILIES.get(name)
    try:
        return max(fam.work(params), 1.0) if fam is not None and fam.work is not None and params else 1.0
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return 1.0


def memory_bound(name: str | None) -> bool:
    fam = declared(name)
    return fam is not None and fam.memory_bound



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
    if family == "gemm" and ins and in_shapes:
        lds = [leading(shape, strides) for shape, strides in zip(in_shapes, ins, strict=False) if len(shape) >= 2]
        if out_shapes and len(out_shapes[0]) >= 2:
            lds.append(out_shapes[0][-1])  # the output is written row-major
        params["ld"] = tuple(ld for ld in lds if ld is not None)
    if family == "grouped_gemm" and "groups" not in params and in_shapes:
        params.update(grouped_params(in_shapes))
    if family == "elementwise" and outs and ins and out_shapes and in_shapes:
        params["run"], params["bcast"] = strided_run((out_shapes[0], outs[0]), zip(in_shapes, ins, strict=False))
    return params


def grouped_params(in_shapes: Sequence[Sequence[int]]) -> dict[str, int]:
    """A grouped GEMM's catalog parameters from the shapes a profile recorded: the experts' form, A (M, K) times B
    (groups, K, N), its M spread evenly over the groups (the formula's assumed routing); {} for another form."""
    if len(in_shapes) < 2 or len(in_shapes[0]) != 2 or len(in_shapes[1]) != 3:
        return {}
    (rows, k), (groups, _, n) = in_shapes[0], in_shapes[1]
    return {"groups": int(groups), "m": max(1, round(rows / groups)), "n": int(n), "k": int(k)} if groups else {}


def leading(shape: Sequence[int], strides: Sequence[int]) -> int | None:
    """The leading dimension of a matrix operand (its last two dimensions): the stride of the one that is not
    contiguous, or None when neither is (a view a GEMM copies first)."""
    rows, cols = shape[-2], shape[-1]
    s_rows, s_cols = strides[-2], strides[-1]
    if s_cols == 1 or cols == 1:
        return int(s_rows) if rows > 1 else int(cols)
    if s_rows == 1 or rows == 1:
        return int(s_cols)
    return None


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
