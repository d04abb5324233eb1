"""The registry of kernel builders (a leaf: the builder modules import it, `kernels.build` reads it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from roofline.core.dtypes import DType
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

OpT = TypeVar("OpT", bound=Operator)


def builder(op_name: str, footprint: Callable[[OpT, DType], float] | None = None,
            ) -> Callable[[Callable[[OpT, DType, str], Built]], Callable[[OpT, DType, str], Built]]:
    """Register the builder of an operator; `footprint` estimates the bytes it allocates (default: the
    operator's minimum traffic, i.e. every input, output and temporary once).

    Each takes the operator class registered as `op_name` (`ops.base.operator`), not any Operator:
    `kernels.build` and `kernels.footprint_bytes` look them up by the operator's own name, so that class is the
    only one they meet."""

    def wrap(fn: Callable[[OpT, DType, str], Built]) -> Callable[[OpT, DType, str], Built]:
        if op_name in BUILDERS:
            raise RuntimeError(f"builder for {op_name!r} registered twice")
        # stored under the general signature: the lookup by name is what narrows the operator (see above)
        BUILDERS[op_name] = (cast(Builder, fn), cast("Footprint | None", footprint))
        return fn

    return wrap
