"""scripts/ncu_compare.py: splitting ncu's CSV at the marker kernels, and the median over repeated calls."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "ncu_compare.py"


def _module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("ncu_compare", SCRIPT)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _csv(rows: list[tuple[str, float, float]]) -> str:
    """ncu --csv --page raw: a header, a row of units, then one row per kernel (duration ns, clock Hz)."""
    head = '"ID","Kernel Name","gpu__time_duration.sum","sm__cycles_elapsed.avg.per_second"'
    units = '"","","nsecond","cycle/second"'
    body = [f'"{i}","{name}","{dur:,.0f}","{hz:,.0f}"' for i, (name, dur, hz) in enumerate(rows)]
    return "\n".join(["==PROF== noise line", head, units, *body]) + "\n"


def test_markers_split_calls_and_multi_kernel_calls_are_summed(tmp_path: Path) -> None:
    mod = _module()
    spin = "cuda::<unnamed>::spin_kernel(long)"
    p = tmp_path / "ncu.csv"
    # call 1: one kernel of 30 µs at 2 GHz; call 2: two kernels, 10 µs at 1 GHz + 30 µs at 2 GHz
    p.write_text(_csv([(spin, 2000, 2e9), ("gemv", 30000, 2e9), (spin, 2000, 2e9), ("a", 10000, 1e9),
                       ("b", 30000, 2e9), (spin, 2000, 2e9)]))
    calls = mod.parse_ncu(str(p))
    assert len(calls) == 2
    assert calls[0]["time_s"] == pytest.approx(30e-6) and calls[0]["kernels"] == 1
    assert calls[1]["time_s"] == pytest.approx(40e-6) and calls[1]["kernels"] == 2
    # duration-weighted clock: (10 x 1 + 30 x 2) / 40 = 1.75 GHz
    assert calls[1]["sm_clock_mhz"] == pytest.approx(1750)


def test_compare_takes_the_median_of_repeated_calls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mod = _module()
    spin = "cuda::<unnamed>::spin_kernel(long)"
    rows = []
    for dur in (33100, 35300, 33300):  # three profiled calls of one entry: median 33.3 µs
        rows += [(spin, 2000, 2e9), ("gemv", dur, 1.8e9)]
    rows.append((spin, 2000, 2e9))
    (tmp_path / "ncu.csv").write_text(_csv(rows))
    rec = {"op": "gemv", "params": {"m": 16}, "dtype": "bf16", "bound": "memory", "time_s": 34.0e-6,
           "clocks": {"sm_mhz": {"median": 1970.0}}}
    (tmp_path / "r.json").write_text(json.dumps({"records": [rec]}))
    assert mod.compare(str(tmp_path / "r.json"), str(tmp_path / "ncu.csv"), None) == 0
    out = capsys.readouterr().out
    assert "33.3 µs" in out  # the median, not the first call
    assert "1.021" in out  # 34.0 / 33.3
    assert "median of 3 profiled calls" in out


def test_busiest_sm_clock_is_read_when_present(tmp_path: Path) -> None:
    mod = _module()
    head = ('"ID","Kernel Name","gpu__time_duration.sum","sm__cycles_elapsed.avg.per_second",'
            '"sm__cycles_elapsed.max.per_second"')
    rows = ['"","","nsecond","cycle/second","cycle/second"',
            '"0","spin_kernel","2,000","2,000,000,000","2,000,000,000"',
            '"1","gemm","100,000","1,500,000,000","1,600,000,000"', '"2","spin_kernel","2,000","2e9","2e9"']
    p = tmp_path / "ncu.csv"
    p.write_text("\n".join([head, *rows]) + "\n")
    (call,) = mod.parse_ncu(str(p))
    # one kernel: the SM average 1.5 GHz, the busiest SM 1.6 GHz
    assert call["sm_clock_mhz"] == pytest.approx(1500) and call["sm_clock_max_mhz"] == pytest.approx(1600)


def test_memsets_are_summed_from_the_kernel_breakdown() -> None:
    mod = _module()
    # cuDNN's conv: two memsets of 0.74 µs and the kernel (one profiled call)
    rec = {"kernels": ["Memset (Device)", "conv"], "kernel_times_s": [1.48e-6, 48.3e-6]}
    assert mod.memset_s(rec) == pytest.approx(1.48e-6)
    assert mod.memset_s({"kernels": ["gemv"], "kernel_times_s": [33e-6]}) == 0.0
    assert mod.memset_s({"kernels": ["Memset (Device)"]}) == 0.0  # records from before the breakdown existed
