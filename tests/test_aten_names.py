"""Operator names taken apart (roofline.core.aten_names): namespace, op name, overload, torch's packet, the
out-of-place base name and the short names the views show, on hand-written names."""

from __future__ import annotations

import pytest

from roofline.core.aten_names import (
    FUSED_PREFIX,
    base_name,
    fused_name,
    fused_ops,
    is_aten,
    is_fused,
    is_inplace,
    namespace,
    op_name,
    overload,
    packet,
    short_base_name,
    short_name,
)

# name -> (namespace, op name, overload, packet, base name, in place)
NAMES = {
    "aten::add_.Tensor": ("aten", "add_", "Tensor", "aten::add_", "add", True),
    "aten::add.Tensor": ("aten", "add", "Tensor", "aten::add", "add", False),
    "aten::mm": ("aten", "mm", "", "aten::mm", "mm", False),  # no overload: torch's 'default'
    "aten::mm.default": ("aten", "mm", "default", "aten::mm", "mm", False),
    "aten::__and__.Tensor": ("aten", "__and__", "Tensor", "aten::__and__", "__and__", False),  # a dunder
    "aten::__iand__.Tensor": ("aten", "__iand__", "Tensor", "aten::__iand__", "__iand__", False),  # keeps its '__'
    "aten::_fused_adam_.default": ("aten", "_fused_adam_", "default", "aten::_fused_adam_", "_fused_adam", True),
    "aten::_foreach_mul_.Scalar": ("aten", "_foreach_mul_", "Scalar", "aten::_foreach_mul_", "_foreach_mul", True),
    "c10d::allreduce_": ("c10d", "allreduce_", "", "c10d::allreduce_", "allreduce", True),
    "_c10d_functional::all_reduce": ("_c10d_functional", "all_reduce", "", "_c10d_functional::all_reduce",
                                     "all_reduce", False),
    "mylib::custom.out": ("mylib", "custom", "out", "mylib::custom", "custom", False),
    "matmul": ("", "matmul", "", "matmul", "matmul", False),  # no namespace
    "_": ("", "_", "", "_", "_", False),  # a lone underscore is no in-place form of ''
    "fused: mul+silu": ("", "fused: mul+silu", "", "fused: mul+silu", "fused: mul+silu", False),
}


@pytest.mark.parametrize("op", NAMES)
def test_a_name_taken_apart(op: str) -> None:
    ns, name, ov, pk, base, inplace = NAMES[op]
    assert (namespace(op), op_name(op), overload(op), packet(op), base_name(op), is_inplace(op)) == (
        ns, name, ov, pk, base, inplace)
    assert is_aten(op) == (ns == "aten")


def test_short_names_abbreviate_the_longest_aten_names_and_keep_other_namespaces() -> None:
    ops = ("aten::addmm", "aten::add_.Tensor", "aten::_scaled_dot_product_flash_attention",
           "aten::scaled_dot_product_attention", "aten::_scaled_dot_product_efficient_attention.default",
           "aten::native_layer_norm", "aten::_native_batch_norm_legit_no_training", "aten::convolution",
           "aten::__and__.Tensor", "c10d::allreduce_", "triton::fused_1", "fused: mul+silu")
    assert [short_name(o) for o in ops] == [
        "addmm", "add_", "sdpa_flash", "sdpa", "sdpa_efficient", "layer_norm", "batch_norm", "conv", "__and__",
        "c10d::allreduce_", "triton::fused_1", "fused: mul+silu"]
    # the roll-up by op type: in-place and out-of-place together, other namespaces whole (their '_' kept)
    assert [short_base_name(o) for o in ("aten::add_.Tensor", "aten::add.Tensor", "aten::relu_",
                                         "c10d::allreduce_")] == ["add", "add", "relu", "c10d::allreduce_"]


def test_a_compiled_kernels_op_names_the_aten_ops_it_fused() -> None:
    op = fused_name(("mul", "silu"))
    assert op == "fused: mul+silu" and op.startswith(FUSED_PREFIX)
    assert is_fused(op) and fused_ops(op) == ("mul", "silu")
    assert not is_fused("aten::mul.Tensor") and fused_ops("aten::mul.Tensor") == ()
