"""torch.compile'd programs in a trace: each Triton launch Inductor made is a call, placed by what the trace holds.

While the profiler runs, Inductor wraps each Triton launch in a CPU op named for the kernel
(`triton_poi_fused_mul_silu_1`) whose args carry `kernel_backend: "triton"`, the generated source's path
(`kernel_file`) and, under `torch._inductor.config.benchmark_kernel = True` (FLOPs and bytes) or
`profile_bandwidth = True` (bytes), Inductor's own estimates `kernel_flop` and `kernel_num_gb`
(torch/_inductor/codegen/triton.py `inductor_meta_common`, runtime/triton_heuristics.py
`get_profiler_kwargs`); with `record_shapes=True` the launch's arguments too (tensors: dims and dtype; sizes: their
values). Each launch is placed by, in this order (`PLACED_BY`, said per record and counted in the summary):
- `inductor`: the FLOPs and bytes Inductor wrote (a quantity it did not write is taken from the fused ops, if
  they place it);
- `fused ops`: the aten ops the kernel name lists (config.triton.descriptive_names, the default), counted over the
  launch's arguments as a profile counts them (capture/inductor.py: the source read for which arguments are read
  and written, and its sizes), when the generated source can be read here;
- neither: the launch is no call, and its kernels are listed unattributed with their time (never dropped), the
  reason counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from roofline.capture.cost import cost_of
from roofline.capture.inductor import Launch, fused_call, parse_name
from roofline.capture.registry import Cost
from roofline.capture.trace import OpCall, TensorMeta, dtype_name
from roofline.capture.traffic import Traffic, compute_dtype, traffic
from roofline.core.aten_names import fused_name
from roofline.traces import schema
from roofline.traces.model import NONE, CompiledLaunch, OpNode, RankTrace

INDUCTOR, FUSED, BOTH = "inductor", "fused ops", "inductor and fused ops"
# What placed a launch, and how the summary says it
PLACED_BY = {INDUCTOR: "the FLOPs and bytes Inductor wrote into the trace",
             BOTH: "Inductor's figures where it wrote them, else their fused aten ops",
             FUSED: "their fused aten ops (the kernel name's) over the launch arguments"}
GB = 1e9  # kernel_num_gb's unit
ACTIVATIONS = "activations"  # Inductor's bytes are a kernel's buffers: no weight/activation split is written


@dataclass(frozen=True)
class Placed:
    """A launch as a call: its description, count, bytes, dtype, and what placed it (`PLACED_BY`)."""

    call: OpCall
    cost: Cost
    traffic: Traffic
    dtype: str
    placed_by: str


def _arguments(trace: RankTrace, node: OpNode, index: int) -> tuple[list[Any], list[Any], list[TensorMeta]]:
    """The launch's arguments as the profile's Launch takes them (shapes; values) and its tensors as metas (each
    a storage of its own: a trace names no tensors)."""
    if node.sig == NONE:
        return [], [], []
    sig = trace.signatures[node.sig]
    shapes: list[Any] = []
    values: list[Any] = []
    metas: list[TensorMeta] = []
    concrete = sig.concrete or [""] * len(sig.types)
    for i, (dims, kind, text) in enumerate(zip(sig.dims, sig.types, concrete, strict=False)):
        if kind in schema.DTYPES and isinstance(dims, list):
            shapes.append(dims)
            values.append(None)
            dtype = schema.DTYPES[kind]
            shape = tuple(int(d) for d in dims)
            strides = tuple(math.prod(shape[j + 1:]) for j in range(len(shape)))
            metas.append(TensorMeta(shape, dtype_name(dtype), "cuda", -(index * 64 + i + 1), 0, strides,
                                    dtype.itemsize, math.prod(shape) * dtype.itemsize,
                                    is_float=dtype.is_floating_point))
        else:
            shapes.append([])
            values.append(_int(text))
    return shapes, values, metas


def _int(text: Any) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _stated(launch: CompiledLaunch, call: OpCall, fused: Placed | None) -> Placed:
    """The launch placed by Inductor's own FLOPs and bytes (a missing one from the fused ops)."""
    cost = fused.cost if fused is not None else None
    if launch.kernel_flop is not None:
        cost = Cost(launch.kernel_flop, "inductor:kernel_flop", "NB: FLOPs as Inductor estimated them "
                    "(kernel_flop, written into the trace under config.benchmark_kernel).")
    elif cost is None:
        cost = Cost(None, None, "NB: Inductor wrote this kernel's bytes, not its FLOPs, and its fused ops could not "
                    "be counted here.")
    if launch.kernel_num_gb is not None:
        total = launch.kernel_num_gb * GB
        moved = Traffic(total, 0.0, {ACTIVATIONS: total} if total else {}, (), ())  # read and written together
    elif fused is not None:
        moved = fused.traffic
    else:
        moved = traffic(call, cost)
    both = fused is not None and (launch.kernel_flop is None or launch.kernel_num_gb is None)
    return Placed(call, cost, moved, fused.dtype if fused is not None else compute_dtype(call, cost),
                  BOTH if both else INDUCTOR)


def place(trace: RankTrace, node: OpNode, index: int) -> Placed | str:
    """The launch at op node `node` as call `index` (module docstring), or why it is none (a sentence)."""
    launch = trace.compiled[node.compiled]
    name = trace.names[node.name]
    shapes, values, metas = _arguments(trace, node, index)
    fused: Placed | None = None
    why = "the trace recorded no launch arguments (record_shapes=False)" if node.sig == NONE else ""
    if not why:
        made = fused_call(Launch(name, launch.kernel_file, shapes, values), index, "")
        if isinstance(made, OpCall):
            cost = cost_of(made)
            fused = Placed(made, cost, traffic(made, cost), compute_dtype(made, cost), FUSED)
        else:
            why = made
    if launch.kernel_flop is None and launch.kernel_num_gb is None:
        return fused if fused is not None else why
    kn = parse_name(name)
    call = fused.call if fused is not None else OpCall(
        index=index, op=fused_name(kn.ops) if kn is not None else name, module="", region=None,
        inputs=tuple(metas), outputs=(), args={"kernel": name, "kernel_file": launch.kernel_file}, raw_args=(),
        raw_kwargs={}, out_tree=None, mutated=frozenset(), not_read=frozenset(), tags=frozenset({"fused"}))
    return _stated(launch, call, fused)
