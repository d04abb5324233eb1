"""How CPU backends compute each dtype, per operator family: which measured CPU rate is an operator's roof.

A CPU roofline has one measured rate per dtype, the rate of a square torch matmul in that dtype
(`roofline calibrate`). That is the right roof for a matmul, not for every operator in that dtype: ATen's
CPU kernels for most families load bf16/fp16, convert to fp32 and do the arithmetic in fp32, so a bf16
attention on a CPU without bf16 units runs at the fp32 rate (35-44 GFLOP/s on the 2-core CI machine),
thirty times the bf16 matmul rate (1.3 GFLOP/s there). A roof must be the rate of the pipe the operator
really uses, or a record lands far above it.

NB: per family, not per kernel: a family whose kernels differ by backend (oneDNN with AMX, ATen without)
lists every dtype its kernels might compute in, and the fastest of those the calibration measured is the
roof (an upper bound either way).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CpuArithmetic:
    """For one operator family: the dtypes a reduced-precision input is computed in (the roof is the fastest
    measured of them), and why."""

    computes_in: dict[str, tuple[str, ...]]  # input dtype -> the dtypes whose measured rates may be its roof
    why: str


_NATIVE = CpuArithmetic({}, "a CPU matmul in that dtype: the rate the calibration measured for it")
_UPCAST = ("fp32",)
_VECTOR = CpuArithmetic(
    {"bf16": _UPCAST, "fp16": _UPCAST},
    "ATen's CPU vectorised kernels convert bf16/fp16 to fp32 and do the arithmetic in fp32")

# Families without an entry, and records without a family (a user's `measure`), are placed as `_NATIVE` when
# matmul-like and as `_VECTOR` otherwise (`cpu_arithmetic`).
CPU_ARITHMETIC: dict[str, CpuArithmetic] = {
    "gemm": _NATIVE,
    "conv": _NATIVE,
    # torch's CPU SDPA (the flash-attention CPU kernel) multiplies bf16/fp16 blocks through cpublas with fp32
    # accumulation: oneDNN's bf16 GEMM where the CPU has bf16 units (AMX, AVX512-BF16), fp32 arithmetic on
    # converted blocks where it has not.
    "attention": CpuArithmetic(
        {"bf16": ("bf16", "fp32"), "fp16": ("fp16", "fp32")},
        "torch's CPU attention (SDPA) computes bf16/fp16 blocks in fp32 unless the CPU has bf16 units"),
    "elementwise": _VECTOR,
    "norm": _VECTOR,
    "softmax": _VECTOR,
    "rope": _VECTOR,
}


def cpu_arithmetic(family: str | None, matmul_like: bool) -> CpuArithmetic:
    """The registry's entry for `family`; for an unknown one, a matmul's or a vector kernel's."""
    if family in CPU_ARITHMETIC:
        return CPU_ARITHMETIC[family]
    return _NATIVE if matmul_like else _VECTOR


def cpu_rate_key(compute: dict[str, float], dtype: str, family: str | None,
                 matmul_like: bool) -> tuple[str, str | None]:
    """The `compute` key ('cpu_fp32') whose rate is the roof of a `family` operator in `dtype`, and a note when
    it is not the dtype's own matmul rate (why not). The dtype's own key when no candidate was measured."""
    entry = cpu_arithmetic(family, matmul_like)
    own = f"cpu_{dtype}"
    candidates = [f"cpu_{d}" for d in entry.computes_in.get(dtype, ())]
    measured = [k for k in candidates if k in compute]
    if not measured:
        return own, None
    best = max(measured, key=lambda k: compute[k])
    if best == own:
        return own, None
    what = f"{family} " if family else ""
    return best, (f"{dtype} {what}on the CPU placed on the {best.removeprefix('cpu_')} rate, not the {dtype} matmul "
                  f"rate: {entry.why}")
