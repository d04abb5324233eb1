"""Elementwise ops and activations that launch a kernel but that torch does not tag `pointwise` (so the generic
rule of capture/cost.py misses them): in-place twins of pointwise ops (`abs_`, `gelu_`, `threshold_`,
`masked_fill_`, the in-place compares), activations (`hardswish`, `_prelu_kernel`, `log_sigmoid_forward`),
in-place scans, functional fills and copies, and random draws.

Each is counted like the pointwise rule: output elements x FLOPs per element (`registry.POINTWISE_FLOPS`, the
catalog's counts; `UNTAGGED_FLOPS` for the ones it does not list; 1 otherwise), bytes from the call's tensors.
Random draws count 0 FLOPs (the generator's integer work) and read no input they only take the shape of.
tests/test_capture_models.py walks torch's aten ops and lists any elementwise op still without a count.
"""

from __future__ import annotations

import math

from roofline.capture.registry import (
    POINTWISE_FLOPS,
    Cost,
    arg,
    formula,
    pointwise_cost,
    reduction_cost,
    rule,
    tensor,
)
from roofline.capture.trace import OpCall

# In-place twins whose out-of-place op torch tags pointwise, and pointwise functions it leaves untagged.
UNTAGGED_POINTWISE = (
    "abs_", "copysign_", "eq_", "ne_", "ge_", "gt_", "le_", "lt_", "gcd_", "lcm_", "heaviside_", "gelu_", "mish_",
    "threshold_", "true_divide_", "xlogy_", "masked_fill", "masked_fill_", "hardswish", "hardswish_",
    "floor_divide", "floor_divide_")
# FLOPs per output element of the untagged functions registry.POINTWISE_FLOPS does not list.
UNTAGGED_FLOPS: dict[str, int] = {
    "_prelu_kernel": 2,  # compare, multiply
    "log_sigmoid_forward": 6,  # min(x, 0) - log1p(exp(-|x|)), as torch computes it: abs, neg, exp, log1p, min, sub
    "_add_relu": 2,  # add, max
    "quantize_per_tensor": 3,  # scale, round, clamp
    "renorm": 3,  # square and sum per slice, scale
    "rsub": 1,  # other - alpha * self (alpha's multiply below)
}


def _elementwise(call: OpCall, per: int, note: str = "") -> Cost:
    numel = max((t.numel for t in call.outputs), default=0)
    return rule(per * numel, "pointwise", f"NB: {per} FLOP(s) per output element{note}; transcendentals count 1.")


@formula(*(f"aten::{name}" for name in UNTAGGED_POINTWISE))
def untagged_pointwise(call: OpCall) -> Cost | None:
    """The pointwise rule, as for the tagged ops (gelu_ is the catalog's gelu)."""
    return pointwise_cost(call)


@formula("aten::isin.Tensor_Scalar")
def isin_scalar(call: OpCall) -> Cost | None:
    return _elementwise(call, 1, " (a compare)")


@formula("aten::_prelu_kernel", "aten::log_sigmoid_forward", "aten::quantize_per_tensor", "aten::renorm",
         "aten::renorm_", "aten::_add_relu", "aten::_add_relu_")
def untagged_activation(call: OpCall) -> Cost | None:
    name = call.op.split("::")[-1].split(".")[0].rstrip("_")
    return _elementwise(call, UNTAGGED_FLOPS[name] + (1 if arg(call, "alpha", 1) != 1 else 0))


@formula("aten::rsub")
def rsub(call: OpCall) -> Cost | None:
    return _elementwise(call, POINTWISE_FLOPS.get("sub", 1) + (1 if arg(call, "alpha", 1) != 1 else 0))


@formula("aten::cumsum_", "aten::cumprod_", "aten::logcumsumexp")
def scan(call: OpCall) -> Cost | None:
    """In-place scans as the reduction rule (1 per element); logcumsumexp 4 (max, sub, exp, log-add)."""
    if call.op.startswith("aten::logcumsumexp"):
        return _elementwise(call, 4, " of the scan")
    return reduction_cost(call)


# -- copies and fills the copy rule (registry.COPIES) does not list ---------------------------------------------

_FILLS = ("fill", "zero", "copy")  # functional fill_/zero_/copy_: self's shape only is read (copy reads src)


@formula(*(f"aten::{n}" for n in _FILLS), "aten::squeeze_copy", "aten::diagonal_scatter", "aten::complex",
         "aten::index_fill", "aten::index_fill_", "aten::masked_select", "aten::one_hot")
def more_copies(call: OpCall) -> Cost | None:
    name = call.op.split("::")[-1].split(".")[0]
    self_ = tensor(call, "self")
    unread = frozenset(i for i, t in enumerate(call.inputs) if t is self_) if name in _FILLS else frozenset()
    return Cost(0.0, "rule:copy", "NB: data movement only: 0 FLOPs; a partial write counts the whole output.",
                unread=unread)


# -- random draws ---------------------------------------------------------------------------------------------

# Draws whose `self` gives only the shape (in-place fills, *_like, the functional twins of the fills).
SHAPE_ONLY = frozenset({
    "uniform_", "normal_", "cauchy_", "exponential_", "geometric_", "log_normal_", "random_",
    "uniform", "cauchy", "exponential", "geometric", "log_normal", "random", "normal_functional", "rand_like",
    "randn_like", "randint_like"})
# Draws that read their tensor arguments (probabilities, rates, means).
# (bernoulli, dropout's draw: a compare per element, capture/formulas_training.py)
READS = frozenset({"poisson", "_standard_gamma", "normal", "binomial", "_sample_dirichlet",
                   "multinomial"})
# Factories: no tensor input.
FACTORIES = frozenset({"rand", "randn", "randint", "randperm"})


@formula(*(f"aten::{n}" for n in sorted(SHAPE_ONLY | READS | FACTORIES)))
def random_draw(call: OpCall) -> Cost | None:
    name = call.op.split("::")[-1].split(".")[0]
    self_ = tensor(call, "self")
    shape_only = name in SHAPE_ONLY
    unread = frozenset(i for i, t in enumerate(call.inputs) if t is self_) if shape_only else frozenset()
    return Cost(0.0, "rule:random", "NB: random draws: 0 FLOPs (the generator's integer work); the output "
                "written" + (", self's shape only read." if shape_only else ", its parameters read."), unread=unread)


@formula("aten::isin.Tensor_Tensor")
def isin(call: OpCall) -> Cost | None:
    elements, test = tensor(call, "elements"), tensor(call, "test_elements")
    if elements is None or test is None:
        return None
    per = max(1, math.ceil(math.log2(test.numel))) if test.numel > 1 else 1
    return rule(per * elements.numel, "search", f"NB: a binary search of the sorted test elements, {per} compares "
                "per element; their sort not counted.")


@formula("aten::rrelu_with_noise", "aten::rrelu_with_noise_")
def rrelu(call: OpCall) -> Cost | None:
    """RReLU: a compare and a multiply per element (training also draws each negative slope, into `noise`)."""
    return _elementwise(call, 2, " (compare, multiply; the training's slope draws not counted)")
