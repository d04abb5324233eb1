"""The registered FLOP formulas, one per family of aten operators (registry.py holds the registry and the counting
convention, cost.py the order of lookup). Each is a pure function of a call's recorded shapes and arguments;
None means the formula does not apply to these arguments (the generic rules then take over)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from typing import Any

from roofline.capture.masks import MaskPattern
from roofline.capture.registry import Cost, arg, catalog_cost, dense, formula, rule, tensor
from roofline.capture.trace import OpCall, TensorMeta
from roofline.core.aten_names import op_name
from roofline.ops.attention import BACKWARD_SOFTMAX_FLOPS, backward_pair_flops, causal_pairs
from roofline.ops.elementwise import FLOPS_PER_ELEMENT
from roofline.ops.embedding import INDEX_BYTES as EMBEDDING_INDEX_BYTES
from roofline.ops.gemm import mm_flops
from roofline.ops.norm import BN_INFERENCE, BN_TRAINING, norm_flops
from roofline.ops.optimizer import ADAMW_FLOPS
from roofline.ops.softmax import SOFTMAX_FLOPS_PER_ELEMENT

# -- matrix products --------------------------------------------------------------------------------------

def _gemm(m: int, n: int, k: int, batch: int = 1, bias: bool = False, extra: float = 0.0, note: str = "") -> Cost:
    """Catalog GEMM (bias epilogue: 1 FLOP per output); an empty product costs nothing."""
    matmul = mm_flops(m, n, k, batch)
    if min(m, n, k, batch) < 1:
        return rule(0, "gemm", "NB: empty product.", 0, True)
    return catalog_cost("gemm", matmul, extra, note, m=m, n=n, k=k, batch=batch, epilogue="bias" if bias else "none")


def _operands(call: OpCall, a: str, b: str, batched: bool = False) -> tuple[int, int, int, int] | None:
    """(batch, m, n, k) of a matrix product whose operands are the arguments `a` (M x K, or batch x M x K when
    `batched`) and `b` (K x N or batch x K x N); None when either is absent. Operands of another rank raise
    (the formula fails, and the record says so)."""
    x, y = tensor(call, a), tensor(call, b)
    if x is None or y is None:
        return None
    if batched:
        (batch, m, k), n = x.shape, y.shape[2]
        return batch, m, n, k
    (m, k), n = x.shape, y.shape[1]
    return 1, m, n, k


@formula("aten::mm", "aten::_int_mm")
def mm(call: OpCall) -> Cost | None:
    if (s := _operands(call, "self", "mat2")) is None:
        return None
    _, m, n, k = s
    return _gemm(m, n, k)


@formula("aten::addmm")
def addmm(call: OpCall) -> Cost | None:
    if (s := _operands(call, "mat1", "mat2")) is None:
        return None
    _, m, n, k = s
    return _gemm(m, n, k, bias=arg(call, "beta", 1) != 0, note="A full M x N `self` counts as a bias add.")


@formula("aten::_addmm_activation")
def addmm_activation(call: OpCall) -> Cost | None:
    if (s := _operands(call, "mat1", "mat2")) is None:
        return None
    _, m, n, k = s
    act = "gelu" if arg(call, "use_gelu", False) else "relu"
    return _gemm(m, n, k, bias=arg(call, "beta", 1) != 0, extra=FLOPS_PER_ELEMENT[act] * m * n,
                 note=f"The fused {act} adds {FLOPS_PER_ELEMENT[act]} per output.")


@formula("aten::bmm")
def bmm(call: OpCall) -> Cost | None:
    if (s := _operands(call, "self", "mat2", batched=True)) is None:
        return None
    batch, m, n, k = s
    return _gemm(m, n, k, batch)


@formula("aten::baddbmm")
def baddbmm(call: OpCall) -> Cost | None:
    if (s := _operands(call, "batch1", "batch2", batched=True)) is None:
        return None
    batch, m, n, k = s
    return _gemm(m, n, k, batch, bias=arg(call, "beta", 1) != 0,
                 note="The added `self` counts as the bias (none when beta == 0).")


@formula("aten::_scaled_mm")
def scaled_mm(call: OpCall) -> Cost | None:
    if (s := _operands(call, "self", "mat2")) is None:
        return None
    _, m, n, k = s
    return _gemm(m, n, k, bias=tensor(call, "bias") is not None, note="The fp8 scales not counted.")


@formula("aten::mv")
def mv(call: OpCall) -> Cost | None:
    a = tensor(call, "self")
    if a is None or min(a.shape) < 1:
        return None
    n, k = a.shape
    return catalog_cost("gemv", 2 * n * k, m=1, n=n, k=k)


@formula("aten::dot", "aten::vdot")
def dot(call: OpCall) -> Cost | None:
    a = tensor(call, "self")
    return None if a is None else rule(2 * a.numel, "dot", "NB: 2 FLOPs per element pair.", 2 * a.numel)


# -- convolution ------------------------------------------------------------------------------------------

def conv_matmul_flops(x: tuple[int, ...], w: tuple[int, ...], out: tuple[int, ...], transposed: bool) -> int:
    """torch's count (flop_counter.conv_flop_count): 2 x N x Cout x Cin/groups x taps x output positions
    (input positions when transposed). The bias is not counted."""
    spatial = x[2:] if transposed else out[2:]
    return 2 * x[0] * math.prod(w) * math.prod(spatial)


def _pair(v: Any) -> tuple[int, ...]:
    return tuple(v) if isinstance(v, (list, tuple)) else (v,)


def _square(v: Any) -> Any:
    """The one side of a square window argument (an int, or a pair of equal ones), None otherwise."""
    sides = set(_pair(v))
    return sides.pop() if len(sides) == 1 else None


@formula("aten::convolution", "aten::_convolution")
def convolution(call: OpCall) -> Cost | None:
    x, w, bias = tensor(call, "input"), tensor(call, "weight"), tensor(call, "bias")
    if x is None or w is None or not call.outputs:
        return None
    out = call.outputs[0].shape
    transposed = bool(arg(call, "transposed", False))
    matmul = conv_matmul_flops(x.shape, w.shape, out, transposed)
    n_out = math.prod(out)
    stride, padding, dilation = (_pair(arg(call, a, [1])) for a in ("stride", "padding", "dilation"))
    groups = int(arg(call, "groups", 1))
    square = (len(x.shape) == 4 and w.shape[2] == w.shape[3] and len(set(stride)) == len(set(padding))
              == len(set(dilation)) == 1 and min(x.shape) >= 1 and min(w.shape) >= 1)
    if square and not transposed:
        return catalog_cost("conv2d", matmul, batch=x.shape[0], in_channels=x.shape[1], height=x.shape[2],
                        width=x.shape[3], out_channels=w.shape[0], kernel_size=w.shape[2], stride=stride[0],
                        padding=padding[0], dilation=dilation[0], groups=groups, bias=bias is not None)
    bias_flops = n_out if bias is not None else 0
    return Cost(float(matmul), "torch.utils.flop_counter", "NB: torch's convolution count (input, "
                "filter, output moved once); the bias add, 1 FLOP per output, in extra_flops as the catalog's conv2d.",
                None, matmul, True, extra_flops=float(bias_flops))


# -- attention --------------------------------------------------------------------------------------------

def _attention(q: tuple[int, ...], k: tuple[int, ...], v: tuple[int, ...], align: str, masked: bool,
               backward: bool = False, mask: MaskPattern | None = None) -> Cost | None:
    """q (B, H, Sq, D), k (B, Hkv, Skv, D), v (B, Hkv, Skv, Dv). A mask tensor read from its values (`mask`,
    capture/masks.py) counts the scores it keeps, a causal one as is_causal; unread (no data), every score is
    counted and the cost says so (`explicit_mask`)."""
    if masked and mask is not None and align == "none":
        return _masked_attention(q, k, v, mask, backward)
    cost = _attention_cost(q, k, v, align, masked, backward)
    if cost is not None and masked:
        return dataclasses.replace(cost, explicit_mask=True, mask="unknown")
    return cost


# What would skip the masked scores a mask tensor makes a kernel compute, by the mask's kind.
_BLOCKS = "a kernel with block support (flex_attention's block mask, varlen FlashAttention over the sequences)"
_MASK_ADVICE = {
    "causal": "is_causal=True instead of the mask lets a flash kernel skip them",
    "sliding window": "a kernel with window support (FlashAttention's window_size, flex_attention's sliding-window "
                      "block mask) would skip them",
    "sliding window + padding": "a kernel with window support over unpadded sequences (varlen FlashAttention's "
                                "window_size) would skip them",
    "padding": "unpadded sequences (varlen FlashAttention, nested tensors) would skip them",
    "causal + padding": f"{_BLOCKS} would skip them",
    "block-diagonal": f"{_BLOCKS} would skip them",
    "block-causal": f"{_BLOCKS} would skip them",
}
_SPARSE_ADVICE = "a kernel with block-sparse support (flex_attention's block mask) would skip the masked blocks"


def counted(cost: Cost) -> float:
    """The FLOPs of a count made by a rule or the catalog (`rule`, `catalog_cost`): never None, which only a call
    without a formula has."""
    assert cost.flops is not None
    return cost.flops


def _masked_attention(q: tuple[int, ...], k: tuple[int, ...], v: tuple[int, ...], mask: MaskPattern,
                      backward: bool) -> Cost | None:
    """The scores a mask tensor keeps, counted; the work a kernel given the tensor spends on the rest (it computes
    the full square) in `masked_flops`, with what would skip it."""
    full = _attention_cost(q, k, v, "none", False, backward)
    if full is None:
        return None
    if mask.kind == "causal" and mask.align in ("top_left", "bottom_right"):
        cost = _attention_cost(q, k, v, mask.align, False, backward)
    else:
        cost = full if mask.kind == "none" else _attention_cost(q, k, v, "none", False, backward, kept=mask.kept)
    if cost is None:
        return None
    total = counted(full) + full.extra_flops
    wasted = total - (counted(cost) + cost.extra_flops)
    return dataclasses.replace(cost, note=f"{cost.note} {describe_mask(mask, wasted, total)}", mask=mask.label,
                               masked_flops=wasted)


def describe_mask(mask: MaskPattern, wasted: float, total: float) -> str:
    """Which mask the count assumed; what a full-square kernel spent on the scores it masks, and what would skip
    them."""
    counted = ("counted as is_causal is (the triangle, diagonal included)." if mask.kind == "causal" else
               f"{mask.kept:.1%} of the scores kept and counted.")
    said = f"The mask tensor read {mask.source} as {mask.label}: {counted}"
    if wasted <= 0 or total <= 0:
        return said
    return (f"{said} A kernel given a mask tensor computes the full square: {wasted / total:.0%} of its score work "
            f"({wasted:.3g} FLOPs, masked_flops) went to masked scores; {_MASK_ADVICE.get(mask.kind, _SPARSE_ADVICE)}.")


def _attention_cost(q: tuple[int, ...], k: tuple[int, ...], v: tuple[int, ...], align: str, masked: bool,
                    backward: bool, kept: float | None = None) -> Cost | None:
    """`kept`: the share of the scores a mask keeps (every score, or the causal ones by `align`, when None)."""
    if len(q) != 4 or len(k) != 4 or len(v) != 4:
        return None  # variable-length (nested) layouts: lengths are in tensor data
    b, h, sq, d = q
    hkv, skv, dv = k[1], k[2], v[3]
    mask_note = " An explicit mask: every score counted." if masked else ""
    head_pairs = causal_pairs(sq, skv, align) if kept is None else kept * sq * skv
    exact = d == dv and hkv >= 1 and h % hkv == 0 and min(q) >= 1 and min(k) >= 1 and kept is None
    causal = align != "none"
    catalog = exact and (align in ("none", "bottom_right") or sq == skv) and not (causal and sq > skv)
    if backward:
        matmul = b * h * head_pairs * backward_pair_flops(d, dv)
        if catalog:  # the catalog's attention --backward: its traffic, Q, O, dO, K, V, the LSE, dQ, dK, dV
            return catalog_cost("attention", matmul, note=mask_note.strip(), batch=b, heads=h, kv_heads=hkv,
                                seq=sq, kv_seq=skv, head_dim=d, causal=causal, variant="flash", backward=True)
        return rule(matmul, "attention backward", "NB: torch's five matrix products of SDPA's backward over the "
                    "scores the mask keeps; the softmax's backward in extra_flops." + mask_note, matmul, True,
                    extra_flops=b * h * head_pairs * BACKWARD_SOFTMAX_FLOPS)
    matmul = b * h * head_pairs * 2 * (d + dv)
    if catalog:
        return catalog_cost("attention", matmul, note=mask_note.strip(), batch=b, heads=h, kv_heads=hkv, seq=sq,
                        kv_seq=skv, head_dim=d, causal=causal, variant="flash")
    softmax = b * h * head_pairs * SOFTMAX_FLOPS_PER_ELEMENT
    return rule(matmul, "attention", "NB: the catalog's count (2D + 2Dv per score; the softmax's 5 in extra_flops) "
                "with torch's top-left causal mask, a mask's kept scores or Dv != D; the log-sum-exp not counted."
                + mask_note, matmul, True, extra_flops=softmax)


def _sdpa_align(call: OpCall) -> str:
    return "top_left" if arg(call, "is_causal", False) else "none"


@formula("aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_efficient_attention",
         "aten::_scaled_dot_product_cudnn_attention", "aten::_scaled_dot_product_flash_attention_for_cpu",
         "aten::_scaled_dot_product_fused_attention_overrideable", "aten::scaled_dot_product_attention")
def sdpa(call: OpCall) -> Cost | None:
    """torch's SDPA kernels (and SDPA as a whole, recorded so by analytic runs): (B, H, S, D) layout;
    is_causal is top-left aligned (torch's convention)."""
    q, k, v = tensor(call, "query"), tensor(call, "key"), tensor(call, "value")
    if q is None or k is None or v is None:
        return None
    masked = tensor(call, "attn_mask") is not None or tensor(call, "attn_bias") is not None
    return _attention(q.shape, k.shape, v.shape, _sdpa_align(call), masked, mask=call.values.get("mask"))


@formula("aten::_scaled_dot_product_flash_attention_backward",
         "aten::_scaled_dot_product_efficient_attention_backward",
         "aten::_scaled_dot_product_cudnn_attention_backward",
         "aten::_scaled_dot_product_flash_attention_for_cpu_backward")
def sdpa_backward(call: OpCall) -> Cost | None:
    q, k, v = tensor(call, "query"), tensor(call, "key"), tensor(call, "value")
    if q is None or k is None or v is None:
        return None
    masked = tensor(call, "attn_mask") is not None or tensor(call, "attn_bias") is not None
    return _attention(q.shape, k.shape, v.shape, _sdpa_align(call), masked, backward=True,
                      mask=call.values.get("mask"))


def _bhsd(t: TensorMeta) -> tuple[int, ...]:
    """(B, S, H, D) -> (B, H, S, D); 3-D (variable-length) layouts unchanged (no formula)."""
    s = t.shape
    return (s[0], s[2], s[1], s[3]) if len(s) == 4 else s


@formula("aten::_flash_attention_forward")
def flash_forward(call: OpCall) -> Cost | None:
    """FlashAttention's own entry: (B, S, H, D), causal aligned bottom-right."""
    q, k, v = tensor(call, "query"), tensor(call, "key"), tensor(call, "value")
    if q is None or k is None or v is None or tensor(call, "cum_seq_q") is not None:
        return None
    if call.args.get("window_size_left") is not None or call.args.get("window_size_right") is not None:
        return None  # a sliding window scores fewer pairs: torch's full count would be wrong
    align = "bottom_right" if arg(call, "is_causal", False) else "none"
    return _attention(_bhsd(q), _bhsd(k), _bhsd(v), align, tensor(call, "alibi_slopes") is not None)


@formula("aten::_efficient_attention_forward")
def efficient_forward(call: OpCall) -> Cost | None:
    """Memory-efficient attention's entry: (B, S, H, D); custom_mask_type 1 = top-left, 2 = bottom-right."""
    q, k, v = tensor(call, "query"), tensor(call, "key"), tensor(call, "value")
    if q is None or k is None or v is None or tensor(call, "cu_seqlens_q") is not None:
        return None
    if call.args.get("window_size") is not None:
        return None
    align = {1: "top_left", 2: "bottom_right"}.get(int(arg(call, "custom_mask_type", 0)), "none")
    return _attention(_bhsd(q), _bhsd(k), _bhsd(v), align, tensor(call, "bias") is not None,
                      mask=call.values.get("mask"))


# -- normalisation, softmax -------------------------------------------------------------------------------

def _rows_cols(x: TensorMeta, normalized: Iterable[int]) -> tuple[int, int]:
    cols = math.prod(normalized)
    return (x.numel // cols if cols else 0), cols


def _catalog_norm(call: OpCall, name: str) -> Cost | None:
    """A norm over the trailing `normalized_shape` dimensions as the catalog's `name` (rows x cols)."""
    x = tensor(call, "input")
    if x is None:
        return None
    rows, cols = _rows_cols(x, arg(call, "normalized_shape", [x.shape[-1]]))
    if rows < 1 or cols < 1:
        return rule(0, name, "NB: empty input.")
    return catalog_cost(name, rows=rows, cols=cols)


@formula("aten::native_layer_norm")
def layer_norm(call: OpCall) -> Cost | None:
    return _catalog_norm(call, "layernorm")


@formula("aten::_fused_rms_norm")
def rms_norm(call: OpCall) -> Cost | None:
    return _catalog_norm(call, "rmsnorm")


@formula("aten::native_group_norm")
def group_norm(call: OpCall) -> Cost | None:
    n, c, hw, g = (int(arg(call, a, 0)) for a in ("N", "C", "HxW", "group"))
    if min(n, c, hw, g) < 1:
        return None
    return rule(norm_flops("layernorm", n * g, c // g * hw), "group norm",
                 "NB: LayerNorm's count over each group (7 per element, 4 per group); the per-channel affine "
                 "counted per element.")


@formula("aten::_native_batch_norm_legit_no_training", "aten::_native_batch_norm_legit",
         "aten::native_batch_norm", "aten::cudnn_batch_norm", "aten::miopen_batch_norm")
def batch_norm(call: OpCall) -> Cost | None:
    """The catalog's batchnorm for an N x C x H x W input (its FLOPs per element and per channel: ops/norm.py);
    other ranks by the same count as a rule."""
    x = tensor(call, "input")
    if x is None or len(x.shape) < 2:
        return None
    training = bool(arg(call, "training", False))
    if len(x.shape) == 4 and x.numel > 0:
        n, c, h, w = x.shape
        return catalog_cost("batchnorm", batch=n, channels=c, height=h, width=w, training=training)
    per_elem, per_channel = BN_TRAINING if training else BN_INFERENCE
    return rule(per_elem * x.numel + per_channel * x.shape[1], "batch norm " + ("training" if training else
                 "inference"), "NB: running-statistics updates not counted; read once, written once.")


@formula("aten::_softmax", "aten::_safe_softmax")
def softmax(call: OpCall) -> Cost | None:
    x = tensor(call, "self")
    if x is None:
        return None
    dim = int(arg(call, "dim", -1))
    cols = x.shape[dim] if x.shape else 1
    rows = x.numel // cols if cols else 0
    if rows < 1 or cols < 1:
        return rule(0, "softmax", "NB: empty input.")
    return catalog_cost("softmax", rows=rows, cols=cols)


@formula("aten::_log_softmax")
def log_softmax(call: OpCall) -> Cost | None:
    x = tensor(call, "self")
    return None if x is None else rule(SOFTMAX_FLOPS_PER_ELEMENT * x.numel, "log_softmax",
                                        "NB: max, sub, exp, sum, sub per element; the log per row not counted.")


@formula("aten::_softmax_backward_data", "aten::_log_softmax_backward_data")
def softmax_backward(call: OpCall) -> Cost | None:
    g = tensor(call, "grad_output")
    return None if g is None else rule(4 * g.numel, "softmax backward", "NB: 4 per element (mul, sum, sub, mul).")


# -- pooling ----------------------------------------------------------------------------------------------

def _window(kernel: Any, dims: int) -> int:
    k = _pair(kernel)
    return math.prod(k) if len(k) == dims else k[0] ** dims


def _pool(call: OpCall, dims: int) -> Cost | None:
    x = tensor(call, "self")
    if x is None or not call.outputs or call.args.get("kernel_size") is None:
        return None
    per = _window(call.args["kernel_size"], dims)
    return rule(per * call.outputs[0].numel, "pooling", f"NB: {per} FLOPs (compares or adds) per output "
                 "element, one per window tap; the average's division not counted.")


@formula("aten::max_pool2d_with_indices", "aten::max_pool2d", "aten::avg_pool2d", "aten::mkldnn_max_pool2d")
def pool2d(call: OpCall) -> Cost | None:
    """The catalog's pool2d for a 4-D input with square windows, strides and padding, no dilation or ceil mode
    (its FLOPs the rule's); other pools by the rule."""
    x = tensor(call, "self")
    kernel = _square(call.args.get("kernel_size"))
    stride = _square(call.args.get("stride") or kernel)  # none given ([] or None): the window's side, as torch's
    padding, dilation = _square(call.args.get("padding", 0)), _square(call.args.get("dilation", 1))
    if (x is not None and len(x.shape) == 4 and None not in (kernel, stride, padding) and dilation == 1
            and not call.args.get("ceil_mode")):
        n, c, h, w = x.shape
        return catalog_cost("pool2d", batch=n, channels=c, height=h, width=w, kernel_size=kernel, stride=stride,
                            padding=padding, func="max" if "max" in call.op else "avg",
                            indices="with_indices" in call.op)
    return _pool(call, 2)


@formula("aten::max_pool1d", "aten::avg_pool1d", "aten::max_pool1d_with_indices")
def pool1d(call: OpCall) -> Cost | None:
    return _pool(call, 1)


@formula("aten::max_pool3d_with_indices", "aten::max_pool3d", "aten::avg_pool3d")
def pool3d(call: OpCall) -> Cost | None:
    return _pool(call, 3)


@formula("aten::_adaptive_avg_pool2d", "aten::adaptive_max_pool2d", "aten::_adaptive_avg_pool3d",
         "aten::adaptive_max_pool3d", "aten::adaptive_max_pool1d", "aten::_adaptive_avg_pool1d")
def adaptive_pool(call: OpCall) -> Cost | None:
    x = tensor(call, "self")
    return None if x is None else rule(x.numel, "pooling", "NB: 1 FLOP per input element (windows taken as "
                                        "disjoint); the average's division not counted.")


# -- backward of norms, optimizers --------------------------------------------------------------------------

# A norm's backward per element: x-hat again (2), the two sums over the row or channel (2), the input
# gradient (about 5), the weight and bias gradients (3).
NORM_BACKWARD_FLOPS = 12


@formula("aten::native_layer_norm_backward", "aten::native_batch_norm_backward", "aten::native_group_norm_backward",
         "aten::_fused_rms_norm_backward", "aten::cudnn_batch_norm_backward", "aten::miopen_batch_norm_backward")
def norm_backward(call: OpCall) -> Cost | None:
    g = tensor(call, "grad_out") or tensor(call, "grad_output")
    return None if g is None else rule(NORM_BACKWARD_FLOPS * g.numel, "norm backward",
                                        f"NB: {NORM_BACKWARD_FLOPS} FLOPs per element (x-hat, two sums, the input, "
                                        "weight and bias gradients); RMSNorm's lighter backward counted alike.")


# Fused optimizer steps, FLOPs per parameter element: Adam(W) updates both moments (4), corrects their bias
# (2), takes sqrt, adds eps, divides and applies lr and weight decay (6); SGD with momentum 4.
OPTIMIZER_FLOPS = {"_fused_adam_": ADAMW_FLOPS, "_fused_adamw_": ADAMW_FLOPS, "_fused_sgd_": 4, "_fused_adagrad_": 6}


@formula(*(f"aten::{name}" for name in OPTIMIZER_FLOPS))
def fused_optimizer(call: OpCall) -> Cost | None:
    """The rule's FLOPs per element; AdamW without amsgrad or a grad scale is the catalog's `adamw` (its
    gradients, which the schema marks mutable, are read and not written back)."""
    params = call.args.get("self")
    if not isinstance(params, (list, tuple)):
        return None
    name = op_name(call.op)
    per = OPTIMIZER_FLOPS[name]
    tensors = [t for t in params if isinstance(t, TensorMeta)]
    numel = sum(t.numel for t in tensors)
    grads = [t for t in arg(call, "grads", []) if isinstance(t, TensorMeta)]
    if name == "_fused_adamw_" and tensors and not arg(call, "amsgrad", False) \
            and arg(call, "grad_scale", None) is None and len(grads) == len(tensors):
        cost = catalog_cost("adamw", numel=numel, tensors=len(tensors))
        grad_ids = {id(g) for g in grads}
        return dataclasses.replace(cost, unwritten=frozenset(i for i, t in enumerate(call.inputs)
                                                             if id(t) in grad_ids))
    return rule(per * numel, "optimizer", f"NB: {per} FLOPs per parameter element.")


# -- gathers ----------------------------------------------------------------------------------------------

def _gather(call: OpCall, table: str) -> Cost | None:
    """0 FLOPs; the table is read only where the output's rows come from (at most the output's bytes)."""
    t = tensor(call, table)
    if t is None or not call.outputs:
        return None
    idx = next(i for i, x in enumerate(call.inputs) if x is t)
    return Cost(0.0, "rule:gather", "NB: reads the gathered rows once (repeated indices counted each time).",
                read_bytes={idx: float(min(call.outputs[0].nbytes, t.nbytes))})


@formula("aten::embedding")
def embedding(call: OpCall) -> Cost | None:
    return _gather(call, "weight")


@formula("aten::index_select", "aten::gather", "aten::index.Tensor", "aten::_unsafe_index.Tensor", "aten::take")
def index_select(call: OpCall) -> Cost | None:
    return _gather(call, "self")


@formula("aten::embedding_dense_backward")
def embedding_backward(call: OpCall) -> Cost | None:
    """The catalog's `embedding --backward` (dY and the int64 indices read, the whole vocab x dim gradient
    written); other index types the rule (the same FLOPs)."""
    g, idx, vocab = tensor(call, "grad_output"), tensor(call, "indices"), arg(call, "num_weights", 0)
    if g is None:
        return None
    if idx is not None and idx.itemsize == EMBEDDING_INDEX_BYTES and not idx.is_float and g.shape and vocab > 0 \
            and idx.numel * g.shape[-1] == g.numel:
        return catalog_cost("embedding", tokens=idx.numel, vocab=int(vocab), dim=g.shape[-1], backward=True)
    return rule(g.numel, "scatter-add", "NB: one add per gradient element.")


@formula("aten::cat")
def cat(call: OpCall) -> Cost | None:
    """The catalog's cat when every tensor after the first has one length along the joined dimension (a KV
    cache's append, rotate_half's halves); other joins stay copies (capture/registry.copy_cost)."""
    ts = [t for t in arg(call, "tensors", []) if isinstance(t, TensorMeta) and t.numel > 0]
    out = call.outputs[0] if call.outputs else None
    if out is None or len(ts) < 2 or not out.shape or len({t.dtype for t in ts}) > 1:
        return None
    dim = arg(call, "dim", 0) % len(out.shape)
    lengths = [t.shape[dim] for t in ts]
    if len(set(lengths[1:])) > 1:
        return None
    return catalog_cost("cat", outer=max(math.prod(out.shape[:dim]), 1), length=lengths[0], tail=lengths[1],
                        parts=len(ts), inner=max(math.prod(out.shape[dim + 1:]), 1),
                        strided=not all(dense(t) for t in ts))
