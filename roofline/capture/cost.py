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

Formulas are pure functions of the call's shapes and arguments, so a lookup is cached by the call's signature
(`signature`: the op, every argument with tensors as their metadata less the storage key, the result's
structure, the formulas' `settings`): a model's repeated layers look their formulas up once. Calls whose
count reads more than that (tensor values, a process group, a fused kernel's launch) are not cached.
"""

from __future__ import annotations

from typing import Any

import torch

# Importing the families registers their formulas.
from roofline.capture import comm as _comm  # noqa: F401
from roofline.capture import formulas as _formulas  # noqa: F401
from roofline.capture import formulas_models as _formulas_models
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
from roofline.capture.trace import OpCall, TensorMeta
from roofline.core.aten_names import is_aten, is_fused, op_name, packet
from roofline.core.errors import RooflineError

# Cached costs by call signature, for the process; emptied when it holds this many (a bound on its memory: one
# entry per distinct (op, shapes, arguments), a few thousand for a large model).
CACHE_ENTRIES = 50_000
_CACHE: dict[tuple[Any, ...], Cost] = {}
# Argument types a signature holds as they are (hashable, compared by value; the type is part of the key, so
# True and 1 differ).
_PLAIN = (int, float, bool, str, type(None), torch.dtype, torch.device, torch.layout, torch.memory_format)


def _sig(value: Any) -> Any:
    """A hashable stand-in for an argument: a tensor's metadata less its storage key; raises TypeError for an
    argument it cannot stand for (the call is then not cached)."""
    if isinstance(value, TensorMeta):
        return (value.shape, value.dtype, value.device, value.offset, value.strides, value.itemsize,
                value.storage_nbytes, value.is_param, value.is_float)
    if isinstance(value, _PLAIN):
        return type(value), value
    if isinstance(value, (tuple, list)):
        return type(value), tuple(_sig(v) for v in value)
    raise TypeError(type(value).__name__)


def settings() -> tuple[Any, ...]:
    """The formulas' settings a user may change between lookups (the assumed MoE routing without data), part
    of every signature."""
    routing = _formulas_models.ROUTING
    return (routing if isinstance(routing, str) else tuple(routing),)


def signature(call: OpCall) -> tuple[Any, ...] | None:
    """What a formula may read of a call (its cache key), or None when the call is not cacheable."""
    if call.values or call.group is not None or is_fused(call.op):
        return None
    try:
        return (call.op, len(call.raw_args), tuple((k, _sig(v)) for k, v in call.args.items()), _sig(call.out_tree),
                *settings())
    except TypeError:
        return None


def cost_of(call: OpCall, cache: bool = True) -> Cost:
    """The FLOPs of one call (module docstring), looked up once per signature unless `cache` is False."""
    key = signature(call) if cache else None
    if key is None:
        return _lookup(call)
    found = _CACHE.get(key)
    if found is None:
        if len(_CACHE) >= CACHE_ENTRIES:
            _CACHE.clear()
        found = _CACHE[key] = _lookup(call)
    return found


def _lookup(call: OpCall) -> Cost:
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
