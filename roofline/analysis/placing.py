"""An operator placed on a roof without running it: its analytic record with the advice every front end prints. The
pure half of the use case they share (`roofline.session.Placer` adds timing, counters, predictions, energy and the
document, and calls this for a target with no device); `compare` places each GPU's record here too."""

from __future__ import annotations

from typing import TYPE_CHECKING

from roofline.analysis.advice import with_advice
from roofline.core.record import Record, analytic_record

if TYPE_CHECKING:
    from roofline.ceilings.specs import GPUSpec
    from roofline.core.dtypes import DType
    from roofline.core.model import Ceilings
    from roofline.ops.base import Operator


def analytic(op: Operator, dtype: DType, ceilings: Ceilings, spec: GPUSpec | None,
             tensor_cores: bool = True) -> Record:
    """The record of `op` in `dtype` on `ceilings` (the roof of `spec`, None for a CPU), with its advice."""
    return with_advice(analytic_record(op, dtype, ceilings, tensor_cores), spec)
