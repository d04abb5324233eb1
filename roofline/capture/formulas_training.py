"""FLOP formulas, and byte rules where the generic count is wrong, for the ops of training steps the other
families leave without a count: losses, the backward of pooling, upsampling, padding and indexing,
activations torch does not tag pointwise, dropout and random draws, and recurrent layers (LSTM, GRU, RNN)
counted by their gate matrix products.

Conventions as registry.py's: 2 FLOPs per multiply-add, 1 per add, mul, compare or transcendental call. The
byte rules: a backward that takes the forward's input only for its shape (`self` of max_pool2d's backward,
nll_loss's) does not read it (`Cost.unread`); nll_loss reads one log-probability per target, not the whole
input (`Cost.read_bytes`); a draw into an existing tensor (bernoulli_, uniform_) writes it without reading it.
"""

from __future__ import annotations

import math
from typing import Any

from roofline.capture.registry import POINTWISE_FLOPS, Cost, arg, formula, rule, tensor
from roofline.capture.trace import OpCall, TensorMeta


def _index(call: OpCall, name: str) -> int | None:
    """Position of the tensor argument `name` in `call.inputs` (None when absent)."""
    t = tensor(call, name)
    return next((i for i, x in enumerate(call.inputs) if x is t), None) if t is not None else None


def _unread(call: OpCall, *names: str) -> frozenset[int]:
    """The inputs named, which the op takes for their shape only."""
    return frozenset(i for i in (_index(call, n) for n in names) if i is not None)


def _numel(call: OpCall, name: str) -> int | None:
    t = tensor(call, name)
    return None if t is None else t.numel


def _out_numel(call: OpCall) -> int:
    return max((t.numel for t in call.outputs), default=0)


def _per_element(numel: int, per: int, kind: str, note: str, unread: frozenset[int] = frozenset(),
                 read_bytes: dict[int, float] | None = None) -> Cost:
    return Cost(float(per * numel), f"rule:{kind}", f"NB: {per} FLOP(s) per element; {note}", unread=unread,
                read_bytes=read_bytes or {})


# -- losses -----------------------------------------------------------------------------------------------

# FLOPs per input element (before the reduction's one add per element, when reduced; the mean's single
# division not counted).
LOSS_FLOPS: dict[str, int] = {
    "mse_loss": 2,  # sub, square
    "smooth_l1_loss": 5,  # sub, abs, compare, the branch taken (0.5 d^2 / beta or |d| - 0.5 beta): 2
    "huber_loss": 5,  # sub, abs, compare, the branch taken (0.5 d^2 or delta (|d| - 0.5 delta)): 2
    "binary_cross_entropy": 8,  # log x, log(1 - x), 1 - x, 1 - y, two muls, add, negate (the clamps at -100 not)
    "binary_cross_entropy_with_logits": 9,  # (1 - y) x + max(-x, 0) + log(exp(-m) + exp(-x - m)): about 9
    "soft_margin_loss": 4,  # log(1 + exp(-y x)): mul, negate, exp, log1p
}
# FLOPs per input element of their backward (the gradient of one element).
LOSS_BACKWARD_FLOPS: dict[str, int] = {
    "mse_loss_backward": 3,  # (x - y) x 2/N x grad: sub, two muls
    "smooth_l1_loss_backward": 4,  # sub, compare, d / beta or sign(d), times grad x 1/N
    "huber_loss_backward": 4,  # sub, compare, d or delta sign(d), times grad x 1/N
    "binary_cross_entropy_backward": 6,  # grad (x - y) / max((1 - x) x, eps): two subs, mul, max, div, mul
    "soft_margin_loss_backward": 6,  # -y exp(-y x) / (1 + exp(-y x)) x grad: about 6
}


def _reduced(call: OpCall) -> bool:
    return int(arg(call, "reduction", 1)) != 0


@formula(*(f"aten::{name}" for name in LOSS_FLOPS))
def pointwise_loss(call: OpCall) -> Cost | None:
    n = _numel(call, "self")
    if n is None:
        return None
    name = call.op.split("::")[-1].split(".")[0]
    per = LOSS_FLOPS[name] + (tensor(call, "weight") is not None) + _reduced(call)
    return _per_element(n, per, "loss", "the reduction's add counted per element, the mean's division not; "
                        "a weight's mul counted when given.")


@formula(*(f"aten::{name}" for name in LOSS_BACKWARD_FLOPS))
def pointwise_loss_backward(call: OpCall) -> Cost | None:
    n = _numel(call, "self")
    if n is None:
        return None
    name = call.op.split("::")[-1].split(".")[0]
    per = LOSS_BACKWARD_FLOPS[name] + (tensor(call, "weight") is not None)
    return _per_element(n, per, "loss backward", "the gradient of each input element; the grad_output read once.")


@formula("aten::nll_loss_forward", "aten::nll_loss2d_forward")
def nll_loss(call: OpCall) -> Cost | None:
    """One log-probability gathered per target (rows = target elements): negated, weighted when a weight is
    given (a mul, and an add into the total weight), summed when reduced. Reads one element per row of the
    (rows x classes) input, not the input."""
    x, target = tensor(call, "self"), tensor(call, "target")
    if x is None or target is None:
        return None
    rows = target.numel
    weighted = tensor(call, "weight") is not None
    per = 1 + 2 * weighted + _reduced(call)
    i = _index(call, "self")
    return Cost(float(per * rows), "rule:nll_loss", f"NB: {per} FLOP(s) per target (negate, weight, sum); one "
                "input element read per target (the ignore_index compare not counted).",
                read_bytes={i: float(min(rows * x.itemsize, x.nbytes))} if i is not None else {})


@formula("aten::nll_loss_backward", "aten::nll_loss2d_backward")
def nll_loss_backward(call: OpCall) -> Cost | None:
    """The gradient is zero but at each target: -grad x weight / total weight there. `self` gives the shape
    only (not read); the whole gradient is written (the zeros included)."""
    target = tensor(call, "target")
    if target is None:
        return None
    per = 1 + (tensor(call, "weight") is not None) + (int(arg(call, "reduction", 1)) == 1)
    return Cost(float(per * target.numel), "rule:nll_loss backward", f"NB: {per} FLOP(s) per target (negate, "
                "weight, the mean's division); the zero fill 0 FLOPs, its bytes written.",
                unread=_unread(call, "self"))


# -- pooling, upsampling and padding backward -------------------------------------------------------------

def _taps(call: OpCall, dims: int) -> int | None:
    k = call.args.get("kernel_size")
    if k is None:
        return None
    k = tuple(k) if isinstance(k, (list, tuple)) else (k,)
    return math.prod(k) if len(k) == dims else int(k[0]) ** dims


@formula("aten::max_pool2d_with_indices_backward", "aten::max_pool3d_with_indices_backward",
         "aten::adaptive_max_pool2d_backward", "aten::adaptive_max_pool3d_backward")
def max_pool_backward(call: OpCall) -> Cost | None:
    """Each output's gradient added into the input element its index names; the forward's input gives the
    shape only (not read): reads grad_output and indices, writes the input's gradient (zeros included)."""
    n = _numel(call, "grad_output")
    if n is None:
        return None
    return _per_element(n, 1, "pooling backward", "one add per gradient element into its argmax; the zero fill "
                        "0 FLOPs; the forward's input not read.", _unread(call, "self"))


@formula("aten::avg_pool2d_backward", "aten::avg_pool3d_backward")
def avg_pool_backward(call: OpCall) -> Cost | None:
    n = _numel(call, "grad_output")
    taps = _taps(call, 3 if "3d" in call.op else 2)
    if n is None or taps is None:
        return None
    return _per_element(n, taps, "pooling backward", "one add per window tap of each gradient element (the "
                        "forward's count); the division not counted; the forward's input not read.",
                        _unread(call, "self"))


@formula("aten::_adaptive_avg_pool2d_backward", "aten::_adaptive_avg_pool3d_backward")
def adaptive_avg_pool_backward(call: OpCall) -> Cost | None:
    if not call.outputs:
        return None
    return _per_element(_out_numel(call), 1, "pooling backward", "one add per input element (windows taken as "
                        "disjoint, as the forward's count); the forward's input not read.", _unread(call, "self"))


# Taps per output element of the interpolating upsamplers.
INTERPOLATION_TAPS = {"upsample_linear1d": 2, "upsample_bilinear2d": 4, "upsample_trilinear3d": 8,
                      "upsample_bicubic2d": 16}


@formula(*(f"aten::{name}" for name in INTERPOLATION_TAPS))
def upsample(call: OpCall) -> Cost | None:
    if not call.outputs:
        return None
    taps = INTERPOLATION_TAPS[call.op.split("::")[-1].split(".")[0]]
    return _per_element(_out_numel(call), 2 * taps - 1, "upsample", f"{taps} taps weighted and summed per "
                        "output element; the source indices and weights (per row or column) not counted.")


@formula(*(f"aten::{name}_backward" for name in INTERPOLATION_TAPS))
def upsample_backward(call: OpCall) -> Cost | None:
    n = _numel(call, "grad_output")
    if n is None:
        return None
    taps = INTERPOLATION_TAPS[call.op.split("::")[-1].split(".")[0].removesuffix("_backward")]
    return _per_element(n, 2 * taps, "upsample backward", f"each gradient element weighted and added into its "
                        f"{taps} source elements; the zero fill 0 FLOPs.")


@formula("aten::upsample_nearest1d_backward", "aten::upsample_nearest2d_backward", "aten::upsample_nearest3d_backward",
         "aten::_upsample_nearest_exact1d_backward", "aten::_upsample_nearest_exact2d_backward",
         "aten::_upsample_nearest_exact3d_backward", "aten::reflection_pad1d_backward",
         "aten::reflection_pad2d_backward", "aten::reflection_pad3d_backward", "aten::replication_pad1d_backward",
         "aten::replication_pad2d_backward", "aten::replication_pad3d_backward", "aten::unfold_backward")
def add_back_backward(call: OpCall) -> Cost | None:
    """Backward of an op that copies input elements to one or more places: each gradient element is added
    into the element it was copied from."""
    g = tensor(call, "grad_output") or tensor(call, "grad_in")
    if g is None:
        return None
    return _per_element(g.numel, 1, "scatter-add", "one add per gradient element into its source; the zero "
                        "fill 0 FLOPs; the forward's input (padding) not read.", _unread(call, "self"))


# Copies: 0 FLOPs, the bytes of what they read and write are the work.
_COPY_NOTE = "NB: data movement only: 0 FLOPs."


@formula("aten::reflection_pad1d", "aten::reflection_pad2d", "aten::reflection_pad3d", "aten::replication_pad1d",
         "aten::replication_pad2d", "aten::replication_pad3d")
def pad(call: OpCall) -> Cost:
    return Cost(0.0, "rule:copy", _COPY_NOTE)


@formula("aten::select_backward", "aten::slice_backward", "aten::diagonal_backward")
def view_backward(call: OpCall) -> Cost:
    """The gradient of a view: zeros of the input's size with grad_output copied into the view's place."""
    return Cost(0.0, "rule:copy", "NB: data movement only: 0 FLOPs; the whole gradient written (the zeros "
                "included), grad_output read.")


# -- backwards of activations torch does not tag pointwise (their forwards: capture/formulas_untagged.py) -----

# FLOPs per element (of the output; of grad_output for glu_backward, of self for _prelu_kernel_backward).
UNTAGGED_POINTWISE_FLOPS: dict[str, int] = {
    "hardswish_backward": 5,  # two compares, x / 3 + 0.5 (mul, add), times grad
    "hardsigmoid_backward": 3,  # two compares, grad / 6
    "hardtanh_backward": 2,  # two compares (grad kept inside (min, max))
    "leaky_relu_backward": 2,  # compare, times the slope
    "elu_backward": 4,  # compare, grad x (result + alpha x scale) or grad x scale
    "softplus_backward": 6,  # z = exp(beta x): mul, exp; grad z / (z + 1): add, div, mul; the threshold compare
    "log_sigmoid_backward": 5,  # the sigmoid from the saved buffer (add, div), sub, compare, times grad
    "_prelu_kernel_backward": 4,  # the input's gradient (compare, mul), the weight's (mul, add)
    "glu": POINTWISE_FLOPS["sigmoid"] + 1,  # a x sigmoid(b), per output element
    "glu_backward": POINTWISE_FLOPS["sigmoid"] + 5,  # sigmoid(b), grad sigmoid(b), grad a s (1 - s): 1 + 4
}


@formula(*(f"aten::{name}" for name in UNTAGGED_POINTWISE_FLOPS))
def untagged_pointwise(call: OpCall) -> Cost | None:
    name = call.op.split("::")[-1].split(".")[0]
    if name == "glu_backward":
        n = _numel(call, "grad_output")
    elif name == "_prelu_kernel_backward":
        n = _numel(call, "self")
    else:
        n = _out_numel(call) if call.outputs else None
    if n is None:
        return None
    return _per_element(n, UNTAGGED_POINTWISE_FLOPS[name], "pointwise", "transcendentals count 1 (torch does not "
                        "tag the op pointwise).")


# -- dropout (the other random draws: capture/formulas_untagged.py) ----------------------------------------

_RNG_NOTE = "the generator's integer arithmetic (Philox) not counted"


@formula("aten::bernoulli_", "aten::bernoulli")
def bernoulli(call: OpCall) -> Cost | None:
    """One compare per element (a uniform draw against p). The in-place draw, and bernoulli.p's `self`, give
    only the shape: written, not read; bernoulli(self)'s `self` is the probabilities, read."""
    name = call.op.split("::")[-1]
    n = _numel(call, "self")
    if n is None:
        return None
    shape_only = name.startswith("bernoulli_") or name == "bernoulli.p"
    return _per_element(n, 1, "random", f"the compare of a uniform draw against p; {_RNG_NOTE}.",
                        _unread(call, "self") if shape_only else frozenset())


@formula("aten::native_dropout", "aten::_fused_dropout")
def dropout(call: OpCall) -> Cost | None:
    """Training: mask = uniform < keep (a compare), out = x x mask x scale (two muls); writes out and the mask.
    Evaluation (train False): a copy, and a mask of ones."""
    x = tensor(call, "input") or tensor(call, "self")
    if x is None:
        return None
    n = x.numel
    if call.args.get("train", True) is False:
        return Cost(0.0, "rule:copy", "NB: dropout in evaluation: a copy (and a mask of ones), 0 FLOPs.")
    return _per_element(n, 3, "dropout", f"compare, times the mask, times the scale; {_RNG_NOTE}.")


@formula("aten::native_dropout_backward", "aten::_masked_scale")
def dropout_backward(call: OpCall) -> Cost | None:
    n = _out_numel(call) if call.outputs else None
    return None if n is None else _per_element(n, 2, "dropout", "times the mask, times the scale.")


# -- embedding bags ---------------------------------------------------------------------------------------

@formula("aten::_embedding_bag", "aten::_embedding_bag_forward_only")
def embedding_bag(call: OpCall) -> Cost | None:
    """Each index gathers a row of the table and adds it into its bag (sum, mean) or compares (max); the
    table is read only where indices point (at most the table)."""
    w, idx = tensor(call, "weight"), tensor(call, "indices")
    if w is None or idx is None or len(w.shape) != 2:
        return None
    gathered = idx.numel * w.shape[1]
    per = 1 + (tensor(call, "per_sample_weights") is not None)
    i = _index(call, "weight")
    return Cost(float(per * gathered), "rule:embedding_bag", f"NB: {per} FLOP(s) per gathered element (the add "
                "or max into its bag, a per-sample weight's mul); the mean's division per bag not counted; "
                "repeated indices read each time.",
                read_bytes={i: float(min(gathered * w.itemsize, w.nbytes))} if i is not None else {})


@formula("aten::_embedding_bag_backward", "aten::_embedding_bag_dense_backward")
def embedding_bag_backward(call: OpCall) -> Cost | None:
    g, idx = tensor(call, "grad"), tensor(call, "indices")
    if g is None or idx is None or len(g.shape) != 2:
        return None
    return _per_element(idx.numel * g.shape[1], 1, "scatter-add", "one add per gathered element into the "
                        "table's gradient; the zero fill 0 FLOPs.")


# -- recurrent layers -------------------------------------------------------------------------------------

# FLOPs per hidden unit and step of a cell's pointwise part, by its number of gates, after the matrix
# products (biases apart: one add per bias element and step):
# LSTM (4): the 4 gate sums (ih + hh); i, f, o sigmoids (4 each), g and c tanh (1 each); c = f c + i g (3);
#   h = o tanh(c) (1): 4 + 12 + 2 + 3 + 1 = 22.
# GRU (3): r and z sums (2) and sigmoids (8); n = tanh(i_n + r h_n) (3); h = n + z (h - n) (3): 16.
# RNN (1): the sum and tanh or relu: 2.
CELL_FLOPS = {4: 22, 3: 16, 1: 2}
RNN_NOTE = ("NB: the gate matrix products, 2 FLOPs per weight-matrix element and row (2 x rows x (I + H) x gates x H "
            "per layer and direction; rows = steps x batch); the cells' pointwise work ({cell}) and bias adds in "
            "extra_flops; inter-layer dropout not counted.")


def _layers(weights: list[Any], stride: int, has_biases: bool) -> list[tuple[list[TensorMeta], list[TensorMeta]]]:
    """(matrices, biases) of each layer and direction of a flat weight list (w_ih, w_hh[, b_ih, b_hh][, w_hr])."""
    ws = [w for w in weights if isinstance(w, TensorMeta)]
    if stride < 2 or not ws or len(ws) % stride:
        raise ValueError(f"{len(ws)} weights do not split into layers of {stride}")
    out = []
    for i in range(0, len(ws), stride):
        chunk = ws[i:i + stride]
        out.append(([w for w in chunk if len(w.shape) == 2], [w for w in chunk if len(w.shape) == 1] if has_biases
                    else []))
    return out


def rnn_layers_cost(rows: int, hidden: int, layers: list[tuple[list[TensorMeta], list[TensorMeta]]],
                    backward: bool = False, weight_grads: bool = True) -> Cost:
    """Each weight matrix multiplies every row once (2 FLOPs per weight element and row); the forward's
    cell pointwise work and bias adds in extra_flops. The backward: the data gradient's products (as many as
    the forward's) and the weight gradient's (as many again, when asked for); its pointwise work counted
    as twice the forward cell's, plus one add per bias-gradient element and row."""
    matmul = 0.0
    extra = 0.0
    cells = set()
    for matrices, biases in layers:
        if not matrices or hidden < 1:
            raise ValueError("no weight matrices")
        gates = matrices[0].shape[0] // hidden
        if gates not in CELL_FLOPS:
            raise ValueError(f"{gates} gates")
        cells.add(gates)
        matmul += 2.0 * rows * sum(m.numel for m in matrices)
        extra += rows * (hidden * CELL_FLOPS[gates] * (2 if backward else 1) + sum(b.numel for b in biases))
    if backward:
        matmul *= 2 if weight_grads else 1
    cell = ", ".join(f"{CELL_FLOPS[g]} per hidden unit and step" for g in sorted(cells))
    note = RNN_NOTE.format(cell=cell)
    if backward:
        note += (" Backward: the data and weight gradients' products (twice the forward's), the pointwise part "
                 "as twice the forward cell's.")
    return rule(matmul, "rnn backward" if backward else "rnn", note, matmul, True, extra_flops=extra)


def _rows(x: TensorMeta | None) -> int:
    if x is None or not x.shape or x.shape[-1] < 1:
        raise ValueError("no input")
    return x.numel // x.shape[-1]


@formula("aten::_cudnn_rnn", "aten::miopen_rnn")
def cudnn_rnn(call: OpCall) -> Cost | None:
    """A whole multi-layer (bidirectional) RNN: cuDNN's and MIOpen's, and the analytic record of
    torch.nn.LSTM / GRU / RNN (capture/whole_rnn.py). rows = steps x batch (a packed sequence's rows)."""
    weights = call.args.get("weight")
    if not isinstance(weights, (list, tuple)) or not weights:
        return None
    stride = int(arg(call, "weight_stride0", 0))
    layers = _layers(list(weights), stride, any(len(w.shape) == 1 for w in weights if isinstance(w, TensorMeta)))
    return rnn_layers_cost(_rows(tensor(call, "input")), int(arg(call, "hidden_size", 0)), layers)


@formula("aten::_cudnn_rnn_backward", "aten::miopen_rnn_backward")
def cudnn_rnn_backward(call: OpCall) -> Cost | None:
    weights = call.args.get("weight")
    if not isinstance(weights, (list, tuple)) or not weights:
        return None
    stride = int(arg(call, "weight_stride0", 0))
    layers = _layers(list(weights), stride, any(len(w.shape) == 1 for w in weights if isinstance(w, TensorMeta)))
    mask = list(arg(call, "output_mask", [True] * 4))
    return rnn_layers_cost(_rows(tensor(call, "input")), int(arg(call, "hidden_size", 0)), layers, backward=True,
                           weight_grads=bool(mask[3]) if len(mask) > 3 else True)


@formula("aten::mkldnn_rnn_layer")
def mkldnn_rnn_layer(call: OpCall) -> Cost | None:
    """oneDNN's layer (the CPU's LSTM): one layer, one direction; weight0/1 the matrices, weight2/3 the biases."""
    names = ("weight0", "weight1", "weight2", "weight3")
    return _mkldnn(call, names, backward=False)


@formula("aten::mkldnn_rnn_layer_backward")
def mkldnn_rnn_layer_backward(call: OpCall) -> Cost | None:
    return _mkldnn(call, ("weight1", "weight2", "weight3", "weight4"), backward=True)


def _mkldnn(call: OpCall, names: tuple[str, ...], backward: bool) -> Cost | None:
    ws = [tensor(call, n) for n in names]
    if ws[0] is None or ws[1] is None:
        return None
    biases = [w for w in ws[2:] if w is not None] if arg(call, "has_biases", True) else []
    layers = [([ws[0], ws[1]], biases)]
    return rnn_layers_cost(_rows(tensor(call, "input")), int(arg(call, "hidden_size", 0)), layers, backward)


def _cell_cost(units: int, gates: int, bias_elements: int, backward: bool) -> Cost:
    per = CELL_FLOPS[gates] * (2 if backward else 1)
    return rule(units * per + bias_elements, "rnn cell backward" if backward else "rnn cell",
                f"NB: the cell's pointwise work only, {per} FLOPs per hidden unit (the gate matrix products are "
                "separate mm calls); one add per bias element and row." + (" Backward: twice the forward's." if
                                                                         backward else ""))


# A fused cell's gates per hidden unit (its input_gates' last dimension is gates x hidden).
CELL_GATES = {"aten::_thnn_fused_lstm_cell": 4, "aten::_thnn_fused_gru_cell": 3}


@formula(*CELL_GATES)
def fused_cell(call: OpCall) -> Cost | None:
    g = tensor(call, "input_gates")
    if g is None:
        return None
    gates = CELL_GATES[call.op.split(".")[0]]
    biases = sum(t.numel for t in (tensor(call, "input_bias"), tensor(call, "hidden_bias")) if t is not None)
    rows = g.numel // g.shape[-1] if g.shape and g.shape[-1] else 0
    return _cell_cost(g.numel // gates, gates, rows * biases, backward=False)


@formula("aten::_thnn_fused_lstm_cell_backward_impl")
def fused_lstm_cell_backward(call: OpCall) -> Cost | None:
    """(_thnn_fused_lstm_cell_backward is composite: this is what it runs.)"""
    cx = tensor(call, "cx")
    if cx is None:
        return None
    bias = 4 * cx.numel if arg(call, "has_bias", False) else 0  # the gate gradients summed over rows (both biases')
    return _cell_cost(cx.numel, 4, bias, backward=True)


@formula("aten::_thnn_fused_gru_cell_backward")
def fused_gru_cell_backward(call: OpCall) -> Cost | None:
    g = tensor(call, "grad_hy")
    if g is None:
        return None
    bias = 2 * 3 * g.numel if arg(call, "has_bias", False) else 0  # input and hidden gate gradients summed over rows
    return _cell_cost(g.numel, 3, bias, backward=True)


# -- gradient scaling (torch.amp.GradScaler) -------------------------------------------------------------------

@formula("aten::_amp_foreach_non_finite_check_and_unscale_")
def amp_unscale(call: OpCall) -> Cost:
    """Each gradient multiplied by 1/scale in place, with an isfinite check per element that sets found_inf."""
    grads = call.args.get("self")
    numel = sum(t.numel for t in grads if isinstance(t, TensorMeta)) if isinstance(grads, (list, tuple)) else 0
    return _per_element(numel, 2, "amp", "the isfinite check and the multiply by 1/scale, per gradient element.")


@formula("aten::_amp_update_scale_")
def amp_update_scale(call: OpCall) -> Cost:
    """The scale and its growth tracker updated from found_inf: a few scalar operations."""
    return rule(0, "amp", "NB: scalar updates of the scale and its growth tracker: 0 FLOPs counted.")
