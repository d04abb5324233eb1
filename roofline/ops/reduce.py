"""Reductions over the last dimension, y[r] = f(x[r, :]) for f in sum, mean, amax (rows x cols -> rows), or with
`--dim first` over the first, y[c] = f(x[:, c]) (rows x cols -> cols: a bias's or a norm weight's gradient, summed
over the tokens).

FLOP convention: one per input element (an add or a compare), as the profile's reduction rule counts them
(capture/registry.reduction_cost); mean's one division per row is not counted.

NB: one read of x and one write of y; a reduction over strided or middle dimensions is not this shape (a profile
counts it by the rule, as a memory pass).
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.core.dtypes import DType
from roofline.ops.base import ACTIVATIONS, HALF_AND_WIDER, Operator, Traffic, choice, operator, param, rw

REDUCE_FUNCS = ("sum", "mean", "amax")
REDUCE_DIMS = ("last", "first")


@operator("reduce", "reduction")
@dataclass(frozen=True)
class Reduce(Operator):
    """y = sum / mean / amax of x along each row (`--dim first`: along each column)."""

    summary = ("sum, mean or amax over the last (or first) dimension of a rows x cols tensor (the RMSNorm's mean, a "
               "bias's gradient)")
    ignores = "NB: one FLOP per input element (mean's division per row not counted); read once, written once."
    dtypes = HALF_AND_WIDER
    added_later = ("dim",)
    rows: int = param(4096, "rows, each reduced to one value")
    cols: int = param(4096, "elements per row (the reduced dimension)")
    func: str = choice("sum", REDUCE_FUNCS, "the reduction")
    dim: str = choice("last", REDUCE_DIMS, "last: each row to one value (rows outputs); first: each column over the "
                                           "rows (cols outputs: a bias's gradient)")

    def flops(self) -> float:
        return float(self.rows * self.cols)

    def traffic(self, dtype: DType) -> Traffic:
        outputs = self.cols if self.dim == "first" else self.rows
        return rw({ACTIVATIONS: self.rows * self.cols * dtype.bytes}, {ACTIVATIONS: outputs * dtype.bytes})
