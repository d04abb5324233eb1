"""Inductor's Triton kernels (torch.compile'd code) as op calls: each launch attributed to the aten ops it fused.

What the profiler gives (torch/_inductor/runtime/triton_heuristics.py `_pre_launch`): while it runs, each
Triton launch is a CPU op named after the kernel (`triton_poi_fused_mul_silu_0`), with the launch's arguments
(tensors: shapes; sizes: values; record_shapes on) and keyword values `kernel_file` (the generated source)
and `kernel_backend: "triton"`; the device kernel is tied to that op. From them:
- the fused aten ops: the kernel name (config.triton.descriptive_names = "original_aten": the op names of
  the aten ops before decomposition, sorted, unique, joined by "_", between `triton_<kind>_fused_` and `_<n>`),
  split against torch's aten op names;
- which arguments are read and written: the kernel's parameters in its source (`in_ptrN` read, `out_ptrN`
  written, `in_out_ptrN` both), their dtypes (`triton_meta`'s signature, '*bf16'), its sizes (`xnumel`,
  `r0_numel`, static ones written in the body);
- FLOPs: our element-count rules (capture/registry.py) for each fused op over the kernel's elements (xnumel of a
  pointwise kernel, xnumel x r0_numel inputs of a reduction); norms and softmax by their per-element and
  per-row counts; bytes: every tensor argument read plus every one written (in_out both).
A launch whose source, arguments or ops cannot be read stays an unattributed kernel (its time counted, the
coverage says so).

NB: a tensor argument counts its whole shape (a broadcast weight read once per launch); a norm split over
two kernels counts its per-element work in each; arguments are not matched to the eager ops' storages (no
dataflow edges to or from a fused kernel).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline.capture.registry import (
    COPIES,
    POINTWISE_FLOPS,
    REDUCTION_FLOPS,
    UNTAGGED_REDUCTIONS,
    Cost,
    none,
    rule,
)
from roofline.capture.trace import OpCall, TensorMeta
from roofline.core.aten_names import fused_name, is_aten, op_name
from roofline.ops.norm import FLOPS_PER_ELEMENT_OF, FLOPS_PER_ROW_OF
from roofline.ops.softmax import SOFTMAX_FLOPS_PER_ELEMENT

KERNEL_NAME = re.compile(r"^triton_(?P<kind>[a-z]+)_fused_(?P<ops>.+)_(?P<n>\d+)$")
# Kernel kinds (inductor's get_kernel_category_by_source_code, first three letters): pointwise, reduction,
# persistent reduction. Templates (tem: matmul), foreach and others have no element rule.
POINTWISE_KINDS = frozenset({"poi"})
REDUCTION_KINDS = frozenset({"red", "per"})
_DEF = re.compile(r"^def (\w+)\((.*)\):\s*$", re.MULTILINE)
_SIGNATURE = re.compile(r"'signature':\s*\{([^}]*)\}")
_SIG_ITEM = re.compile(r"'(\w+)':\s*'([^']+)'")
_STATIC = re.compile(r"^\s+(\w*numel)\s*=\s*(\d+)\s*$", re.MULTILINE)
# Triton's pointer element types -> (record dtype, bytes per element).
TRITON_DTYPES: dict[str, tuple[str, int]] = {
    "fp64": ("fp64", 8), "fp32": ("fp32", 4), "fp16": ("fp16", 2), "bf16": ("bf16", 2), "tf32": ("fp32", 4),
    "fp8e4nv": ("fp8", 1), "fp8e5": ("fp8", 1), "fp8e4b15": ("fp8", 1), "i64": ("int64", 8), "i32": ("int32", 4),
    "i16": ("int16", 2), "i8": ("int8", 1), "u64": ("uint64", 8), "u32": ("uint32", 4), "u16": ("uint16", 2),
    "u8": ("uint8", 1), "i1": ("bool", 1)}
NORMS = {"_fused_rms_norm": "rmsnorm", "rms_norm": "rmsnorm", "native_layer_norm": "layernorm",
         "layer_norm": "layernorm"}
SOFTMAXES = frozenset({"_softmax", "_safe_softmax", "softmax"})


@functools.cache
def aten_op_names() -> frozenset[str]:
    """The op names of torch's aten ops ('add', 'mul', '_fused_rms_norm')."""
    import torch

    return frozenset(op_name(n) for n in torch._C._dispatch_get_all_op_names() if is_aten(n))


def split_ops(joined: str, known: frozenset[str]) -> tuple[str, ...] | None:
    """'_fused_rms_norm_add' -> ('_fused_rms_norm', 'add'): the fewest known names, joined by '_', in the
    strictly increasing order Inductor writes them in; None when no such split exists."""

    @functools.cache
    def best(i: int, prev: str) -> tuple[str, ...] | None:
        if i == len(joined):
            return ()
        found: tuple[str, ...] | None = None
        for j in range(i + 1, len(joined) + 1):
            if j < len(joined) and (joined[j] != "_" or j + 1 == len(joined)):
                continue
            piece = joined[i:j]
            if piece not in known or piece <= prev:
                continue
            rest = best(j + 1, piece) if j < len(joined) else ()
            if rest is not None and (found is None or len(rest) + 1 < len(found)):
                found = (piece, *rest)
        return found

    return best(0, "")


@dataclass(frozen=True)
class KernelName:
    kind: str  # "poi", "red", "per", "tem", ...
    ops: tuple[str, ...]  # the fused aten op names


def parse_name(name: str, known: frozenset[str] | None = None) -> KernelName | None:
    """The kind and fused aten ops of an Inductor kernel name; None when it is not one or cannot be split."""
    m = KERNEL_NAME.match(name)
    if not m:
        return None
    ops = split_ops(m.group("ops"), known if known is not None else aten_op_names())
    return KernelName(m.group("kind"), ops) if ops else None


@dataclass(frozen=True)
class KernelSource:
    """What a generated kernel file says of its launch: parameters in order (constexprs left out), the element
    type of each pointer, and the sizes written in the body."""

    params: tuple[str, ...]
    pointer_dtypes: dict[str, str]
    static_numels: dict[str, int]


def parse_source(text: str) -> KernelSource | None:
    """The first kernel of an Inductor-generated Triton file; None when there is none."""
    m = _DEF.search(text)
    if not m:
        return None
    params = tuple(p.split(":")[0].strip() for p in m.group(2).split(",") if "constexpr" not in p and p.strip())
    sig = _SIGNATURE.search(text)
    dtypes = {k: v[1:] for k, v in _SIG_ITEM.findall(sig.group(1)) if v.startswith("*")} if sig else {}
    return KernelSource(params, dtypes, {k: int(v) for k, v in _STATIC.findall(text[m.end():])})


@functools.lru_cache(maxsize=256)
def read_source(path: str) -> KernelSource | None:
    try:
        return parse_source(Path(path).read_text())
    except (OSError, UnicodeDecodeError):
        return None


@dataclass
class Launch:
    """One Triton launch as the profiler saw it (kernels.py fills it)."""

    name: str  # the CPU op's name: the kernel's descriptive name
    kernel_file: str | None
    shapes: list[Any]  # per launch argument: a tensor's shape, [] for a scalar
    values: list[Any]  # per launch argument: a scalar's value, None for a tensor
    kernels: list[tuple[str, float]] = field(default_factory=list)  # device kernels, seconds
    region: str | None = None
    module: str | None = None  # the compiled module it ran in (its profiler range), when known
    after: int | None = None  # the recorded call before it (program order)


def _meta(shape: list[int], dtype: str, key: int) -> TensorMeta:
    name, size = TRITON_DTYPES.get(dtype, (dtype, 4))
    shape_t = tuple(int(s) for s in shape)
    strides = tuple(math.prod(shape_t[i + 1:]) for i in range(len(shape_t)))
    return TensorMeta(shape_t, name, "cuda", key, 0, strides, size, math.prod(shape_t) * size,
                      is_float=name.startswith(("fp", "bf")))


def fused_call(launch: Launch, index: int, module: str) -> OpCall | str:
    """The launch as one call of its fused ops, or why it cannot be one (a sentence)."""
    kn = parse_name(launch.name)
    if kn is None:
        return "the kernel name names no aten ops"
    src = read_source(launch.kernel_file) if launch.kernel_file else None
    if src is None:
        return "its generated source could not be read"
    if len(launch.shapes) < len(src.params):
        return "the profiler kept no launch arguments"
    inputs: list[TensorMeta] = []
    outputs: list[TensorMeta] = []
    mutated: set[int] = set()
    numels = dict(src.static_numels)
    for i, param in enumerate(src.params):
        if param in src.pointer_dtypes:
            meta = _meta(launch.shapes[i] or [], src.pointer_dtypes[param], -(index * 64 + i + 1))
            if param.startswith("out_ptr"):
                outputs.append(meta)
            else:
                if param.startswith("in_out_ptr"):
                    mutated.add(len(inputs))
                inputs.append(meta)
        elif param.endswith("numel") and isinstance(launch.values[i], int):
            numels[param] = launch.values[i]
    x = numels.get("xnumel", 1) * numels.get("ynumel", 1)
    r = math.prod(v for k, v in numels.items() if k.startswith("r"))
    args = {"kernel": launch.name, "kernel_file": launch.kernel_file, "kind": kn.kind, "aten_ops": kn.ops,
            "rows": x, "cols": r, "numel": x * r if kn.kind in REDUCTION_KINDS else x}
    return OpCall(index=index, op=fused_name(kn.ops), module=module, region=launch.region,
                  inputs=tuple(inputs), outputs=tuple(outputs), args=args, raw_args=(), raw_kwargs={},
                  out_tree=None, mutated=frozenset(mutated), not_read=frozenset(), tags=frozenset({"fused"}))


@functools.cache
def _tags(name: str) -> frozenset[str]:
    import torch

    packet = getattr(torch.ops.aten, name, None)
    try:
        overloads = [getattr(packet, o) for o in packet.overloads()] if packet is not None else []
    except (AttributeError, RuntimeError):
        return frozenset()
    return frozenset(str(t).split(".")[-1] for ov in overloads for t in ov.tags)


def op_flops(name: str, kind: str, numel: int, rows: int, cols: int) -> float | None:
    """One fused aten op's FLOPs over the kernel's elements (module docstring); None: no rule for it."""
    if name in COPIES or name in ("_to_copy", "view", "clone", "permute", "expand"):
        return 0.0
    if name in NORMS:
        norm = NORMS[name]
        per_row = FLOPS_PER_ROW_OF[norm] * rows if kind in REDUCTION_KINDS else 0
        return float(FLOPS_PER_ELEMENT_OF[norm] * numel + per_row)
    if name in SOFTMAXES:
        return float(SOFTMAX_FLOPS_PER_ELEMENT * numel)
    tags = _tags(name)
    if "pointwise" in tags:
        return float(POINTWISE_FLOPS.get(name, 1) * numel)
    if "reduction" in tags or name in UNTAGGED_REDUCTIONS:
        return float(REDUCTION_FLOPS.get(name, 1) * numel)
    return None


def fused_cost(call: OpCall) -> Cost:
    """FLOPs of a fused Triton kernel: the sum of its aten ops' rules (module docstring)."""
    a = call.args
    if a["kind"] not in POINTWISE_KINDS | REDUCTION_KINDS:
        return none(f"NB: a Triton {a['kind']} kernel ({a['kernel']}): no element-count rule.")
    total = 0.0
    for name in a["aten_ops"]:
        flops = op_flops(name, a["kind"], a["numel"], a["rows"], a["cols"])
        if flops is None:
            return none(f"NB: no element-count rule for {name}, fused in {a['kernel']}.")
        total += flops
    return rule(total, "fused", f"NB: each fused aten op's rule over the kernel's {a['numel']} elements; "
                "bytes are the kernel's tensor arguments, whole.")


def with_launches(calls: list[OpCall], launches: list[Launch],
                  next_index: int) -> tuple[list[OpCall], list[tuple[OpCall, Launch]], list[tuple[Launch, str]]]:
    """The recorded calls with the launches' fused calls merged in program order (each after the call whose
    range preceded it); the fused calls with their launches, and the launches left unattributed with why.
    A launch takes the compiled module it ran in, else the module of the call before it in its region."""
    before = {c.index: c for c in calls}
    fused: list[tuple[OpCall, Launch]] = []
    failed: list[tuple[Launch, str]] = []
    keyed: list[tuple[tuple[int, int, int], OpCall]] = [((c.index, 0, 0), c) for c in calls]
    for k, launch in enumerate(launches):
        prev = before.get(launch.after) if launch.after is not None else None
        module = launch.module if launch.module is not None else (
            prev.module if prev is not None and prev.region == launch.region else "")
        made = fused_call(launch, next_index + k, module)
        if isinstance(made, str):
            failed.append((launch, made))
            continue
        fused.append((made, launch))
        keyed.append(((launch.after if launch.after is not None else -1, 1, k), made))
    keyed.sort(key=lambda kv: kv[0])
    return [c for _, c in keyed], fused, failed
