"""Formulas for the ops of the model zoos that the base families (capture/formulas.py) leave out: mixture-of-experts
grouped GEMMs and their router's ops, the fused fast paths of nn.MultiheadAttention and nn.TransformerEncoderLayer
in eval mode, and the readers of the tensor values these and SDPA's mask need (trace.VALUE_READERS).

Grouped GEMMs (`torch._grouped_mm`, F.grouped_mm, their fp8 forms, transformers' fallback op) count the work of
the rows each group (expert) really got: with data, from the offsets tensor's values (`offs[i]` ends group i;
rows past `offs[-1]` are skipped); without data (analytic runs), from an assumed routing, `ROUTING`:

    import roofline.capture.formulas_models as fm
    fm.ROUTING = "balanced"                        # the default: every expert gets total / groups rows
    with fm.routing([4, 2, 1, 1]):                 # or shares per expert (relative; 0: an expert left idle)
        prof = roofline.profile(step, time=False, gpu="h200")

The assumption changes the bytes (an idle expert's weights are not read) and the per-group shapes in the note,
not the FLOPs of a full routing. Each record's note says which routing it used.
"""

from __future__ import annotations

import contextlib
import math
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from roofline.capture import stand_ins
from roofline.capture.formulas import _attention, counted, describe_mask
from roofline.capture.masks import MaskPattern, has_data, known, read_mask
from roofline.capture.registry import Cost, arg, catalog_cost, formula, rule, tensor
from roofline.capture.trace import VALUE_READERS, OpCall, TensorMeta
from roofline.ops.counts import FLOPS_PER_ELEMENT
from roofline.ops.norm import norm_flops
from roofline.ops.softmax import SOFTMAX_FLOPS_PER_ELEMENT

# -- tensor values the formulas read (trace.VALUE_READERS) -----------------------------------------------------

# The routing analytic runs assume for a grouped GEMM whose offsets have no data: "balanced", or shares per group.
ROUTING: str | Sequence[float] = "balanced"


@contextlib.contextmanager
def routing(shares: str | Sequence[float]) -> Iterator[None]:
    """Assume `shares` (or "balanced") for grouped GEMMs without data inside the block (see the module docstring).
    The counts are made when the profile is built, so build it inside the block."""
    global ROUTING
    before, ROUTING = ROUTING, shares if isinstance(shares, str) else tuple(float(s) for s in shares)
    try:
        yield
    finally:
        ROUTING = before


def assumed_shares(groups: int) -> list[float]:
    """The shares per group of the assumed routing: ROUTING's when it has one per group, else balanced. A router
    without data chooses by them (capture/stand_ins.py), as grouped GEMMs without offsets count by them."""
    if ROUTING == "balanced" or len(ROUTING) != groups:
        return [1.0] * groups
    return [float(s) for s in ROUTING]


stand_ins.assumed_shares = assumed_shares


def _offsets(args: dict[str, Any]) -> dict[str, Any]:
    offs = args.get("offs")
    return {"offs": tuple(int(x) for x in offs.tolist())} if has_data(offs) and offs.dim() == 1 else {}


# The last masks read: id -> (weak reference, version, layout, pattern). Layers share one mask tensor: read once.
_MASKS: dict[int, tuple[Any, int, tuple[Any, ...], MaskPattern | None]] = {}
_MASKS_KEPT = 64


def _mask_of(t: torch.Tensor, layout: tuple[Any, ...], view: torch.Tensor, true_keeps: bool) -> MaskPattern | None:
    """`read_mask(view)`, remembered for the tensor `t` until it changes (its version counter; inference tensors
    have none: read each time)."""
    try:
        version = t._version
    except RuntimeError:
        return read_mask(view, true_keeps)
    hit = _MASKS.get(id(t))
    if hit is not None and hit[0]() is t and hit[1] == version and hit[2] == layout:
        return hit[3]
    pattern = read_mask(view, true_keeps)
    if len(_MASKS) >= _MASKS_KEPT:
        _MASKS.clear()
    _MASKS[id(t)] = (weakref.ref(t), version, layout, pattern)
    return pattern


def _sdpa_mask(name: str) -> Any:
    """The reader of SDPA's mask argument `name` (True or an additive value above MASKED_BIAS keeps a score)."""

    def read(args: dict[str, Any]) -> dict[str, Any]:
        m = args.get(name)
        if not has_data(m):  # a mask without data its builder described (capture/hf_masks.py), or unknown
            pattern = known(m) if isinstance(m, torch.Tensor) else None
            return {} if pattern is None else {"mask": pattern}
        pattern = _mask_of(m, ("sdpa",), m, True)
        return {} if pattern is None else {"mask": pattern}

    return read


def _fused_mask(args: dict[str, Any]) -> dict[str, Any]:
    """The mask of the fused MHA/encoder ops, laid out by `mask_type` (nn.MultiheadAttention.merge_masks): 0 an
    attention mask (L, S), 1 a key padding mask (B, S), 2 both merged (B, H, L, S); True masks a score."""
    m = args.get("mask")
    if not has_data(m):
        return {}
    kind = args.get("mask_type")
    view = m[:, None, None, :] if kind == 1 and m.dim() == 2 else m
    pattern = _mask_of(m, ("fused", kind), view, False)
    return {} if pattern is None else {"mask": pattern}


def _encoder_values(args: dict[str, Any]) -> dict[str, Any]:
    """The fused encoder layer's mask, and its sequences' lengths when its input is nested."""
    src, out = args.get("src"), _fused_mask(args)
    if isinstance(src, torch.Tensor) and src.is_nested and has_data(src):
        out["lengths"] = tuple(int(n) for n in src._nested_tensor_size()[:, 0].tolist())
    elif (packed := stand_ins.packed_lengths(src)) is not None:  # a nested batch packed without data
        out["lengths"] = packed
    return out


# The ops whose masks are read, with the mask's argument.
SDPA_MASKS = {"aten::scaled_dot_product_attention": "attn_mask",
              "aten::_scaled_dot_product_flash_attention_for_cpu": "attn_mask",
              "aten::_scaled_dot_product_flash_attention_for_cpu_backward": "attn_mask",
              "aten::_scaled_dot_product_efficient_attention": "attn_bias",
              "aten::_scaled_dot_product_efficient_attention_backward": "attn_bias",
              "aten::_scaled_dot_product_cudnn_attention": "attn_bias",
              "aten::_scaled_dot_product_cudnn_attention_backward": "attn_bias",
              "aten::_scaled_dot_product_fused_attention_overrideable": "attn_bias",
              "aten::_efficient_attention_forward": "bias"}
GROUPED_MM = ("aten::_grouped_mm", "aten::_scaled_grouped_mm", "aten::_scaled_grouped_mm_v2",
              "transformers::grouped_mm_fallback")
VALUE_READERS.update({op: _sdpa_mask(name) for op, name in SDPA_MASKS.items()})
VALUE_READERS.update({op: _offsets for op in GROUPED_MM})
VALUE_READERS["aten::_native_multi_head_attention"] = _fused_mask
VALUE_READERS["aten::_transformer_encoder_layer_fwd"] = _encoder_values


# -- grouped GEMMs (mixture of experts) ------------------------------------------------------------------------

def group_sizes(offs: Sequence[int] | None, total: int, groups: int) -> tuple[list[float], str]:
    """Rows (or columns) per group and where they come from: the offsets' values, or the assumed `ROUTING`."""
    if offs is not None and len(offs) == groups:
        ends = [min(int(o), total) for o in offs]
        sizes = [float(max(0, e - s)) for s, e in zip([0, *ends[:-1]], ends, strict=True)]
        return sizes, "from the offsets' values"
    if ROUTING == "balanced":
        return [total / groups] * groups, ("routing assumed balanced (the offsets have no data; "
                                          "roofline.capture.formulas_models.ROUTING sets another)")
    shares = [float(s) for s in ROUTING]
    if len(shares) != groups or sum(shares) <= 0 or min(shares) < 0:
        raise ValueError(f"ROUTING has {len(shares)} shares for {groups} groups (or none positive)")
    scale = total / sum(shares)
    return [s * scale for s in shares], f"routing assumed {tuple(shares)} (ROUTING; the offsets have no data)"


def _sizes_text(sizes: list[float]) -> str:
    nums = [f"{s:g}" for s in sizes]
    empty = sum(1 for s in sizes if s == 0)
    shown = ", ".join(nums) if len(nums) <= 16 else f"min {min(sizes):g}, mean {sum(sizes) / len(sizes):g}, " \
        f"max {max(sizes):g}"
    return shown + (f"; {empty} empty" if empty else "")


def _index(call: OpCall, t: TensorMeta) -> int:
    return next(i for i, x in enumerate(call.inputs) if x is t)


def grouped_mm_cost(call: OpCall, a_name: str = "self", b_name: str = "mat2") -> Cost | None:
    """2 FLOPs per multiply-add of each group's product. Forms (torch's _grouped_mm): a (M, K) x b (G, K, N) with
    offsets over M (an MoE's experts); a (M, K) x b (K, N) with offsets over K (their weight gradients, out
    (G, M, N)); a (G, M, K) x b (K, N) with offsets over N; a (G, M, K) x b (G, K, N) batched, no offsets."""
    a, b, offs, bias = tensor(call, a_name), tensor(call, b_name), tensor(call, "offs"), tensor(call, "bias")
    if a is None or b is None:
        return None
    ia, ib = _index(call, a), _index(call, b)
    if len(a.shape) == 3 and len(b.shape) == 3:
        g, m, k = a.shape
        n = b.shape[2]
        if min(g, m, n, k) < 1:
            return rule(0, "grouped gemm", "NB: empty product.", 0, True)
        return catalog_cost("gemm", 2 * g * m * n * k, g * m * n if bias is not None else 0.0,
                            "Grouped GEMM of 3-D operands: every group the same shape.", m=m, n=n, k=k, batch=g)
    if offs is None or not offs.shape:
        return None
    groups = offs.shape[0]
    # per form: the grouped dimension's length, FLOPs per unit of it, output columns per unit (the bias), and the
    # bytes read as (elements of a per unit used, per active group; the same of b)
    if len(a.shape) == 2 and len(b.shape) == 3:  # experts: groups of rows of a, each against its weight b[g]
        (total, k), n = a.shape, b.shape[2]
        unit, per_unit, width, reads = "rows", 2 * k * n, n, (k, 0, 0, k * n)
    elif len(a.shape) == 2 and len(b.shape) == 2:  # weight gradients: groups of the shared K
        (m, total), n = a.shape, b.shape[1]
        unit, per_unit, width, reads = "columns of K", 2 * m * n, 0, (m, 0, n, 0)
    elif len(a.shape) == 3 and len(b.shape) == 2:  # groups of columns of b, each against a[g]
        (_, m, k), total = a.shape, b.shape[1]
        unit, per_unit, width, reads = "columns of N", 2 * m * k, m, (0, m * k, k, 0)
    else:
        return None
    sizes, source = group_sizes(call.values.get("offs"), total, groups)
    used, active = sum(sizes), sum(1 for s in sizes if s > 0)
    flops = per_unit * used
    bias_flops = used * width if bias is not None and width else 0.0
    read = {ia: (reads[0] * used + reads[1] * active) * a.itemsize,
            ib: (reads[2] * used + reads[3] * active) * b.itemsize}
    note = (f"NB: grouped GEMM, {groups} groups of {unit} ({_sizes_text(sizes)}), {source}: the work and bytes of "
            f"the {used:g} of {total} {unit} the groups got; an empty group's operand is not read; the output "
            "counted whole.")
    return Cost(float(flops), "rule:grouped gemm", note, None, float(flops), True,
                read_bytes={i: float(v) for i, v in read.items()}, extra_flops=float(bias_flops))


@formula("aten::_grouped_mm", "aten::_scaled_grouped_mm", "aten::_scaled_grouped_mm_v2")
def grouped_mm(call: OpCall) -> Cost | None:
    """torch._grouped_mm and F.grouped_mm; the fp8 forms' scales not counted."""
    return grouped_mm_cost(call)


@formula("transformers::grouped_mm_fallback")
def grouped_mm_fallback(call: OpCall) -> Cost | None:
    """transformers' grouped GEMM where torch's cannot run: input (S, K) x weight (G, K, N) with offsets."""
    return grouped_mm_cost(call, "input", "weight")


# -- the router's ops -------------------------------------------------------------------------------------------

def _numel(call: OpCall, name: str = "self") -> int:
    t = tensor(call, name)
    return t.numel if t is not None else 0


def _along(call: OpCall, name: str = "self") -> int:
    """The length of the tensor `name` along the call's `dim` (last by default)."""
    t = tensor(call, name)
    if t is None or not t.shape:
        return 1
    return t.shape[int(arg(call, "dim", -1))]


@formula("aten::topk", "aten::kthvalue")
def topk(call: OpCall) -> Cost | None:
    n = _numel(call)
    return rule(n, "selection", "NB: 1 compare per input element (a selection's passes; a radix select's "
                "integer work is not FLOPs); the sorting of the k found not counted.")


@formula("aten::sort", "aten::_unique2", "aten::unique_dim")
def sort(call: OpCall) -> Cost | None:
    t = tensor(call, "self")
    if t is None:
        return None
    n = t.numel if call.op.startswith("aten::_unique2") else _along(call)  # _unique2: the flattened input
    per = max(1, math.ceil(math.log2(n))) if n > 1 else 1
    return rule(per * t.numel, "sort", f"NB: a comparison sort, ceil(log2 {n}) = {per} compares per element "
                "(a GPU's radix sort does integer passes instead); unique's compaction not counted.")


@formula("aten::histc")
def histc(call: OpCall) -> Cost | None:
    n = _numel(call)
    ranged = float(arg(call, "min", 0)) == float(arg(call, "max", 0))  # min == max: torch finds the range first
    per = 3 + (2 if ranged else 0)
    return rule(per * n, "histogram", f"NB: {per} FLOPs per input element (shift, scale, add to its bin"
                + ("; the input's min and max found first" if ranged else "") + ").")


@formula("aten::bincount")
def bincount(call: OpCall) -> Cost | None:
    return rule(_numel(call), "histogram", "NB: 1 add per input element (its bin's count, or weight).")


@formula("aten::polar")
def polar(call: OpCall) -> Cost | None:
    n = max((t.numel for t in call.outputs), default=0)
    return rule(4 * n, "pointwise", "NB: 4 FLOPs per output element (cos, sin, two multiplies).")


@formula("aten::scatter_add", "aten::scatter_add_", "aten::scatter_reduce", "aten::scatter_reduce_")
def scatter_add(call: OpCall) -> Cost | None:
    """One add (or max, min, mul) per scattered element; the source read where the index reaches."""
    index, src = tensor(call, "index"), tensor(call, "src")
    if index is None:
        return None
    read = {_index(call, src): float(min(src.nbytes, index.numel * src.itemsize))} if src is not None else {}
    return Cost(float(index.numel), "rule:scatter-add", "NB: 1 FLOP per scattered element; the mean's division "
                "not counted; the output (a copy of self) counted whole.", read_bytes=read)


@formula("aten::index_add", "aten::index_add_", "aten::index_reduce", "aten::index_reduce_")
def index_add(call: OpCall) -> Cost | None:
    n = _numel(call, "source")
    per = 2 if arg(call, "alpha", 1) != 1 else 1
    return rule(per * n, "scatter-add", f"NB: {per} FLOP(s) per source element (the add; alpha's multiply).")


@formula("aten::nonzero", "aten::nonzero_static")
def nonzero(call: OpCall) -> Cost | None:
    return rule(_numel(call), "compaction", "NB: 1 compare per input element; the compaction's scan not counted.")


@formula("aten::searchsorted", "aten::bucketize")
def searchsorted(call: OpCall) -> Cost | None:
    edges = tensor(call, "sorted_sequence") or tensor(call, "boundaries")
    n = max((t.numel for t in call.outputs), default=0)
    per = max(1, math.ceil(math.log2(edges.shape[-1]))) if edges is not None and edges.shape and \
        edges.shape[-1] > 1 else 1
    return rule(per * n, "search", f"NB: a binary search, {per} compares per element.")


# -- fused transformer fast paths (eval mode) ---------------------------------------------------------------------

def _mha_parts(sq: Sequence[int], sk: Sequence[int], e: int, h: int, masked: bool, mask: MaskPattern | None,
               weights: bool) -> tuple[float, float, Cost | None]:
    """(matrix-product FLOPs, elementwise FLOPs, the attention's cost) of one multi-head attention over sequences
    of `sq` queries and `sk` keys (one pair per batch entry), as its decomposed path counts them: the packed
    in-projection (bias adds apart), attention as SDPA (the mask as read), the out-projection. With the weights
    returned (need_weights) the path is SDPA's math one: the full square of scores (a mask added to each), the
    queries scaled, the weights averaged over heads."""
    tq, tk = sum(sq), sum(sk)
    d = e // h
    matmul = 2.0 * (tq + 2 * tk) * e * e + 2.0 * tq * e * e  # q, k, v projections; the out-projection
    extra = float((tq + 2 * tk) * e + tq * e)  # their biases
    if weights:
        pairs = h * sum(q * k for q, k in zip(sq, sk, strict=True))
        matmul += 2.0 * pairs * 2 * d
        extra += SOFTMAX_FLOPS_PER_ELEMENT * pairs + tq * e + pairs + (pairs if masked else 0)
        return matmul, extra, None
    shapes = set(zip(sq, sk, strict=True))
    if len(shapes) == 1:  # one batch of equal sequences
        q_len, k_len = next(iter(shapes))
        attn = _attention((len(sq), h, q_len, d), (len(sq), h, k_len, d), (len(sq), h, k_len, d), "none", masked,
                          mask=mask)
    else:  # sequences of their own lengths (a nested tensor): each its own square
        parts = [_attention((1, h, q, d), (1, h, k, d), (1, h, k, d), "none", False) for q, k in zip(sq, sk,
                                                                                                   strict=True)]
        attn = None if None in parts else rule(sum(counted(c) for c in parts if c), "attention", "",
                                               sum(c.matmul_flops for c in parts if c), True,
                                               sum(c.extra_flops for c in parts if c))
    if attn is None:
        return matmul, extra, None
    return matmul + counted(attn), extra + attn.extra_flops, attn


def _fused(kind: str, matmul: float, extra: float, attn: Cost | None, mask: MaskPattern | None, note: str) -> Cost:
    """One fused op's cost; its attention's mask said as SDPA's would be."""
    if attn is not None and attn.explicit_mask:
        note += " An explicit mask whose values were not read: every score counted."
    elif attn is not None and mask is not None:
        note += " " + describe_mask(mask, attn.masked_flops, counted(attn) + attn.extra_flops + attn.masked_flops)
    return Cost(matmul, f"rule:{kind}", note, None, matmul, True,
                explicit_mask=bool(attn and attn.explicit_mask), extra_flops=extra,
                mask=attn.mask if attn else None, masked_flops=attn.masked_flops if attn else 0.0)


@formula("aten::_native_multi_head_attention")
def native_mha(call: OpCall) -> Cost | None:
    """nn.MultiheadAttention's fused op (eval, batch-first): q (B, L, E), k and v (B, S, E)."""
    q, k = tensor(call, "query"), tensor(call, "key")
    if q is None or k is None or len(q.shape) != 3 or len(k.shape) != 3:
        return None
    e, h = int(call.args["embed_dim"]), int(call.args["num_head"])
    masked = tensor(call, "mask") is not None
    weights = bool(arg(call, "need_weights", True))
    b = q.shape[0]
    matmul, extra, attn = _mha_parts([q.shape[1]] * b, [k.shape[1]] * b, e, h, masked, call.values.get("mask"),
                                     weights)
    if weights and not arg(call, "average_attn_weights", True):
        extra -= q.shape[0] * h * q.shape[1] * k.shape[1]  # the weights returned per head: no average
    return _fused("fused multi-head attention", matmul, extra, attn, call.values.get("mask"),
                  "NB: the decomposed path's count: q, k, v and out projections (2 per multiply-add; biases in "
                  "extra_flops), attention as SDPA (the softmax in extra_flops)"
                  + ("; the weights returned: the full square of scores, averaged over heads." if weights else "."))


@formula("aten::_transformer_encoder_layer_fwd")
def encoder_layer(call: OpCall) -> Cost | None:
    """nn.TransformerEncoderLayer's fused op (eval): self-attention, two layer norms, the feed-forward."""
    src, w1 = tensor(call, "src"), tensor(call, "ffn_weight_1")
    lengths = call.values.get("lengths")  # a nested src (nn.TransformerEncoder with a padding mask)
    if src is None or w1 is None or (len(src.shape) != 3 and lengths is None):
        return None
    seqs = list(lengths) if lengths is not None else [src.shape[1]] * src.shape[0]
    e, h = int(call.args["embed_dim"]), int(call.args["num_heads"])
    ff, t = w1.shape[0], sum(seqs)
    matmul, extra, attn = _mha_parts(seqs, seqs, e, h, tensor(call, "mask") is not None, call.values.get("mask"),
                                     False)
    act = "gelu" if arg(call, "use_gelu", False) else "relu"
    matmul += 2.0 * t * e * ff * 2  # the two feed-forward products
    extra += t * ff + t * e  # their biases
    extra += FLOPS_PER_ELEMENT[act] * t * ff + 2 * t * e + 2 * norm_flops("layernorm", t, e)  # act, residuals, norms
    return _fused("fused encoder layer", matmul, extra, attn, call.values.get("mask"),
                  f"NB: the decomposed path's count: self-attention as nn.MultiheadAttention's, the feed-forward's "
                  f"two products and {act}, two residual adds and layer norms (all but the products in "
                  "extra_flops)" + (f"; a nested input: {len(seqs)} sequences of {_sizes_text(seqs)} tokens, "
                                    "each its own square." if lengths is not None else "."))


@formula("aten::_nested_tensor_from_mask", "aten::to_padded_tensor")
def nested_copy(call: OpCall) -> Cost | None:
    """nn.TransformerEncoder's padding-free path: a padded batch to a nested tensor and back."""
    return Cost(0.0, "rule:copy", "NB: data movement only: 0 FLOPs; a nested tensor's bytes are its elements.")


@formula("aten::_nested_tensor_from_mask_left_aligned")
def nested_check(call: OpCall) -> Cost | None:
    return rule(_numel(call, "mask"), "compare", "NB: 1 compare per mask element (is it left-aligned).")


@formula("aten::_transform_bias_rescale_qkv")
def transform_bias_rescale_qkv(call: OpCall) -> Cost | None:
    qkv = tensor(call, "qkv")
    return None if qkv is None else rule(qkv.numel + qkv.numel // 3, "pointwise",
                                         "NB: the bias add per element and the queries' 1/sqrt(D) scale.")


@formula("aten::_masked_softmax")
def masked_softmax(call: OpCall) -> Cost | None:
    x = tensor(call, "self")
    if x is None:
        return None
    return rule(SOFTMAX_FLOPS_PER_ELEMENT * x.numel, "softmax", "NB: 5 FLOPs per element (max, sub, exp, sum, "
                "div) over every element, masked or not; the mask's select not counted.")


@formula("aten::_masked_softmax_backward")
def masked_softmax_backward(call: OpCall) -> Cost | None:
    g = tensor(call, "grad_output")
    return None if g is None else rule(4 * g.numel, "softmax backward", "NB: 4 per element (mul, sum, sub, mul).")
