"""Strided inputs (core/layout.py): the contiguous run of a view, recorded by the profile (input_strides, the
elementwise catalog's `run`) and timed by the kernels builder as a transposed view."""

from __future__ import annotations

import pytest
import torch

import roofline
from roofline.core.errors import UsageError
from roofline.core.layout import DENSE, Walk, contiguous_run, dense, iteration_run, strided_run
from roofline.ops import make


def test_the_contiguous_run_of_views() -> None:
    b, s, h, d = 2, 8, 4, 16
    assert contiguous_run([b, s, h, d], [s * h * d, h * d, d, 1]) == b * s * h * d  # dense: the whole tensor
    assert contiguous_run([b, h, s, d], [s * h * d, d, h * d, 1]) == d  # a head split's transpose: head_dim
    assert contiguous_run([s, d], [1, 0]) == 1  # an expanded last dimension
    assert contiguous_run([1, s, 1, d], [999, d, 5, 1]) == s * d  # size-1 dimensions' strides do not matter
    assert dense([1, s, 1, d], [999, d, 5, 1]) and not dense([d, s], [1, d])


def test_the_run_an_output_walk_reads_of_each_input() -> None:
    b, s, h, d = 2, 8, 4, 16
    row = ([b, h, s, d], [h * s * d, s * d, d, 1])  # a row-major output
    split = ([b, h, s, d], [s * h * d, d, h * d, 1])  # a head split's transpose of [b, s, h, d]
    # a transposed view read into a row-major output runs head_dim; into an output of its own layout (what
    # TensorIterator allocates for `view * table`), it is dense
    assert iteration_run(*row, *split) == Walk(d) and iteration_run(*split, *split) == DENSE
    assert strided_run(row, [split, row]) == Walk(d) and strided_run(split, [split]) == DENSE
    # channels-last in and out: dense, whatever row-major says (ResNet's relu_ and residual add_)
    n, c, hh, w = 4, 64, 7, 7
    cl = ([n, c, hh, w], [c * hh * w, 1, w * c, c])
    assert strided_run(cl, [cl, cl]) == DENSE and contiguous_run(*cl) == 1
    # a broadcast operand ends its run where it is re-read: a rotary table over heads after head_dim, a norm's
    # weight over rows after its length, a per-row scale at once; the shortest run of all the inputs counts
    assert strided_run(split, [split, ([1, 1, s, d], [s * d, s * d, d, 1])]) == Walk(d, True)
    assert strided_run(row, [row, ([d], [1])]) == Walk(d, True)
    assert strided_run(row, [row, ([b, h, s, 1], [h * s, s, 1, 1]), split]) == Walk(1, True)
    # an input that does not broadcast to the output (a reduction's) is not judged; a slice written with gaps is
    assert strided_run(([b, h], [h, 1]), [row]) == DENSE
    assert strided_run(([b, s, d], [s * 2 * d, 2 * d, 1]), [([b, s, d], [s * d, d, 1])]) == Walk(d)  # half rows
    assert strided_run(None, [split]) == DENSE and strided_run(([1], [1]), [split]) == DENSE
    assert strided_run(row, [row, ([1], [1])]) == DENSE  # a one-element operand (a scalar tensor) does not count


def test_a_profile_records_the_strides_and_the_run_of_a_transposed_input() -> None:
    b, s, h, d = 2, 8, 4, 16
    x = torch.randn(b, s, h, d)
    y, z = torch.randn(b, h, s, d), torch.randn(b, s, h, d)

    def program() -> None:
        x.transpose(1, 2) + y  # the transposed view first: a head split plus a dense tensor
        x + z

    prof = roofline.profile(program, time=False, gpu="h200")
    strided, plain = (r for r in prof.records if r.op == "aten::add.Tensor")
    assert strided.input_strides == [[s * h * d, d, h * d, 1], [h * s * d, s * d, d, 1]]
    assert strided.output_strides in ([[s * h * d, d, h * d, 1]], [[h * s * d, s * d, d, 1]])  # one is off it
    assert strided.params == {"numel": b * s * h * d, "run": d} and plain.params == {"numel": b * s * h * d}
    prof = roofline.profile(lambda: y * torch.ones(d), time=False, gpu="h200")  # a row broadcast over rows
    assert prof.records[-1].params == {"numel": b * s * h * d, "run": d, "bcast": True}
    assert strided.bytes == plain.bytes  # the same bytes move: the bound does not change, the kernel's speed may


def test_the_builder_times_a_transposed_view() -> None:
    from roofline.core.dtypes import get_dtype
    from roofline.measuring.kernels import build

    built = build(make("add", numel=4096, run=64), get_dtype("fp32"), "cpu")
    a, b = built.inputs
    assert a.is_contiguous() and not b.is_contiguous() and b.shape == a.shape == (8, 8, 64)
    assert contiguous_run(list(b.shape), list(b.stride())) == 64 and "64-element-run transposed view" in built.impl
    assert torch.equal(built.fn(), a + b)
    with pytest.raises(UsageError, match="run dividing numel"):
        build(make("add", numel=4096, run=96), get_dtype("fp32"), "cpu")
    with pytest.raises(UsageError, match="exceeds numel"):
        make("mul", numel=64, run=128)
    row = build(make("mul", numel=4096, run=64, bcast=True), get_dtype("fp32"), "cpu")
    x, weight = row.inputs
    assert x.shape == (64, 64) and weight.shape == (64,) and "64-element row broadcast" in row.impl
    assert torch.equal(row.fn(), x * weight)
    # the broadcast row is read once: numel in, run in, numel out
    assert make("mul", numel=4096, run=64, bcast=True).traffic(get_dtype("fp32")).total == (2 * 4096 + 64) * 4
    with pytest.raises(UsageError, match="unknown parameter"):  # relu has one input: no bcast to ask for
        make("relu", numel=4096, run=64, bcast=True)
    with pytest.raises(UsageError, match="mul: bcast needs run, the length of the broadcast row"):
        make("mul", numel=4096, bcast=True)


def test_copy_reads_a_transposed_view_into_row_major_order() -> None:
    # torch's unary kernels keep a permuted input's layout (relu of a transposed view writes a transposed view and
    # reads it densely: on the H200, 2026-12-02, at the dense pass's 3.3-4.3 TB/s); a model's .contiguous() of it
    # reads it strided. `copy` is that copy: its output row-major, its input's elements in the same order
    from roofline.core.dtypes import get_dtype
    from roofline.measuring.kernels import build

    relu = build(make("relu", numel=4096, run=64), get_dtype("fp32"), "cpu")
    assert not relu.fn().is_contiguous()  # the layout kept: no strided read
    built = build(make("copy", numel=4096, run=64), get_dtype("fp32"), "cpu")
    (x,) = built.inputs
    y = built.fn()
    assert not x.is_contiguous() and y.is_contiguous() and torch.equal(y, x)
    dense = build(make("copy", numel=4096), get_dtype("fp32"), "cpu")
    (d,) = dense.inputs
    assert d.is_contiguous() and dense.fn().data_ptr() != d.data_ptr()  # a clone runs: contiguous() would not
    cost = make("copy", numel=4096, run=64).traffic(get_dtype("bf16"))
    assert (cost.bytes_read, cost.bytes_written, make("copy", numel=4096).flops()) == (8192, 8192, 0)


@pytest.mark.parametrize(("numel", "run"), [(1000 * 64, 64), (6 * 64, 64), (3000, 3)])
def test_the_builder_times_a_strided_view_whatever_the_rows(numel: int, run: int) -> None:
    # numel / run rows not a power of two (1000, 6, 1000): the view was (1, rows, run) swapped, contiguous
    # (a size-1 dimension has no stride), yet its impl said "transposed view"
    from roofline.core.dtypes import get_dtype
    from roofline.measuring.kernels import build

    built = build(make("add", numel=numel, run=run), get_dtype("fp32"), "cpu")
    a, b = built.inputs
    assert not b.is_contiguous() and b.numel() == numel and contiguous_run(list(b.shape), list(b.stride())) == run
    assert torch.equal(built.fn(), a + b)


def test_a_strided_view_of_a_prime_number_of_rows_is_refused() -> None:
    # 7 (or 2, or 1) rows of 64 cannot be split into two outer dimensions to swap: timed dense, it would be a lie
    from roofline.core.dtypes import get_dtype
    from roofline.measuring.kernels import build

    for rows in (7, 2, 1):
        with pytest.raises(UsageError, match=f"{rows} rows"):
            build(make("add", numel=rows * 64, run=64), get_dtype("fp32"), "cpu")


def test_only_a_binary_op_offers_bcast(capsys: pytest.CaptureFixture[str]) -> None:
    # analyze relu --help listed --bcast, which every unary op refused ("bcast needs a second input"); and
    # mul --bcast without --run said "needs a second input and its length (run)" of an op that has one
    from helpers import run

    _, relu, _ = run(capsys, "analyze", "relu", "--help")
    _, mul, _ = run(capsys, "analyze", "mul", "--help")
    assert "--run" in relu and "--bcast" not in relu and "--bcast" in mul
    code, _, err = run(capsys, "analyze", "mul", "--numel", "1024", "--bcast", "--gpu", "h200", "--no-time")
    assert code == 2 and err.strip() == "error: mul: --bcast needs --run, the length of the broadcast row " \
                                        "(numel / run rows)"
