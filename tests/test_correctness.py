"""The check against a reference (roofline.measuring.correctness) and `roofline.measure(..., ref=...)`, on the
CPU. Expected numbers are worked out beside each assertion."""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

import pytest
import torch

from roofline.core.errors import RooflineError
from roofline.measuring import runner
from roofline.measuring.correctness import (
    TOLERANCES,
    Mismatch,
    check_reference,
    compare,
    default_tolerance,
)


def test_tolerances_are_assert_closes_where_torch_has_them() -> None:
    theirs = getattr(getattr(torch.testing, "_comparison", None), "_DTYPE_PRECISIONS", None)
    if theirs is None:
        pytest.skip("torch moved its table of default tolerances")
    compared = set()
    for dtype, (rtol, atol) in theirs.items():
        name = str(dtype).removeprefix("torch.")
        if name in TOLERANCES:
            assert TOLERANCES[name] == (rtol, atol), name
            compared.add(name)
    assert {"float16", "bfloat16", "float32", "float64"} <= compared  # torch's table still names these
    assert default_tolerance("torch.float16") == (1e-3, 1e-5)
    assert default_tolerance("int32") == default_tolerance("bool") == (0.0, 0.0)  # exact


def test_equal_outputs_and_nested_structures_pass() -> None:
    t = torch.randn(3, 4)
    assert compare(t, t.clone()) is None
    assert compare((t, [t, {"a": t}]), [t.clone(), (t.clone(), {"a": t.clone()})]) is None  # tuple == list
    assert compare(torch.empty(0), torch.empty(0)) is None
    assert compare({"n": 3, "s": "x", "f": 0.1 + 0.2}, {"n": 3, "s": "x", "f": 0.3}) is None


def test_first_failing_index_is_row_major_with_max_errors() -> None:
    expected = torch.arange(12, dtype=torch.float32).reshape(3, 4)  # 0..11, largest 11
    actual = expected.clone()
    actual[2, 1] += 3  # flat index 9: 9 -> 12, abs 3, rel 3/9
    actual[0, 3] = 4.5  # flat index 3: 3 -> 4.5, abs 1.5, rel 0.5
    found = compare(actual, expected)
    assert found is not None
    assert found.index == (0, 3) and found.where == "output[0, 3]"  # flat 3 comes before flat 9
    assert (found.actual, found.expected, found.count, found.total) == (4.5, 3.0, 2, 12)
    assert found.max_abs == 3.0 and found.max_rel == 0.5  # max abs at [2, 1]; max rel 1.5/3 at [0, 3]
    msg = found.message()
    assert msg.startswith("first mismatch at output[0, 3]: 4.5, expected 3; 2 of 12 elements (16.7%)")
    assert "max abs error 3, max rel error 0.5" in msg
    # atol = max(1e-5, rtol x RMS |expected|) = 1.3e-6 x sqrt(sum(i^2, i<12) / 12) = 1.3e-6 x sqrt(506/12)
    # = 8.4e-6 < 1e-5: the table's atol stands (and is still called the scaled default)
    assert found.atol == pytest.approx(1e-5) and "= rtol x RMS |expected|" in msg


def test_paths_through_nested_outputs() -> None:
    t = torch.zeros(2, 2)
    bad = t.clone()
    bad[1, 0] = 1
    found = compare({"a": t, "b": (t, bad)}, {"a": t, "b": (t, t)})
    assert found is not None and found.where == "output['b'][1][1, 0]"
    Pair = namedtuple("Pair", "x y")
    found = compare(Pair(t, bad), Pair(t, t))
    assert found is not None and found.where == "output[1][1, 0]"


@pytest.mark.parametrize(("actual", "expected", "said"), [
    (torch.zeros(2, 3), torch.zeros(3, 2), "output has shape (2, 3), the reference's (3, 2)"),
    (torch.zeros(2), torch.zeros(2, dtype=torch.float16),
     "output is float32, the reference's is float16: cast one of them"),
    ((torch.zeros(1),) * 3, (torch.zeros(1),) * 2, "output has 3 items, the reference's 2"),
    ({"a": torch.zeros(1)}, {"b": torch.zeros(1)},
     "output lacks the reference's keys ['b'] and has keys the reference lacks ['a']"),
    (torch.zeros(1), [torch.zeros(1)], "output is a tensor, the reference's a list"),
    ([None], [torch.zeros(1)], "output[0] is a None, the reference's a tensor"),
    (("x",), ("y",), "output[0] is 'x', the reference's 'y'"),
])
def test_structure_differences_are_said_plainly(actual: Any, expected: Any, said: str) -> None:
    found = compare(actual, expected)
    assert found is not None and found.problem and found.message().startswith(said)


def test_nan_and_inf() -> None:
    nan, inf = math.nan, math.inf
    assert compare(torch.tensor([1.0, nan, inf]), torch.tensor([1.0, nan, inf])) is None  # NaN where ref has NaN
    found = compare(torch.tensor([1.0, nan]), torch.tensor([1.0, 2.0]))
    assert found is not None and found.index == (1,) and math.isnan(found.max_abs)
    found = compare(torch.tensor([inf]), torch.tensor([-inf]))
    assert found is not None and found.index == (0,)
    found = compare(torch.tensor([1e30]), torch.tensor([inf]))  # finite vs inf never close
    assert found is not None


def test_float16_defaults_and_the_scaled_atol() -> None:
    # rtol 1e-3: 1000 -> 1000.5 is 5e-4 off (passes), 1000 -> 1002 is 2e-3 off (float16 steps 0.5 there)
    e = torch.tensor([1000.0], dtype=torch.float16)
    assert compare(torch.tensor([1000.5], dtype=torch.float16), e, atol=0) is None
    assert compare(torch.tensor([1002.0], dtype=torch.float16), e, atol=0) is not None
    # RMS |expected| of [100, 0] is 100/sqrt(2) = 70.7, atol = 1e-3 x 70.7 = 0.0707: 0.05 passes, 0.2 does not
    e = torch.tensor([100.0, 0.0], dtype=torch.float16)
    assert compare(torch.tensor([100.0, 0.05], dtype=torch.float16), e) is None
    found = compare(torch.tensor([100.0, 0.2], dtype=torch.float16), e)
    assert found is not None and found.index == (1,) and found.atol == pytest.approx(0.1 / 2**0.5)
    found = compare(torch.tensor([100.0, 0.05], dtype=torch.float16), e, atol=1e-5)  # an explicit atol stands
    assert found is not None and not found.atol_scaled
    assert compare(torch.tensor([3]), torch.tensor([4])) is not None  # integers: exact


def _split_k(a: torch.Tensor, b: torch.Tensor, splits: int, drop: int = 0) -> torch.Tensor:
    """A split-K GEMM: float16 partial products (each rounded once), summed; `drop` leaves out the last
    `drop` steps of K (a loop-bound bug)."""
    k = a.shape[1] - drop
    step = a.shape[1] // splits
    parts = [(a[:, i:min(i + step, k)].float() @ b[i:min(i + step, k)].float()).half() for i in range(0, k, step)]
    return torch.stack(parts).float().sum(0).half()


def test_a_correct_reduction_in_another_order_passes_and_a_dropped_k_step_does_not() -> None:
    torch.manual_seed(0)
    a, b = torch.randn(64, 1024, dtype=torch.float16), torch.randn(1024, 64, dtype=torch.float16)
    ref = (a.float() @ b.float()).half()
    right = _split_k(a, b, 4)
    # Each partial (|x| ~ sqrt(256) = 16, float16 step 2^-6 there) is rounded once: errors ~0.01, which is
    # far more than 1e-5 + 1e-3 |expected| where an output (|x| ~ 32) cancels to near 0: assert_close's
    # tolerances refuse this correct kernel, the scaled atol (1e-3 x ~110) does not.
    assert compare(right, ref, atol=1e-5) is not None
    assert compare(right, ref) is None
    # 16 of 1024 products dropped: each output is off by ~sqrt(16) = 4, far past 0.11
    found = compare(_split_k(a, b, 4, drop=16), ref)
    assert found is not None and found.count > 0.9 * 64 * 64


def test_complex_tensors() -> None:
    e = torch.tensor([1 + 1j, 2 - 1j], dtype=torch.complex64)
    assert compare(e.clone(), e) is None
    found = compare(torch.tensor([1 + 1j, 2 + 1j], dtype=torch.complex64), e)
    assert found is not None and found.index == (1,) and found.max_abs == pytest.approx(2.0)  # |2j|


def test_python_numbers() -> None:
    assert compare(1.0, 1.0 + 1e-12) is None
    found = compare([1, 2.0], [1, 2.5])
    assert found is not None and found.where == "output[1]" and found.max_abs == 0.5
    assert compare(1, 2) is not None and compare(True, True) is None


def test_a_reference_writing_into_the_kernels_buffer_cannot_hide_an_error() -> None:
    buf = torch.zeros(4)

    def kernel() -> torch.Tensor:
        return buf.copy_(torch.tensor([1.0, 2.0, 0.0, 4.0]))

    def reference() -> torch.Tensor:
        return buf.copy_(torch.tensor([1.0, 2.0, 3.0, 4.0]))

    with pytest.raises(RooflineError, match=r"first mismatch at output\[2\]: 0, expected 3"):
        check_reference(kernel, reference)


def test_a_kernel_returning_nothing_cannot_be_checked() -> None:
    with pytest.raises(RooflineError, match=r"returned None.*return the output"):
        check_reference(lambda: None, lambda: torch.zeros(1))


def test_measure_refuses_a_wrong_kernel_before_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    def never(*_: Any, **__: Any) -> Any:
        raise AssertionError("a wrong kernel reached the timer or the target")

    monkeypatch.setattr(runner, "time_cpu", never)
    monkeypatch.setattr(runner, "resolve_target", never)
    x = torch.arange(8, dtype=torch.float32)
    wrong = torch.cat([x[:5] * 2, x[5:] * 2 + 1])  # wrong from index 5 on: 11 vs 10, 13 vs 12, 15 vs 14
    with pytest.raises(RooflineError) as info:
        runner.measure(lambda: wrong, ref=lambda: x * 2, flops=8, bytes=64, dtype="fp32", device="cpu", name="k")
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith("measure 'k': the kernel is wrong, not timing it: first mismatch at output[5]: 11, "
                          "expected 10; 3 of 8 elements (37.5%)")
    assert "max abs error 1, max rel error 0.1" in msg  # 1/10 at [5] is the largest of 1/10, 1/12, 1/14


def test_measure_times_a_right_kernel() -> None:
    x = torch.arange(64, dtype=torch.float32)
    rec = runner.measure(lambda: x * 2, ref=lambda: x + x, flops=64, bytes=512, dtype="fp32", device="cpu",
                         name="double", params={"n": 64}, rep_s=0.002)
    assert rec.timed and rec.op == "double" and rec.params == {"n": 64} and rec.time_samples_s


def test_measure_argument_checks() -> None:
    x = torch.ones(2)
    with pytest.raises(RooflineError, match=r"atol/rtol .* pass ref= too"):
        runner.measure(lambda: x, flops=1, bytes=8, atol=1e-3, device="cpu")
    with pytest.raises(RooflineError, match="measure: rtol must be >= 0, got -1"):
        runner.measure(lambda: x, ref=lambda: x, flops=1, bytes=8, rtol=-1, device="cpu")


def test_mismatch_message_of_a_structural_problem() -> None:
    assert Mismatch("output[0]", "has 3 items, the reference's 2").message() == \
        "output[0] has 3 items, the reference's 2"


def test_a_tolerance_is_offered_only_where_it_would_help() -> None:
    # a shape (or dtype, or structure) mismatch said "if this error is expected, pass atol=/rtol=": no tolerance
    # makes a (4,) output match a (5,) reference
    with pytest.raises(RooflineError) as info:
        check_reference(lambda: torch.ones(4), lambda: torch.ones(5))
    assert "shape (4,)" in str(info.value) and "atol" not in str(info.value)
    with pytest.raises(RooflineError, match=r"pass atol=/rtol=$"):
        check_reference(lambda: torch.ones(4), lambda: torch.zeros(4))
