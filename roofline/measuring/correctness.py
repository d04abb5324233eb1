"""Is a kernel's output the reference's? Checked once before timing: a fast wrong kernel is the most common
benchmarking mistake.

`compare(actual, expected)` walks tensors and (nested) tuples, lists and dicts of them and returns the first
`Mismatch` (where, by how much) or None; `check_reference(fn, ref)` runs both callables once and raises one
one-line RooflineError when they disagree. An element is close when

    |actual - expected| <= atol + rtol * |expected|

as in `torch.isclose` and `torch.testing.assert_close`, with rtol by dtype (TOLERANCES) and, unless given,
atol scaled to the output (SCALED_ATOL). torch is imported only when a tensor is met, so the walk over plain
Python values runs without it.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from roofline.core.errors import RooflineError

# (rtol, atol) by torch dtype name. The floating and complex rows are torch.testing.assert_close's defaults
# (torch/testing/_comparison.py, _DTYPE_PRECISIONS, chosen in pytorch/pytorch#32538): rtol is about the
# dtype's resolution (fp16's 10-bit mantissa: 2^-10 ~ 1e-3; bf16's 7 bits: 2^-7, doubled to 1.6e-2),
# so a result rounded once more or in another order still passes, and a wrong one does not.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex32": (1e-3, 1e-5),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
    # fp8 is not in torch's table (it would compare it exactly): rtol is one step of the mantissa (3 bits for
    # e4m3: 2^-3; 2 bits for e5m2: 2^-2), atol the format's smallest subnormal (2^-9; 2^-16).
    "float8_e4m3fn": (2**-3, 2**-9),
    "float8_e4m3fnuz": (2**-3, 2**-9),
    "float8_e5m2": (2**-2, 2**-16),
    "float8_e5m2fnuz": (2**-2, 2**-16),
}
# A tensor's default atol is rtol x the root mean square of its finite |expected| (at least the table's atol):
# a reduction summed in another order (split-K, other tiles) rounds partial sums of the output's typical size,
# so an element that cancels to near 0 is off by a few units in the last place of that size. assert_close's
# atol (1e-5) refuses such a correct kernel (tests/test_correctness.py: a float16 split-K GEMM on the CPU).
# The typical size, not the largest: with rtol x max|expected| a bf16 GEMM with K=1024 (max ~5x its RMS)
# let `a @ b + 1` through on the H200, a wrong kernel off by 4 bf16 steps at typical values.
SCALED_ATOL = True
# Integers, booleans and any dtype not listed must match exactly, as assert_close does.
EXACT: tuple[float, float] = (0.0, 0.0)
# Plain Python floats are compared as float64.
PYTHON_FLOAT = "float64"
# A NaN where the reference has a NaN is a match: a kernel that reproduces the reference's NaNs (a fully
# masked softmax row, say) is as right as the reference. A NaN anywhere else is a mismatch.
EQUAL_NAN = True


def default_tolerance(dtype_name: str) -> tuple[float, float]:
    """(rtol, atol) for a dtype named as torch names it ('float16'); exact for integers and unknown dtypes."""
    return TOLERANCES.get(dtype_name.removeprefix("torch."), EXACT)


@dataclass(frozen=True)
class Mismatch:
    """Where an output differs from the reference's. `problem` is set when they cannot be compared element by
    element (shape, dtype, structure); otherwise the value fields describe the elements that are not close."""

    path: str  # 'output', 'output[0]', "output['logits']"
    problem: str = ""
    index: tuple[int, ...] | None = None  # the first element (row-major) that is not close
    actual: complex | float | None = None
    expected: complex | float | None = None
    count: int = 0  # elements not close
    total: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    dtype: str = ""
    rtol: float = 0.0
    atol: float = 0.0
    atol_scaled: bool = False  # atol is the default, rtol x the RMS of |expected| (SCALED_ATOL)

    @property
    def where(self) -> str:
        """The path and the first failing index: 'output[0][2, 5]'."""
        if not self.index:
            return self.path
        return f"{self.path}[{', '.join(str(i) for i in self.index)}]"

    def message(self) -> str:
        """One line: where, got/expected, how many elements, the largest errors and the tolerance used."""
        if self.problem:
            return f"{self.path} {self.problem}"
        share = f" ({self.count / self.total:.1%})" if self.total else ""
        dtype = f"{self.dtype}: " if self.dtype else ""
        scaled = " = rtol x RMS |expected|" if self.atol_scaled else ""
        return (f"first mismatch at {self.where}: {_num(self.actual)}, expected {_num(self.expected)}; {self.count} "
                f"of {self.total} elements{share} are off by more than atol + rtol x |expected| ({dtype}rtol "
                f"{self.rtol:g}, atol {self.atol:.3g}{scaled}); max abs error {_num(self.max_abs)}, max rel error "
                f"{_num(self.max_rel)}")


def _num(x: complex | float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.6g}"


def _is_tensor(x: Any) -> bool:
    torch = sys.modules.get("torch")  # no tensor can exist before torch is imported
    return torch is not None and isinstance(x, torch.Tensor)


def _kind(x: Any) -> str:
    if _is_tensor(x):
        return "tensor"
    return "None" if x is None else type(x).__name__


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float, complex)) and not isinstance(x, bool)


def compare(actual: Any, expected: Any, rtol: float | None = None, atol: float | None = None,
            path: str = "output") -> Mismatch | None:
    """The first place `actual` differs from `expected`, or None when every element is close.

    Tensors are compared element by element (shapes and dtypes must be equal); tuples and lists item by item
    (a tuple and a list of the same items match); mappings key by key; Python numbers with float64's
    tolerances; anything else with ==. A tolerance left None is the dtype's default: rtol from TOLERANCES,
    atol scaled to the output (SCALED_ATOL)."""
    if _is_tensor(actual) or _is_tensor(expected):
        if not (_is_tensor(actual) and _is_tensor(expected)):
            return Mismatch(path, f"is a {_kind(actual)}, the reference's a {_kind(expected)}")
        return _compare_tensors(actual, expected, rtol, atol, path)
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        missing = [k for k in expected if k not in actual]
        extra = [k for k in actual if k not in expected]
        if missing or extra:
            said = [f"lacks the reference's keys {missing}" if missing else "",
                    f"has keys the reference lacks {extra}" if extra else ""]
            return Mismatch(path, " and ".join(s for s in said if s))
        for k in expected:
            found = compare(actual[k], expected[k], rtol, atol, f"{path}[{k!r}]")
            if found:
                return found
        return None
    if isinstance(actual, (tuple, list)) and isinstance(expected, (tuple, list)):
        if len(actual) != len(expected):
            return Mismatch(path, f"has {len(actual)} items, the reference's {len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            found = compare(a, e, rtol, atol, f"{path}[{i}]")
            if found:
                return found
        return None
    if _is_number(actual) and _is_number(expected):
        return _compare_numbers(actual, expected, rtol, atol, path)
    if type(actual) is not type(expected) and not (_is_number(actual) or _is_number(expected)):
        return Mismatch(path, f"is a {_kind(actual)}, the reference's a {_kind(expected)}")
    if actual != expected:
        return Mismatch(path, f"is {actual!r}, the reference's {expected!r}")
    return None


def _tolerance(dtype_name: str, rtol: float | None, atol: float | None) -> tuple[float, float]:
    d_rtol, d_atol = default_tolerance(dtype_name)
    return (d_rtol if rtol is None else float(rtol)), (d_atol if atol is None else float(atol))


def _compare_numbers(actual: complex, expected: complex, rtol: float | None, atol: float | None,
                     path: str) -> Mismatch | None:
    """Two Python numbers, as two one-element float64 tensors would be compared."""
    exact = isinstance(actual, int) and isinstance(expected, int)
    r, a = EXACT if exact else _tolerance(PYTHON_FLOAT, rtol, atol)
    if actual == expected or (EQUAL_NAN and _isnan(actual) and _isnan(expected)):
        return None
    diff = abs(actual - expected)
    finite = _isfinite(actual) and _isfinite(expected)
    if finite and diff <= a + r * abs(expected):
        return None
    rel = diff / abs(expected) if expected != 0 else math.inf
    return Mismatch(path, index=None, actual=actual, expected=expected, count=1, total=1, max_abs=diff,
                    max_rel=rel, dtype="int" if exact else "float", rtol=r, atol=a)


def _isnan(x: complex) -> bool:
    return math.isnan(x.real) or math.isnan(x.imag) if isinstance(x, complex) else math.isnan(x)


def _isfinite(x: complex) -> bool:
    return math.isfinite(x.real) and math.isfinite(x.imag) if isinstance(x, complex) else math.isfinite(x)


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The row-major multi-index of a flat index (torch.unravel_index needs torch 2.2)."""
    out = []
    for size in reversed(shape):
        flat, i = divmod(flat, size)
        out.append(i)
    return tuple(reversed(out))


def _compare_tensors(actual: Any, expected: Any, rtol: float | None, atol: float | None,
                     path: str) -> Mismatch | None:
    """Element by element, widened to float64 (complex128) on the kernel's device.

    NB: the widened copies cost 8 (16) bytes per element for as long as the comparison runs."""
    import torch

    if tuple(actual.shape) != tuple(expected.shape):
        return Mismatch(path, f"has shape {tuple(actual.shape)}, the reference's {tuple(expected.shape)}")
    dtype = str(actual.dtype).removeprefix("torch.")
    if actual.dtype != expected.dtype:
        ref_dtype = str(expected.dtype).removeprefix("torch.")
        return Mismatch(path, f"is {dtype}, the reference's is {ref_dtype}: cast one of them so that both "
                              "return the same dtype")
    r, a_tol = _tolerance(dtype, rtol, atol)
    total = actual.numel()
    if total == 0:
        return None
    wide = torch.complex128 if actual.is_complex() else torch.float64
    a = _plain(actual).to(wide)
    e = _plain(expected).to(device=a.device, dtype=wide)
    scaled = atol is None and SCALED_ATOL and r > 0
    if scaled:
        finite = e.abs()[torch.isfinite(e)]
        a_tol = max(a_tol, r * float(finite.square().mean().sqrt().item())) if finite.numel() else a_tol
    same = a == e  # exact equality, infinities of one sign included
    if EQUAL_NAN:
        same |= torch.isnan(a) & torch.isnan(e)
    diff = torch.where(same, torch.zeros((), dtype=torch.float64, device=a.device), (a - e).abs())
    close = same | (torch.isfinite(a) & torch.isfinite(e) & (diff <= a_tol + r * e.abs()))
    bad = ~close
    count = int(bad.sum().item())
    if count == 0:
        return None
    first = int(bad.reshape(-1).to(torch.uint8).argmax().item())  # argmax returns the first maximal index
    index = _unravel(first, tuple(actual.shape))
    rel = torch.where(diff == 0, torch.zeros((), dtype=torch.float64, device=a.device), diff / e.abs())
    got, want = a.reshape(-1)[first].item(), e.reshape(-1)[first].item()
    return Mismatch(path, index=index, actual=got, expected=want, count=count, total=total,
                    max_abs=float(diff.max().item()), max_rel=float(rel.max().item()), dtype=dtype, rtol=r,
                    atol=a_tol, atol_scaled=scaled)


def _plain(t: Any) -> Any:
    """A dense, non-quantized view of a tensor to compare values on."""
    t = t.detach()
    if t.is_sparse:
        t = t.to_dense()
    if t.is_quantized:
        t = t.dequantize()
    return t


def snapshot(value: Any) -> Any:
    """A copy of an output's tensors (same nesting), so that a reference that writes into the same buffers
    cannot make a wrong kernel look right."""
    if _is_tensor(value):
        return value.detach().clone()
    if isinstance(value, Mapping):
        return {k: snapshot(v) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
        return type(value)(*(snapshot(v) for v in value))
    if isinstance(value, (tuple, list)):
        return type(value)(snapshot(v) for v in value)
    return value


def check_reference(fn: Callable[[], Any], ref: Callable[[], Any], rtol: float | None = None,
                    atol: float | None = None, what: str = "the kernel") -> None:
    """Run `fn` then `ref` once each and refuse (one-line RooflineError) when their outputs differ."""
    actual = snapshot(fn())
    expected = ref()
    if actual is None:
        raise RooflineError(f"{what} returned None, so it cannot be checked against ref=: return the output "
                            "tensor(s) from the callable")
    found = compare(actual, expected, rtol, atol)
    if found is not None:
        hint = "" if found.problem else "; if this error is expected, pass atol=/rtol="  # no tolerance fixes a shape
        raise RooflineError(f"{what} is wrong, not timing it: {found.message()}{hint}")
