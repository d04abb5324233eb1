"""Strided inputs (core/layout.py): the contiguous run of a view, recorded by the profile (input_strides, the
elementwise catalog's `run`) and timed by the kernels builder as a transposed view."""

from __future__ import annotations

import pytest
import torch

import roofline
from roofline.core.errors import UsageError
from roofline.core.layout import contiguous_run, dense, strided_run
from roofline.ops import make


def test_the_contiguous_run_of_views() -> None:
    b, s, h, d = 2, 8, 4, 16
    assert contiguous_run([b, s, h, d], [s * h * d, h * d, d, 1]) == b * s * h * d  # dense: the whole tensor
    assert contiguous_run([b, h, s, d], [s * h * d, d, h * d, 1]) == d  # a head split's transpose: head_dim
    assert contiguous_run([s, d], [1, 0]) == 1  # an expanded last dimension
    assert contiguous_run([1, s, 1, d], [999, d, 5, 1]) == s * d  # size-1 dimensions' strides do not matter
    assert dense([1, s, 1, d], [999, d, 5, 1]) and not dense([d, s], [1, d])
    # the shortest run among the inputs that are not dense; one element or all dense: 0
    assert strided_run([([b, h, s, d], [s * h * d, d, h * d, 1]), ([d, s], [1, d]), ([1], [7])]) == 1
    assert strided_run([([s, d], [d, 1]), ([1], [1])]) == 0


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
    assert strided.params == {"numel": b * s * h * d, "run": d} and plain.params == {"numel": b * s * h * d}
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
