"""How a tensor's elements lie in memory, from its shape and strides (in elements): the contiguous run a kernel
reads before it jumps. Pure: no torch."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence


def contiguous_run(shape: Sequence[int], strides: Sequence[int]) -> int:
    """Elements in each contiguous run: the product of the trailing dimensions that lie row-major (size-1
    dimensions' strides aside); the whole tensor's numel when it is dense. A transposed head split
    [b, h, s, d] of a [b, s, h, d] tensor runs d elements; an expanded (stride-0) last dimension runs 1."""
    run = 1
    for size, stride in zip(reversed(shape), reversed(strides), strict=True):
        if size == 1:
            continue
        if stride != run:
            return run
        run *= size
    return run


def dense(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether the elements lie contiguous in row-major order (size-1 dimensions' strides aside)."""
    return contiguous_run(shape, strides) == math.prod(shape)


def strided_run(tensors: Iterable[tuple[Sequence[int], Sequence[int]]]) -> int:
    """The shortest contiguous run among (shape, strides) inputs that are not dense, 0 when every input is
    (single elements and empty tensors count as dense)."""
    runs = [contiguous_run(shape, strides) for shape, strides in tensors
            if math.prod(shape) > 1 and not dense(shape, strides)]
    return min(runs, default=0)
