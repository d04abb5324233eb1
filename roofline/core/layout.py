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


def iteration_run(out_shape: Sequence[int], out_strides: Sequence[int], shape: Sequence[int],
                  strides: Sequence[int]) -> int:
    """Elements of an input a kernel reads contiguously as it walks its output in memory order (the output's
    dimensions innermost-stride first; torch's TensorIterator orders them so): the product of the innermost
    dimensions where the input's strides lie row-major in that order. Its own layout does not matter, only
    whether it matches the output's: a channels-last input of a channels-last output is dense, a transposed view
    added into a row-major output runs its last dimension. Broadcast dimensions (size 1 in the input, the input
    right-aligned) are skipped as size-1 ones are: the operand is re-read, not strided. An input that does not
    broadcast to the output (a reduction's, a gather's) is not judged: the output's numel."""
    total = math.prod(out_shape)
    pad = len(out_shape) - len(shape)
    if pad < 0 or any(n not in (1, o) for n, o in zip(shape, out_shape[pad:], strict=True)):
        return total
    sizes, steps = [1] * pad + list(shape), [0] * pad + list(strides)
    order = sorted(range(len(out_shape)), key=lambda i: (out_strides[i], -i))  # innermost first
    run = 1
    for i in order:
        if sizes[i] == 1 or out_shape[i] == 1:
            continue
        if steps[i] != run:
            return run
        run *= sizes[i]
    return total if run == math.prod(sizes) else run


def strided_run(out: tuple[Sequence[int], Sequence[int]] | None,
                inputs: Iterable[tuple[Sequence[int], Sequence[int]]]) -> int:
    """The shortest contiguous run (`iteration_run`) among the inputs, given as (shape, strides), and the output
    itself (a slice written with gaps) that the walk of the output `out` does not cover densely; 0 when it
    covers every one so (or there is no output to walk)."""
    if out is None or math.prod(out[0]) <= 1:
        return 0
    total = math.prod(out[0])
    runs = [r for shape, strides in (*inputs, out) if math.prod(shape) > 1
            and (r := iteration_run(out[0], out[1], shape, strides)) < total]
    return min(runs, default=0)
