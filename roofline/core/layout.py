"""How a tensor's elements lie in memory, from its shape and strides (in elements): the contiguous run a kernel
reads before it jumps. Pure: no torch."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple


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


class Walk(NamedTuple):
    """How a kernel walking its output reads one operand: in runs of `run` elements (0: densely), and whether
    the run ends at a broadcast dimension (the operand re-read, as a bias over rows) rather than at a gap."""

    run: int
    broadcast: bool = False


DENSE = Walk(0)


def iteration_run(out_shape: Sequence[int], out_strides: Sequence[int], shape: Sequence[int],
                  strides: Sequence[int]) -> Walk:
    """How an input is read as a kernel walks its output in memory order (the output's dimensions innermost-
    stride first; torch's TensorIterator orders them so): the product of the innermost dimensions where the
    input's strides lie row-major in that order. Its own layout does not matter, only whether it matches the
    output's: a channels-last input of a channels-last output is dense, a transposed view added into a row-major
    output runs its last dimension. A broadcast dimension (size 1 in the input, right-aligned; stride 0 in the
    walk) ends the run too, `broadcast` (a norm's weight over rows runs its length; a per-row scale, 1). An
    input that does not broadcast to the output (a reduction's, a gather's) is not judged: DENSE."""
    pad = len(out_shape) - len(shape)
    if pad < 0 or any(n not in (1, o) for n, o in zip(shape, out_shape[pad:], strict=True)):
        return DENSE
    sizes, steps = [1] * pad + list(shape), [0] * pad + list(strides)
    order = sorted(range(len(out_shape)), key=lambda i: (out_strides[i], -i))  # innermost first
    run = 1
    for i in order:
        if out_shape[i] == 1:
            continue
        if sizes[i] == 1:
            return Walk(run, True)
        if steps[i] != run:
            return Walk(run)
        run *= sizes[i]
    return DENSE


def strided_run(out: tuple[Sequence[int], Sequence[int]] | None,
                inputs: Iterable[tuple[Sequence[int], Sequence[int]]]) -> Walk:
    """The shortest run (`iteration_run`) among the inputs, given as (shape, strides), and the output itself (a
    slice written with gaps) that the walk of the output `out` does not read densely; DENSE when it reads every
    one so (or there is no output to walk). Single elements (a scalar operand) do not count."""
    if out is None or math.prod(out[0]) <= 1:
        return DENSE
    walks = [w for shape, strides in (*inputs, out) if math.prod(shape) > 1
             and (w := iteration_run(out[0], out[1], shape, strides)) != DENSE]
    return min(walks, key=lambda w: (w.run, not w.broadcast), default=DENSE)
