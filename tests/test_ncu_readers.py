"""roofline.ncu.read_csv: ncu's raw CSV (units row, thousands separators, n/a), splitting at marker kernels,
and scripts/ncu_compare.py's median over repeated calls. The CSVs are written here in the layout
`ncu --csv --page raw` prints: a header, a row of units, then one row per kernel."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path

import pytest
from helpers import ROOT, write

from roofline.core.errors import RooflineError
from roofline.core.record import Record
from roofline.ncu.read_csv import DURATION, SM_CLOCK, parse_raw_csv, read_raw_csv, split_calls

SPIN = "cuda::<unnamed>::spin_kernel(long)"


def _csv(rows: list[tuple[str, float, float]]) -> str:
    """(kernel name, duration in ns, SM clock in Hz) per kernel."""
    head = f'"ID","Kernel Name","{DURATION}","{SM_CLOCK["avg"]}"'
    units = '"","","nsecond","cycle/second"'
    body = [f'"{i}","{name}","{dur:,.0f}","{hz:,.0f}"' for i, (name, dur, hz) in enumerate(rows)]
    return "\n".join(["==PROF== noise line", head, units, *body]) + "\n"


def test_units_and_thousands_separators() -> None:
    head = f'"ID","Kernel Name","{DURATION}","dram__bytes_read.sum","l1tex__t_bytes.sum"'
    units = '"","","usecond","Mbyte","byte"'
    (k,) = parse_raw_csv([head, units, '"0","gemm","1,234.5","2,048","n/a"'])
    assert k.duration_s == pytest.approx(1234.5e-6)  # usecond -> s
    assert k.metrics["dram__bytes_read.sum"] == pytest.approx(2048e6)  # Mbyte -> bytes
    assert k.metrics["l1tex__t_bytes.sum"] is None  # n/a: not collected, never 0


def test_markers_split_calls_and_multi_kernel_calls_are_summed(tmp_path: Path) -> None:
    # call 1: one kernel of 30 µs at 2 GHz; call 2: two kernels, 10 µs at 1 GHz + 30 µs at 2 GHz
    p = write(tmp_path / "ncu.csv", _csv([(SPIN, 2000, 2e9), ("gemv", 30000, 2e9), (SPIN, 2000, 2e9),
                                         ("a", 10000, 1e9), ("b", 30000, 2e9), (SPIN, 2000, 2e9)]))
    calls = split_calls(read_raw_csv(p), "spin")
    assert len(calls) == 2
    assert calls[0].time_s == pytest.approx(30e-6) and calls[0].kernels == 1
    assert calls[1].time_s == pytest.approx(40e-6) and calls[1].kernels == 2
    # duration-weighted clock: (10 x 1 + 30 x 2) / 40 = 1.75 GHz
    assert calls[1].sm_clock_mhz == pytest.approx(1750)


def test_busiest_sm_clock_is_read_when_present() -> None:
    head = f'"ID","Kernel Name","{DURATION}","{SM_CLOCK["avg"]}","{SM_CLOCK["max"]}"'
    rows = ['"","","nsecond","cycle/second","cycle/second"',
            '"0","spin_kernel","2,000","2,000,000,000","2,000,000,000"',
            '"1","gemm","100,000","1,500,000,000","1,600,000,000"', '"2","spin_kernel","2,000","2e9","2e9"']
    (call,) = split_calls(parse_raw_csv([head, *rows]), "spin")
    # one kernel: the SM average 1.5 GHz, the busiest SM 1.6 GHz
    assert call.sm_clock_mhz == pytest.approx(1500) and call.sm_clock_max_mhz == pytest.approx(1600)


@pytest.mark.parametrize("text", ["", "no csv here\n", '"a","b"\n"1","2"\n', '"ID","Kernel Name"\n"x","k"\n'])
def test_bad_reports_are_one_line_errors(tmp_path: Path, text: str) -> None:
    with pytest.raises(RooflineError) as info:
        read_raw_csv(write(tmp_path / "bad.csv", text))
    assert "\n" not in str(info.value)


def _script():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("ncu_compare", ROOT / "scripts" / "ncu_compare.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _doc(rec: dict) -> str:
    base = {"variant": None, "params": {"m": 16}, "flops": 1.0, "bytes_read": 1.0, "bytes_written": 0.0,
            "bytes": 1.0, "arithmetic_intensity": 1.0, "gpu": "h200-sxm", "peak_flops_per_s": 1.0,
            "peak_bytes_per_s": 1.0, "ridge_point": 1.0, "roofline_time_s": 1.0}
    return json.dumps({"schema_version": 1, "device": {}, "records": [base | rec]})


def test_compare_takes_the_median_of_repeated_calls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = []
    for dur in (33100, 35300, 33300):  # three profiled calls of one entry: median 33.3 µs
        rows += [(SPIN, 2000, 2e9), ("gemv", dur, 1.8e9)]
    rows.append((SPIN, 2000, 2e9))
    write(tmp_path / "ncu.csv", _csv(rows))
    write(tmp_path / "r.json", _doc({"op": "gemv", "dtype": "bf16", "bound": "memory", "time_s": 34.0e-6,
                                     "clocks": {"sm_mhz": {"median": 1970.0}}}))
    assert _script().compare(str(tmp_path / "r.json"), str(tmp_path / "ncu.csv"), None) == 0
    out = capsys.readouterr().out
    assert "33.3 µs" in out  # the median, not the first call
    assert "1.021" in out  # 34.0 / 33.3
    assert "median of 3 profiled calls" in out


def test_memsets_are_summed_from_the_kernel_breakdown() -> None:
    mod = _script()
    base = Record.from_dict(json.loads(_doc({"op": "conv2d", "dtype": "fp16", "bound": "compute"}))["records"][0])
    # cuDNN's conv: two memsets of 0.74 µs and the kernel (one profiled call)
    conv = dataclasses.replace(base, kernels=["Memset (Device)", "conv"], kernel_times_s=[1.48e-6, 48.3e-6])
    assert mod.memset_s(conv) == pytest.approx(1.48e-6)
    assert mod.memset_s(dataclasses.replace(base, kernels=["gemv"], kernel_times_s=[33e-6])) == 0.0
    assert mod.memset_s(base) == 0.0  # records from before the breakdown existed
