"""Low precisions: FP6 and the block-scaled FP4/FP6 formats (bytes per element with their scales), their
tensor-core roofs on Blackwell specs, and an fp4 GEMM through `analyze` and `compare` (analytic only)."""

from __future__ import annotations

import json

import pytest
from helpers import run

from roofline.ceilings.specs import FIELDS_BY_KEY, gpu_ceilings, load_all
from roofline.core.dtypes import DTYPES, check_timeable, get_dtype
from roofline.core.errors import UsageError
from roofline.core.model import choose_pipe
from roofline.ops.gemm import GEMM, mm_flops, mm_traffic

SPECS = load_all()
LOW = ("fp6", "mxfp6", "mxfp4", "nvfp4")
# `analyze`/`compare` take fp4 once the GEMM family lists the formats and the roofline refuses a GPU without the
# pipe (ops/gemm.py GEMM_DTYPES and out_bytes_for, core/model.py choose_pipe on DType.needs_tensor_pipe). Until
# then these tests are expected failures; strict, so they turn red the day the wiring lands without them passing.
WIRED = "nvfp4" in GEMM.dtypes
needs_wiring = pytest.mark.xfail(not WIRED, strict=True, reason="fp4 not yet in GEMM_DTYPES / choose_pipe")


# ------------------------------------------------------------------ bytes per element, from the format definitions
@pytest.mark.parametrize(("name", "bits", "expected"), [
    ("fp6", "6 bits, no scale: 6 / 8", 0.75),
    ("mxfp6", "OCP MX: 6-bit elements + one 8-bit E8M0 scale per 32: (6 + 8/32) / 8 = 6.25 / 8", 0.78125),
    ("mxfp4", "OCP MX: 4-bit E2M1 + one 8-bit E8M0 scale per 32: (4 + 8/32) / 8 = 4.25 / 8", 0.53125),
    ("nvfp4", "NVFP4: 4-bit E2M1 + one 8-bit E4M3 scale per 16: (4 + 8/16) / 8 = 4.5 / 8", 0.5625),
])
def test_bytes_per_element_include_the_block_scales(name: str, bits: str, expected: float) -> None:
    assert get_dtype(name).bytes == expected, bits


@pytest.mark.parametrize(("name", "element_bytes"), [("fp6", 0.75), ("mxfp6", 0.75), ("mxfp4", 0.5), ("nvfp4", 0.5),
                                                    ("fp8", 1), ("bf16", 2)])
def test_element_bytes_leave_the_scale_out(name: str, element_bytes: float) -> None:
    # what an alignment rule counts: 16 bytes hold 32 fp4 elements whatever the scales' share of the traffic
    assert get_dtype(name).element_bytes == element_bytes


def test_a_4096_square_nvfp4_matrix_with_its_scales() -> None:
    # 4096 x 4096 = 16,777,216 elements: 8,388,608 bytes of E2M1 + 1,048,576 E4M3 scales (one per 16) = 9,437,184
    assert 4096 * 4096 * get_dtype("nvfp4").bytes == 8_388_608 + 1_048_576


def test_fp6_names_and_the_ambiguous_fp4() -> None:
    for alias in ("e2m3", "e3m2", "FP6_E2M3"):
        assert get_dtype(alias).name == "fp6"
    with pytest.raises(UsageError) as exc:
        get_dtype("fp4")
    assert "nvfp4" in str(exc.value) and "mxfp4" in str(exc.value) and "\n" not in str(exc.value)


def test_low_precisions_run_only_on_their_tensor_pipe() -> None:
    # the dtypes a GPU without the tensor pipe cannot run at all: the roofline refuses instead of falling back
    assert {d.name for d in DTYPES.values() if d.needs_tensor_pipe} == {"tf32", "bf16", "fp8", "int8", *LOW}
    for name in LOW:
        assert get_dtype(name).tensor_field in FIELDS_BY_KEY, name
    assert get_dtype("fp6").tensor_field == get_dtype("mxfp6").tensor_field == "fp6_tensor_dense_tflops"
    assert get_dtype("nvfp4").tensor_field == get_dtype("mxfp4").tensor_field == "fp4_tensor_dense_tflops"


def test_timing_refuses_sub_byte_dtypes_in_one_line() -> None:
    check_timeable(get_dtype("fp16"))  # torch has it: no error
    for name in LOW:
        with pytest.raises(UsageError) as exc:
            check_timeable(get_dtype(name))
        assert "analytic only" in str(exc.value) and "--no-time" in str(exc.value) and "\n" not in str(exc.value)


# ------------------------------------------------------------------ the roofs
@pytest.mark.parametrize(("gpu", "name", "peak_tflops"), [
    ("b200", "nvfp4", 9000), ("b200", "mxfp4", 9000), ("b200", "fp6", 4500), ("b200", "mxfp6", 4500),
    ("gb200", "nvfp4", 10000), ("gb200", "mxfp6", 5000), ("b300", "nvfp4", 13125), ("b300", "fp6", 4500),
])
def test_blackwell_fp4_and_fp6_roofs(gpu: str, name: str, peak_tflops: float) -> None:
    # dense peaks from the datasheets (see the spec files' sources): B200 FP4 18 PF sparse / 2 = 9000, FP8/FP6
    # 9 PF sparse / 2 = 4500; GB200 20 / 2 and 10 / 2; B300 FP4 13125 dense (HGX table), FP6 72 PF / 8 / 2
    pipe = choose_pipe(gpu_ceilings(SPECS[gpu]), get_dtype(name), uses_tensor_cores=True)
    assert pipe.flops_per_s == peak_tflops * 1e12


def test_fp4_gemm_traffic_counts_the_scales() -> None:
    # C = A @ B, 4096^3, nvfp4 operands, bf16 output (2 bytes), as the fp8 GEMM model writes bf16:
    # A + B = 2 x 4096^2 x 0.5625 = 18,874,368 bytes read; C = 4096^2 x 2 = 33,554,432 bytes written
    t = mm_traffic(4096, 4096, 4096, 1, get_dtype("nvfp4"), out_bytes=2.0)
    assert t.bytes_read == 18_874_368 and t.bytes_written == 33_554_432
    assert mm_flops(4096, 4096, 4096) == 2 * 4096**3


@needs_wiring
def test_a_gpu_without_fp4_tensor_cores_refuses_fp4() -> None:
    with pytest.raises(UsageError, match="nvfp4"):
        choose_pipe(gpu_ceilings(SPECS["h100-sxm"]), get_dtype("nvfp4"), uses_tensor_cores=True)


# ------------------------------------------------------------------ the CLI, analytic
@needs_wiring
def test_analyze_nvfp4_gemm_on_b200(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "analyze", "gemm", "--m", "4096", "--dtype", "nvfp4", "--gpu", "b200", "--no-time",
                       "--json")
    assert code == 0
    rec = json.loads(out)["records"][0]
    assert rec["flops"] == 2 * 4096**3  # 137,438,953,472
    # A and B in nvfp4 with their E4M3 scales, C in bf16: 4096^2 x (0.5625 + 0.5625 + 2) = 52,428,800
    assert rec["bytes_read"] == 2 * 4096**2 * 0.5625 and rec["bytes_written"] == 4096**2 * 2
    assert rec["compute_pipe"] == "fp4_tensor_dense_tflops" and rec["peak_flops_per_s"] == 9000e12
    assert rec["bound"] == "compute"  # AI = 137.4e9 / 52.4e6 = 2621 FLOP/B, above the ridge 9000e12 / 7.7e12 = 1169


@needs_wiring
def test_compare_nvfp4_gemm_says_h100_cannot(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "compare", "gemm", "--m", "4096", "--dtype", "nvfp4", "--gpus", "b200,h100", "--json")
    assert code == 0
    rows = {r["gpu"]: r for r in json.loads(out)["gpus"]}
    assert rows["b200"]["status"] == "ok" and rows["b200"]["peak_flops_per_s"] == 9000e12
    h100 = rows["h100-sxm"]
    assert h100["status"] == "unsupported" and "nvfp4" in h100["reason"] and "\n" not in h100["reason"]
