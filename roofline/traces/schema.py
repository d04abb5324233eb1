"""An op event of a trace as torch's operator: its overload, found from the argument types the profiler wrote, and
its recorded arguments rebuilt as meta tensors and Python values, so the profile's tracer describes the call as
it describes a live one (traces/calls.py).

The profiler names an op without its overload ("aten::add") and writes one entry per schema argument: a tensor's
dims, strides and dtype name, a scalar's text ("Concrete Inputs"), "" for what it does not record (None, a string,
a device, a process group). The overload is the one whose schema has that many arguments and takes each
recorded kind (`fits`). What is lost: a string argument (gelu's approximate: its default read), a tensor list's
dtype (`LIST_DTYPE`: the caller's guess), which tensors shared a storage (each argument is a tensor of its own).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Sequence
from typing import Any

import torch

from roofline.traces.model import Signature

# The profiler's dtype names (caffe2's TypeMeta names) -> torch dtypes.
DTYPES: dict[str, torch.dtype] = {
    "float": torch.float32, "double": torch.float64, "c10::Half": torch.float16, "c10::BFloat16": torch.bfloat16,
    "long int": torch.int64, "long": torch.int64, "int": torch.int32, "short int": torch.int16, "short": torch.int16,
    "signed char": torch.int8, "unsigned char": torch.uint8, "bool": torch.bool,
    "c10::complex<float>": torch.complex64, "c10::complex<double>": torch.complex128,
    "c10::complex<c10::Half>": torch.complex32, "c10::Float8_e4m3fn": torch.float8_e4m3fn,
    "c10::Float8_e5m2": torch.float8_e5m2, "c10::Float8_e4m3fnuz": torch.float8_e4m3fnuz,
    "c10::Float8_e5m2fnuz": torch.float8_e5m2fnuz, "unsigned short": torch.uint16, "unsigned int": torch.uint32,
}
# record_param_comms' dtype names (c10's ScalarType names) -> torch dtypes.
COMM_DTYPES: dict[str, torch.dtype] = {
    "Float": torch.float32, "Double": torch.float64, "Half": torch.float16, "BFloat16": torch.bfloat16,
    "Long": torch.int64, "Int": torch.int32, "Short": torch.int16, "Char": torch.int8, "Byte": torch.uint8,
    "Bool": torch.bool, "Float8_e4m3fn": torch.float8_e4m3fn, "Float8_e5m2": torch.float8_e5m2}
# c10's ScalarType codes, as a dtype argument's concrete value writes them ("6": float32).
SCALAR_TYPES: dict[int, torch.dtype] = {
    0: torch.uint8, 1: torch.int8, 2: torch.int16, 3: torch.int32, 4: torch.int64, 5: torch.float16,
    6: torch.float32, 7: torch.float64, 8: torch.complex32, 9: torch.complex64, 10: torch.complex128,
    11: torch.bool, 15: torch.bfloat16, 23: torch.float8_e5m2, 24: torch.float8_e4m3fn}
TENSOR_LIST, SCALAR, SCALAR_LIST, GENERIC_LIST, UNRECORDED = "TensorList", "Scalar", "ScalarList", "GenericList", ""
# A Python number passed where a tensor goes (x.mul_(0.9)) reaches the profiler as a 0-dim tensor of these dtypes,
# and torch's dispatch modes (the profile's tracer) as the number: rebuilt as a number (its value is not recorded).
WRAPPED_NUMBERS = {"double": 1.0, "long int": 1, "c10::complex<double>": 1.0}
DTYPE_ARGS = frozenset({"dtype", "out_dtype"})  # ScalarType arguments (an int in the schema's Python types)
META = torch.device("meta")
PLAIN = frozenset({"int", "float", "bool", "number", "str"})  # types a value of which the profiler would write
_OPTIONAL = re.compile(r"^Optional\[(.*)\]$")


class NotRebuilt(Exception):
    """The recorded arguments cannot be rebuilt for this overload (a string without default, a bad text)."""


def _base(type_str: str) -> tuple[str, bool]:
    m = _OPTIONAL.match(type_str)
    return (m.group(1), True) if m else (type_str, False)


def _fits(arg: Any, recorded: str, dims: Any) -> bool:
    """Whether a schema argument takes what the profiler recorded for it."""
    base, optional = _base(str(arg.type))
    if recorded in DTYPES:
        return base == "Tensor"
    if recorded == TENSOR_LIST:
        return base in ("List[Tensor]", "List[Optional[Tensor]]")
    if recorded == SCALAR:
        return base in ("number", "int", "float", "bool", "SymInt", "complex", "Scalar") or base.startswith("Union")
    if recorded in (SCALAR_LIST, GENERIC_LIST):
        return base.startswith("List[") and "Tensor" not in base
    if recorded == UNRECORDED:
        return base != "Tensor" or optional
    return False


@functools.cache
def packet_of(name: str) -> Any:
    """torch's OpOverloadPacket of 'ns::op' (None when torch has no such op: another library's, not loaded)."""
    ns, sep, op = name.partition("::")
    if not sep or not ns.isidentifier() or not op.isidentifier():
        return None
    try:
        return getattr(getattr(torch.ops, ns), op)
    except (AttributeError, RuntimeError):
        return None


def overload(name: str, sig: Signature | None) -> Any:
    """The overload of op `name` the recorded arguments fit (module docstring); without a signature the
    default one (or the first); None when torch has no such op or no overload fits."""
    packet = packet_of(name)
    if packet is None:
        return None
    names = packet.overloads()
    if sig is None:  # the first overload on tensors (aten::add.default adds two numbers: TorchScript's)
        funcs = [getattr(packet, ov) for ov in sorted(names, key=lambda ov: ov != "default")]
        on_tensors = [f for f in funcs if f._schema.arguments and str(f._schema.arguments[0].type) == "Tensor"]
        return (on_tensors or funcs or [None])[0]
    types = list(sig.types)
    dims = list(sig.dims)
    for ov in names:
        func = getattr(packet, ov)
        schema_args = func._schema.arguments
        if len(schema_args) == len(types) and all(
                _fits(a, t, d) for a, t, d in zip(schema_args, types, dims, strict=True)):
            return func
    return None


def _scalar(text: Any, arg: Any) -> Any:
    """A scalar argument's value from its recorded text, as the schema types it."""
    if not isinstance(text, str) or text == "":
        if arg.has_default_value():
            return arg.default_value
        _, optional = _base(str(arg.type))
        if optional:
            return None
        raise NotRebuilt(f"{arg.name}: not recorded")
    try:
        value = ast.literal_eval(text.replace("inf", "1e999").replace("nan", "0.0"))
    except (ValueError, SyntaxError):
        raise NotRebuilt(f"{arg.name}: {text!r}") from None
    if arg.name in DTYPE_ARGS and isinstance(value, int):
        return SCALAR_TYPES.get(value, torch.float32)
    if arg.name == "layout":
        return torch.strided
    if arg.name == "memory_format":
        return None
    base, _ = _base(str(arg.type))
    if base == "float" and isinstance(value, int):
        return float(value)
    if base == "int" and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _tensor(dims: Any, strides: Any, dtype: torch.dtype) -> torch.Tensor:
    shape = [int(d) for d in dims]
    st = [int(s) for s in strides] if isinstance(strides, list) and len(strides) == len(shape) else None
    if st is None:
        return torch.empty(shape, dtype=dtype, device=META)
    return torch.empty_strided(shape, st, dtype=dtype, device=META)


def arguments(func: Any, sig: Signature, list_dtype: torch.dtype) -> tuple[list[Any], dict[str, Any]]:
    """The call's positional and keyword-only arguments: tensors as meta tensors of the recorded dims, strides
    and dtype (a list's of `list_dtype`), scalars as values, devices as the meta device."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    strides: Sequence[Any] = sig.strides or [None] * len(sig.types)
    concrete: Sequence[Any] = sig.concrete or [""] * len(sig.types)
    for arg, kind, dims, st, text in zip(func._schema.arguments, sig.types, sig.dims, strides, concrete,
                                         strict=False):
        base, _ = _base(str(arg.type))
        if kind in WRAPPED_NUMBERS and dims == []:
            value: Any = WRAPPED_NUMBERS[kind]
        elif kind in DTYPES:
            value = _tensor(dims, st, DTYPES[kind])
        elif kind == TENSOR_LIST:
            value = [_tensor(d, s if isinstance(st, list) else None, list_dtype)
                     for d, s in zip(dims, st if isinstance(st, list) else [None] * len(dims), strict=False)]
        elif base == "Device" or arg.name == "device":
            value = META
        elif kind == UNRECORDED and base not in PLAIN and not arg.has_default_value():
            value = None
        else:
            value = _scalar(text, arg)
        if arg.kwarg_only:
            kwargs[arg.name] = value
        else:
            args.append(value)
    return args, kwargs
