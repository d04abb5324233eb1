"""Builders of the real kernels: for each registered operator, allocate realistic inputs on a device and
return a zero-argument callable that runs the operator (setup outside, the kernel inside).

Importing this package imports torch; the analytic commands never import it.
"""

from __future__ import annotations

from roofline.core.dtypes import DType, check_timeable
from roofline.core.errors import UsageError
from roofline.measuring.kernels.registry import BUILDERS, Builder, Built, Footprint, builder
from roofline.ops.base import Operator

__all__ = ["BUILDERS", "Builder", "Built", "Footprint", "build", "builder", "footprint_bytes"]


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
