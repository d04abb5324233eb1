"""Reductions over the last dimension: y[r] = f(x[r, :]) for f in sum, mean, amax (rows x cols -> rows).

FLOP convention: one per input element (an add or a compare), as the profile's reduction rule counts them
(capture/registry.reduction_cost); mean's one division per row is not counted.

NB: one read of x and one write of y; a reduction over leading or strided dimensions is not this shape (a
profile counts it by the rule, as a memory pass).
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.core.dtypes import DType
from roofline.ops.base import ACTIVATIONS, HALF_AND_WIDER, Operator, Traffic, choice, operator, param, rw

REDUCE_FUNCS = ("sum", "mean", "amax")


@operator("reduce", "reduction")
@dataclass(frozen=True)
class Reduce(Operator):
    """y = sum / mean / amax of x along each row."""

    summary = "sum, mean or amax over the last dimension of a rows x cols tensor (the RMSNorm's mean, a loss)"
    ignores = "NB: one FLOP per input element (mean's division per row not counted); read once, written once."
    dtypes = HALF_AND_WIDER
    rows: int = param(4096, "rows, each reduced to one value")
    cols: int = param(4096, "elements per row (the reduced dimension)")
    func: str = choice("sum", REDUCE_FUNCS, "the reduction")

    def flops(self) -> float:
        return float(self.rows * self.cols)

    def traffic(self, dtype: DType) -> Traffic:
        return rw({ACTIVATIONS: self.rows * self.cols * dtype.bytes}, {ACTIVATIONS: self.rows * dtype.bytes})
