"""Builders of the real kernels: for each registered operator, allocate realistic inputs on a device and
return a zero-argument callable that runs the operator (setup outside, the kernel inside).

Importing this package imports torch; the analytic commands never import it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from roofline.core.dtypes import DType, check_timeable
from roofline.core.errors import UsageError
from roofline.ops.base import Operator


@dataclass
class Built:
    """A ready-to-run kernel: `fn()` runs the operator once on inputs allocated by the builder."""

    fn: Callable[[], Any]
    impl: str  # what runs, e.g. "torch.matmul", "F.scaled_dot_product_attention", "torch.compile"
    inputs: list[Any] = field(default_factory=list)  # keeps the tensors alive
    graph_safe: bool = True  # False when fn cannot be captured in a CUDA graph
    # passes the callable makes that the operator's model assumes fused away (e.g. an fp8 cache converted
    # by a separate .to()): the timing includes them, the roofline does not
    extra_passes: list[str] = field(default_factory=list)


Builder = Callable[[Operator, DType, str], Built]
Footprint = Callable[[Operator, DType], float]

BUILDERS: dict[str, tuple[Builder, Footprint | None]] = {}


def builder(op_name: str, footprint: Footprint | None = None) -> Callable[[Builder], Builder]:
    """Register the builder of an operator; `footprint` estimates the bytes it allocates (default: the
    operator's minimum traffic, i.e. every input, output and temporary once)."""

    def wrap(fn: Builder) -> Builder:
        if op_name in BUILDERS:
            raise RuntimeError(f"builder for {op_name!r} registered twice")
        BUILDERS[op_name] = (fn, footprint)
        return fn

    return wrap


def _load() -> None:
    from roofline.measuring.kernels import families  # noqa: F401 - registers the builders


def _refuse_collective(op: Operator) -> None:
    """A collective needs a process per GPU, not one kernel on one device: it is not built here."""
    from roofline.ops.collectives import TIMED_ELSEWHERE, is_collective

    if is_collective(op):
        raise UsageError(TIMED_ELSEWHERE)


def footprint_bytes(op: Operator, dtype: DType) -> float:
    """Bytes the builder will allocate for this operator (before allocating anything)."""
    _refuse_collective(op)
    _load()
    entry = BUILDERS.get(op.name)
    if entry is None or entry[1] is None:
        return op.traffic(dtype).total
    return entry[1](op, dtype)


def build(op: Operator, dtype: DType, device: str) -> Built:
    _refuse_collective(op)
    check_timeable(dtype)
    _load()
    entry = BUILDERS.get(op.name)
    if entry is None:
        raise UsageError(f"no kernel builder for {op.name}: use --no-time for the analytic model")
    return entry[0](op, dtype, device)
