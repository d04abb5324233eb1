"""Embedding lookups: y[t] = W[idx[t]] (a gather of `tokens` rows of a vocab x dim table) and its backward,
dW = the rows of dY summed into the table's rows of their indices (every row written: zeros where no token).

FLOP convention: 0 for the gather; one add per gradient element for the backward (as the profile's rule counts).
Bytes: the gathered rows read once, at most the whole table (repeated indices counted once per table, as the
profile's gather rule), and the int64 indices; the backward reads dY and the indices and writes the whole dW.

NB: the backward's sort of the indices on a GPU (torch's CUDA kernel sorts them to sum each row's gradients
without atomics) and its segment offsets are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.core.dtypes import DType
from roofline.ops.base import ACTIVATIONS, HALF_AND_WIDER, INDEX, WEIGHTS, Operator, Traffic, flag, operator, param, rw

INDEX_BYTES = 8  # torch's int64 indices


@operator("embedding", "embedding")
@dataclass(frozen=True)
class Embedding(Operator):
    """y = W[idx] for `tokens` indices into a vocab x dim table; --backward: dW from dY."""

    summary = "embedding lookup: tokens rows gathered from a vocab x dim table (--backward: its gradient)"
    ignores = "NB: rows read once (at most the table); the backward's index sort on a GPU not counted."
    dtypes = HALF_AND_WIDER
    added_later = ("backward",)
    tokens: int = param(8192, "indices looked up (batch x sequence)")
    vocab: int = param(32000, "rows of the table")
    dim: int = param(4096, "elements of each row")
    backward: bool = flag(False, "the backward: dY's rows summed into the whole vocab x dim gradient")

    def flops(self) -> float:
        return float(self.tokens * self.dim) if self.backward else 0.0

    def traffic(self, dtype: DType) -> Traffic:
        index = self.tokens * INDEX_BYTES
        if self.backward:
            return rw({ACTIVATIONS: self.tokens * self.dim * dtype.bytes, INDEX: index},
                      {WEIGHTS: self.vocab * self.dim * dtype.bytes})
        rows = min(self.tokens, self.vocab)
        return rw({WEIGHTS: rows * self.dim * dtype.bytes, INDEX: index},
                  {ACTIVATIONS: self.tokens * self.dim * dtype.bytes})
