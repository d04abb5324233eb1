"""GPU names given by hand outside `--gpu`: a prices file's keys (an unknown one is one line naming the closest
ids) and `advise` (a spec id, alias or NVML name, as `occupancy` takes); and the L40 spec added for issue 19."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import run, write

from roofline.analysis.advice import advise, with_advice
from roofline.ceilings.prices import load_prices
from roofline.ceilings.specs import gpu_ceilings, resolve
from roofline.core.dtypes import get_dtype
from roofline.core.errors import UsageError
from roofline.core.record import analytic_record, with_time
from roofline.ops import make

PRICES = """
[meta]
currency = "USD"
date = "2026-11-01"
source = "test prices"

[prices]
h300 = 3.0
"""


def test_an_unknown_gpu_in_a_prices_file_names_the_closest(tmp_path: Path) -> None:
    path = write(tmp_path / "prices.toml", PRICES)
    with pytest.raises(UsageError) as err:
        load_prices(path)
    msg = str(err.value)
    # "h300": h100 and h200 are closest (one character off), as `--gpu h300` says
    assert msg.startswith(f"{path}: prices.h300: unknown GPU 'h300' (closest: h100, h200")
    assert "\n" not in msg and len(msg) < 160 + len(str(path))  # one short line, not the 31 GPUs' 62 names


def test_the_cli_says_it_in_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path / "prices.toml", PRICES)
    code, out, err = run(capsys, "compare", "gemm", "--gpus", "h100", "--prices", str(path))
    assert code == 2 and err.count("\n") == 1 and "closest: h100" in err and not out


def _slow_gemm() -> object:
    """A compute-bound fp16 GEMM on the H100 timed at 4x its roofline time: advice fires (wave quantization,
    the fallback's profiling hint or others; which is not the point here)."""
    rec = analytic_record(make("gemm", m=4096), get_dtype("fp16"), gpu_ceilings(resolve("h100")))
    return with_time(rec, 4 * rec.roofline_time_s)


@pytest.mark.parametrize("name", ["h100", "H100-SXM", "NVIDIA H100 80GB HBM3"])
def test_advise_takes_spec_names(name: str) -> None:
    rec = _slow_gemm()
    assert advise(rec, name) == advise(rec, resolve("h100")) == advise(rec)  # the record's own GPU by default
    assert advise(rec, name).items  # something was said
    assert with_advice(rec, name) == with_advice(rec, resolve("h100"))


def test_advise_refuses_an_unknown_name() -> None:
    with pytest.raises(UsageError, match=r"unknown GPU 'h10' \(closest: h100"):
        advise(_slow_gemm(), "h10")


def test_the_l40_is_the_datasheets_half_rate_ad102() -> None:
    """specs/l40.toml: the L40 datasheet's dense column, and per-clock rates that reproduce it at 142 SMs x
    2490 MHz (half the L40S's tensor rate per clock: 512 against 1024 FLOP/clk/SM in FP16)."""
    l40, l40s = resolve("NVIDIA L40"), resolve("l40s")
    assert l40.id == "l40" and l40["sm_count"] == l40s["sm_count"] == 142
    assert (l40["fp32_dense_tflops"], l40["fp16_tensor_dense_tflops"], l40["fp8_tensor_dense_tflops"]) == \
        (90.5, 181.05, 362.0)
    for key, per_clock in [("fp32_dense_tflops", "fp32_flops_per_clock_per_sm"),
                           ("fp16_tensor_dense_tflops", "fp16_tensor_flops_per_clock_per_sm")]:
        rebuilt = l40[per_clock] * 142 * 2490e6 / 1e12  # 256 x 142 x 2.49 GHz = 90.51; 512 x ... = 181.03
        assert abs(rebuilt / l40[key] - 1) < 0.001, key
    assert l40s["fp16_tensor_flops_per_clock_per_sm"] == 2 * l40["fp16_tensor_flops_per_clock_per_sm"]
