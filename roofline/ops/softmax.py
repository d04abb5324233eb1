"""Softmax over the last dimension.

FLOP convention: 5 per element: max (a compare), subtract the max, exp, sum, divide by the sum. exp counts
as one FLOP although it runs on the SFU (as in elementwise.py); the per-row division is counted per element
(a kernel may take one reciprocal per row and multiply instead: the same count).

NB: one read and one write: a row is kept on chip (or the online softmax of Milakov & Gimelshein merges the
max and sum passes), so long rows that spill and are re-read from DRAM are not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.core.dtypes import DType
from roofline.ops.base import ACTIVATIONS, HALF_AND_WIDER, Operator, Traffic, operator, param, rw

SOFTMAX_FLOPS_PER_ELEMENT = 5  # max, sub, exp, sum, div


@operator("softmax", "softmax")
@dataclass(frozen=True)
class Softmax(Operator):
    """y = exp(x - max(x)) / sum(exp(x - max(x))) along each row."""

    summary = "softmax over the last dimension of a rows x cols tensor"
    ignores = "NB: read once and written once (row on chip or online softmax); exp counts as 1 FLOP."
    dtypes = HALF_AND_WIDER
    rows: int = param(4096, "rows, each normalised independently")
    cols: int = param(4096, "elements per row (the softmax dimension)")

    def flops(self) -> float:
        return SOFTMAX_FLOPS_PER_ELEMENT * self.rows * self.cols

    def traffic(self, dtype: DType) -> Traffic:
        n = self.rows * self.cols * dtype.bytes
        return rw({ACTIVATIONS: n}, {ACTIVATIONS: n})
