"""The FLOPs of one recorded aten operator call: the lookup over the registry (capture/registry.py) and the
formula families that fill it (capture/formulas.py, capture/formulas_training.py, capture/formulas_models.py,
capture/formulas_untagged.py, capture/comm.py, capture/inductor.py).

Order of lookup (`cost_of`; a torch.compile'd kernel, "fused: ...", sums the rules of the ops it fused:
capture/inductor.py):
1. a formula registered for the overload ("aten::add.Tensor") or its packet ("aten::add");
2. copies and fills (0 FLOPs: data movement only);
3. pointwise ops (torch's `pointwise` tag): output elements x FLOPs per element (`POINTWISE_FLOPS`,
   the catalog's `FLOPS_PER_ELEMENT` where it has the function; default 1);
4. reductions (the `reduction` tag): input elements x FLOPs per element (`REDUCTION_FLOPS`, default 1);
5. torch.utils.flop_counter's formula for the op (backward convolutions and attention, ...);
6. none: flops None (listed with its time, never counted as 0).
"""

from __future__ import annotations

# Importing the families registers their formulas.
from roofline.capture import comm as _comm  # noqa: F401
from roofline.capture import formulas as _formulas  # noqa: F401
from roofline.capture import formulas_models as _formulas_models  # noqa: F401
from roofline.capture import formulas_training as _formulas_training  # noqa: F401
from roofline.capture import formulas_untagged as _formulas_untagged  # noqa: F401
from roofline.capture import inductor as _inductor
from roofline.capture.registry import (
    COPIES,
    FORMULAS,
    UNTAGGED_REDUCTIONS,
    Cost,
    copy_cost,
    foreach_cost,
    none,
    pointwise_cost,
    reduction_cost,
    torch_cost,
)
from roofline.capture.trace import OpCall
from roofline.core.aten_names import is_aten, is_fused, op_name, packet
from roofline.core.errors import RooflineError


def cost_of(call: OpCall) -> Cost:
    """The FLOPs of one call (see the module docstring for the order of lookup)."""
    if is_fused(call.op):
        return _inductor.fused_cost(call)
    fn = FORMULAS.get(call.op) or FORMULAS.get(packet(call.op))
    if fn is not None:
        try:
            found = fn(call)
        except (ValueError, IndexError, TypeError, KeyError, ZeroDivisionError, RooflineError) as exc:
            # arguments the formula does not expect: listed without a count (and why), never a crash
            return none(f"NB: the {call.op} formula failed on these arguments ({type(exc).__name__}: {exc}).")
        if found is not None:
            return found
    name = op_name(call.op)
    if is_aten(call.op) and name in COPIES:
        return copy_cost(call)
    if name.startswith("_foreach_"):
        return foreach_cost(call, name)
    if "pointwise" in call.tags:
        return pointwise_cost(call)
    if "reduction" in call.tags or name in UNTAGGED_REDUCTIONS:
        return reduction_cost(call)
    return torch_cost(call) or none()
