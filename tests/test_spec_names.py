"""GPU names given by hand outside `--gpu`: a prices file's keys (an unknown one is one line naming the closest
ids) and `advise` (a spec id, alias or NVML name, as `occupancy` takes)."""

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
    assert "\n" not in msg and len(msg) < 160 + len(str(path))  # one short line, not the 30 GPUs' 60 names


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
