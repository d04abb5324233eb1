"""The roofline math, with the arithmetic beside each expected value."""

from __future__ import annotations

import pytest

from roofline.ceilings.specs import gpu_ceilings, load_all, resolve
from roofline.core.dtypes import get_dtype
from roofline.core.errors import UsageError
from roofline.core.model import attainable, bound, choose_pipe, ridge_point, roofline_time
from roofline.core.record import analytic_record, with_time
from roofline.ops import make


def test_ridge_attainable_time_bound() -> None:
    # 100 TFLOP/s over 2 TB/s: ridge at 100e12 / 2e12 = 50 FLOP/byte
    assert ridge_point(100e12, 2e12) == 50
    # AI 10 is under the ridge: 10 x 2e12 = 20 TFLOP/s; AI 80 is over it: capped at 100 TFLOP/s
    assert attainable(10, 100e12, 2e12) == 20e12
    assert attainable(80, 100e12, 2e12) == 100e12
    # 1e12 FLOP / 100e12 = 10 ms; 1e9 B / 2e12 = 0.5 ms -> 10 ms, compute-bound
    assert roofline_time(1e12, 1e9, 100e12, 2e12) == pytest.approx(0.010)
    assert bound(1e12, 1e9, 100e12, 2e12) == "compute"
    assert bound(1e9, 1e9, 100e12, 2e12) == "memory"


def test_gemm_4096_fp16_on_a100_matches_issue() -> None:
    a100 = resolve("a100")
    rec = analytic_record(make("gemm", m=4096), get_dtype("fp16"), gpu_ceilings(a100))
    assert rec.flops == 137438953472  # 2 x 4096^3
    assert rec.bytes == 100663296  # 3 x 4096^2 x 2 bytes
    assert rec.arithmetic_intensity == pytest.approx(1365.33, abs=0.01)  # 2*4096^3 / (6*4096^2) = 4096/3
    assert rec.bound == "compute"
    # ridge = dense fp16 tensor peak / HBM bandwidth, read from the spec file itself
    assert rec.ridge_point == pytest.approx(
        a100["fp16_tensor_dense_tflops"] * 1e12 / (a100["memory_bandwidth_gbps"] * 1e9))
    assert rec.compute_pipe == "fp16_tensor_dense_tflops"


@pytest.mark.parametrize("spec_id", sorted(load_all()))
def test_relu_2_28_fp16_is_memory_bound_everywhere(spec_id: str) -> None:
    rec = analytic_record(make("relu", numel=2**28), get_dtype("fp16"), gpu_ceilings(load_all()[spec_id]))
    assert rec.flops == 2**28  # one max per element
    assert rec.bytes == 2**30  # read 2^28 x 2 B + write 2^28 x 2 B
    assert rec.bound == "memory"


def test_plain_pipe_and_no_tensor_cores() -> None:
    h100 = gpu_ceilings(resolve("h100"))
    fp16 = get_dtype("fp16")
    assert choose_pipe(h100, fp16, uses_tensor_cores=True).key == "fp16_tensor_dense_tflops"
    assert choose_pipe(h100, fp16, uses_tensor_cores=True, allow_tensor_cores=False).key != "fp16_tensor_dense_tflops"
    assert choose_pipe(h100, get_dtype("fp32"), uses_tensor_cores=True).key == "fp32_dense_tflops"


def test_fp8_on_a100_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="fp8"):
        analytic_record(make("gemm", m=256), get_dtype("fp8"), gpu_ceilings(resolve("a100")))


def test_clock_scaling_is_linear() -> None:
    spec = resolve("h100")
    half = gpu_ceilings(spec, spec["boost_clock_mhz"] / 2)
    full = gpu_ceilings(spec)
    assert half.compute["fp32_dense_tflops"] == pytest.approx(full.compute["fp32_dense_tflops"] / 2)
    assert half.memory["dram"] == full.memory["dram"]  # DRAM is not scaled with the SM clock


def test_with_time_fraction() -> None:
    rec = analytic_record(make("relu", numel=2**28), get_dtype("fp16"), gpu_ceilings(resolve("h100")))
    rec = with_time(rec, rec.roofline_time_s * 2)  # twice the roofline time: half the roofline
    assert rec.roofline_fraction == pytest.approx(0.5)
    assert rec.achieved_bytes_per_s == pytest.approx(rec.peak_bytes_per_s / 2)
