"""Timing: statistics with a fake clock, budgets, the options and the pure parts of the CUDA timer, the clock
report, the memory guard, and the CPU path end to end."""

from __future__ import annotations

import ast
import dataclasses
import json

import numpy as np
import pytest
import torch
from helpers import ROOT, run

from roofline.core.document import Document, dumps, validate_document
from roofline.core.errors import RooflineError
from roofline.core.record import Record, Timing
from roofline.core.stats import NOISY_IQR_FRACTION, mad, median, outliers, quantile, summarize
from roofline.measuring import runner as measure_mod
from roofline.measuring.nvml import ClockReport
from roofline.measuring.sm_clock import (
    INKERNEL_PROBES,
    MIN_TRACES,
    PROBE_CYCLES,
    KernelClock,
    between_kernels_mhz,
    clock_report,
    trace_rounds,
    with_traced_ratio,
)
from roofline.measuring.timing import MIN_REPS, Measurement, plan_calls
from roofline.measuring.timing_cpu import time_cpu
from roofline.measuring.timing_cuda import BURST_GAP_FACTOR, BURST_MIN_GAP_S, TimingOptions, burst_gap_s


class FakeClock:
    """A clock that advances by a scripted duration each time the timed function runs."""

    def __init__(self, durations: list[float]) -> None:
        self.now = 0.0
        self.durations = list(durations)
        self.calls = 0

    def __call__(self) -> float:
        return self.now

    def work(self) -> None:
        self.now += self.durations[min(self.calls, len(self.durations) - 1)]
        self.calls += 1


def _record(**fields: object) -> Record:
    """A memory-bound record of 4 MB (what above_roof_notes reads), with `fields` replaced."""
    base = Record(op="relu", variant=None, params={}, dtype="fp32", flops=1e6, bytes_read=2e6, bytes_written=2e6,
                  bytes=4e6, bound="memory", roofline_fraction=1.0)
    return dataclasses.replace(base, **fields)  # type: ignore[arg-type]


def test_quantiles_match_numpy_linear() -> None:
    xs = [5.0, 1.0, 4.0, 2.0, 3.0, 10.0]
    for q in (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0):
        assert quantile(xs, q) == pytest.approx(float(np.quantile(xs, q)))
    assert median([1.0, 3.0, 2.0]) == 2.0
    # |x - 3| for 1..5 is 2,1,0,1,2 -> median 1
    assert mad([1.0, 2.0, 3.0, 4.0, 5.0]) == 1.0


def test_outliers_by_modified_z() -> None:
    # median 1.0, MAD 0.01: 0.6745 * (2.0 - 1.0) / 0.01 = 67 > 3.5 -> the 2.0 is an outlier
    xs = [0.99, 1.0, 1.01, 1.0, 0.99, 1.01, 2.0]
    assert outliers(xs) == [6]


def test_summary_noise_flag() -> None:
    steady = summarize([1.0] * 9 + [1.01])
    assert not steady.noisy
    noisy = summarize([1.0, 1.5, 1.0, 1.5, 1.0, 1.5, 1.0, 1.5])
    assert noisy.relative_iqr > NOISY_IQR_FRACTION and noisy.noisy


def test_plan_calls_budget_and_clamps() -> None:
    assert plan_calls(1e-3, 0.1, 10, 2000) == 100  # 100 ms / 1 ms
    assert plan_calls(1.0, 0.1, 10, 2000) == 10  # clamped up to the minimum
    assert plan_calls(1e-9, 0.1, 10, 2000) == 2000  # clamped down to the maximum


def test_burst_gap_only_for_compute_bound_operators() -> None:
    # a 3 ms compute-bound kernel: 2 x 3 ms = 6 ms of low-power spin before each sample; a 0.1 ms one gets the
    # 1 ms minimum; a memory-bound one runs back to back (no gap) whatever its length
    assert BURST_GAP_FACTOR == 2.0 and BURST_MIN_GAP_S == 0.001
    assert burst_gap_s(3e-3, compute_bound=True) == pytest.approx(6e-3)
    assert burst_gap_s(1e-4, compute_bound=True) == pytest.approx(1e-3)
    assert burst_gap_s(3e-3, compute_bound=False) == 0.0


def test_timing_options_refuse_unknown_choices_and_resolve_auto() -> None:
    for bad in ({"method": "nvtx"}, {"power": "turbo"}, {"flush_mode": "evict"}):
        with pytest.raises(ValueError, match="unknown"):
            TimingOptions(**bad)  # type: ignore[arg-type]
    # auto: a graph per sample, or (with a warm L2, where no flush lets the host run ahead) the whole loop
    assert TimingOptions().resolved_method == "graph"
    assert TimingOptions(warm_l2=True).resolved_method == "graph-loop"
    assert TimingOptions(method="events", warm_l2=True).resolved_method == "events"
    # auto times an operator shorter than SHORT_OP_S (20 µs) by its kernels' own timestamps; --timer forces
    assert TimingOptions().method_for(19e-6) == "cupti" and TimingOptions().method_for(21e-6) == "graph"
    assert TimingOptions(warm_l2=True).method_for(4e-6) == "cupti"
    assert TimingOptions(method="graph").method_for(4e-6) == "graph"
    assert TimingOptions(method="cupti").method_for(4e-3) == "cupti"
    # only a compute-bound operator timed under --power sustained wants the power cap's steady state
    assert TimingOptions(compute_bound=True, power="sustained").sustained
    assert not TimingOptions(compute_bound=True, power="burst").sustained
    assert not TimingOptions(compute_bound=False, power="sustained").sustained


def test_measure_api_passes_the_bound_to_the_gpu_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    """roofline.measure decides burst's gap from its own roofline verdict, as `analyze` does."""
    seen: list[TimingOptions] = []

    def fake_time_cuda(fn: object, options: TimingOptions, device: str, l2: object) -> object:
        seen.append(options)
        raise RooflineError("stop here")

    target = dataclasses.replace(measure_mod.resolve_target(gpu="h200-sxm", time=False), time_device="cuda:0")
    monkeypatch.setattr(measure_mod, "resolve_target", lambda **kw: target)
    monkeypatch.setattr(measure_mod, "time_cuda", fake_time_cuda)
    for flops, compute in ((1e12, True), (1e6, False)):  # AI 1e12/1e6 B >> ridge; 1 FLOP/B << ridge
        with pytest.raises(RooflineError):
            measure_mod.measure(lambda: None, flops=flops, bytes=1e6, dtype="bf16")
        assert seen[-1].compute_bound is compute


def test_time_cpu_keeps_every_sample_with_fake_clock() -> None:
    # first call 5 ms (warm-up planning), then a 1 ms steady state: 100 ms budget -> 100 samples
    clock = FakeClock([0.005] + [0.001] * 10_000)
    m = time_cpu(clock.work, warmup_s=0.004, rep_s=0.1, clock=clock)
    assert len(m.samples_s) == 100
    assert m.median_s == pytest.approx(0.001)
    assert m.method == "cpu-perf-counter"
    assert m.timing().stats is not None and m.timing().stats["n"] == 100


def test_time_cpu_minimum_samples_for_slow_calls() -> None:
    clock = FakeClock([0.5] * 100)
    m = time_cpu(clock.work, warmup_s=0.0, rep_s=0.1, clock=clock)
    assert len(m.samples_s) == 3  # > 0.2 s per call: three samples are enough and the budget is overrun anyway
    clock = FakeClock([0.05] * 100)
    m = time_cpu(clock.work, warmup_s=0.0, rep_s=0.1, clock=clock)
    assert len(m.samples_s) == MIN_REPS


def test_measurement_timing_writes_the_schema_fields_in_order() -> None:
    # the field order of core/record.py's Timing; a built Timing writes every field but phases_s (the runner's)
    m = Measurement([2e-6, 3e-6, 4e-6], "graph+burst", 12, 3e-6, True, flush_bytes=64, notes=["n"],
                    clock_samples_mhz=[1900.0], warmup_s=0.01, timer_overhead_s=1e-6, capture_s=0.002,
                    host_phases_s={"setup": 0.1})
    t = m.timing()
    assert isinstance(t, Timing)
    assert list(t.to_dict()) == ["method", "warmup_calls", "warmup_s", "reps", "estimate_s", "l2_flush",
                                 "flush_bytes", "stats", "notes", "timer_overhead_s", "sm_clock_samples_mhz",
                                 "warmup_min_s", "after_compute_s", "capture_s", "host_phases_s"]
    d = t.to_dict()
    assert d["after_compute_s"] is None  # written as null, as the timers always did
    assert d["reps"] == 3 and d["method"] == "graph+burst" and d["flush_bytes"] == 64
    # samples less the 1 µs timer cost: 1, 2, 3 µs -> median 2 µs
    assert d["stats"]["median"] == pytest.approx(2e-6) and d["stats"]["n"] == 3
    m.notes.append("later")
    assert t.notes == ["n"]  # the record's copy does not move with the measurement


def test_measurement_timing_round_trips_through_json() -> None:
    t = Measurement([1e-3, 2e-3], "cpu-perf-counter", 2, 1e-3, False).timing()
    assert Timing.from_dict(json.loads(json.dumps(t.to_dict()))).to_dict() == t.to_dict()


def test_clock_report_prefers_the_clock_during_the_kernel() -> None:
    nvml = ClockReport(sm_mhz=[1980.0, 1980.0, 1975.0], power_w=[600.0], reasons=0x4, max_sm_mhz=1980.0)
    between = [1900.0, 1950.0, 1920.0]
    traced = KernelClock([1600.0, 1640.0, 1620.0, 1610.0], "in-kernel clock trace", {"coverage": 0.98})
    c = clock_report(nvml, between, traced)
    # median of 1600, 1610, 1620, 1640 = 1615; min 1600, max 1640
    assert c.sm_mhz == {"median": 1615.0, "min": 1600.0, "max": 1640.0}
    assert c.sm_mhz_source == "in-kernel clock trace" and c.in_kernel_trace == {"coverage": 0.98}
    assert c.sm_mhz_nvml == {"median": 1980.0, "min": 1975.0, "max": 1980.0}
    assert c.sm_mhz_between_kernels == {"median": 1920.0, "min": 1900.0, "max": 1950.0}
    assert c.limited_by == ["power cap (software)"] and c.readings == 3
    # every key is written, None included, in the order records have always held them
    d = c.to_dict()
    assert list(d) == ["sm_mhz", "mem_mhz", "power_w", "temperature_c", "max_sm_mhz", "max_mem_mhz", "power_limit_w",
                       "limited_by", "readings", "sm_mhz_nvml", "sm_mhz_between_kernels", "sm_mhz_in_kernel",
                       "in_kernel_trace", "sm_mhz_source"]
    assert d["mem_mhz"] is None and d["power_limit_w"] is None


def test_clock_report_falls_back_to_the_probe_then_to_nvml() -> None:
    nvml = ClockReport(sm_mhz=[1980.0])
    c = clock_report(nvml, [1700.0], KernelClock([], ""))  # a trace that found no room on an SM
    assert c.sm_mhz == {"median": 1700.0, "min": 1700.0, "max": 1700.0}
    assert c.sm_mhz_source == "probe between kernels" and c.sm_mhz_in_kernel is None
    c = clock_report(nvml, [], None)
    assert c.sm_mhz == {"median": 1980.0, "min": 1980.0, "max": 1980.0} and c.sm_mhz_source == "nvml"
    assert c.sm_mhz_between_kernels is None and c.in_kernel_trace is None
    empty = clock_report(ClockReport(), [], None)  # no NVML either: the key is still there, as null
    assert empty.sm_mhz is None and "sm_mhz" in empty.to_dict() and empty.sm_mhz_source == "nvml"


def test_probe_clock_and_trace_rounds() -> None:
    # 100,000 cycles in 51 µs of which 1 µs is the probe's own overhead: 100,000 / 50 µs = 2000 MHz;
    # a probe no longer than its overhead is left out
    assert between_kernels_mhz([51e-6, 1e-6], 1e-6) == [pytest.approx(PROBE_CYCLES / 50e-6 / 1e6)]
    assert trace_rounds(1e-4) == INKERNEL_PROBES  # 10 ms / 0.1 ms = 100, clamped to 8
    assert trace_rounds(3e-3) == 4  # ceil(10 ms / 3 ms)
    assert trace_rounds(0.1) == MIN_TRACES


def test_traced_over_untraced_ratio_is_added_to_the_trace_detail() -> None:
    clock = KernelClock([1600.0], "in-kernel clock trace", {"traces": 1})
    # traced calls' median 120 µs over the samples' 100 µs: 1.2
    out = with_traced_ratio(clock, [120e-6, 118e-6, 122e-6], [100e-6, 99e-6, 101e-6])
    assert out.detail == {"traces": 1, "traced_over_untraced": pytest.approx(1.2)}
    assert clock.detail == {"traces": 1}  # a new value; the old one is unchanged
    assert with_traced_ratio(clock, [], [1.0]) is clock
    assert with_traced_ratio(KernelClock([], ""), [1.0], [1.0]).detail is None


def test_gpu_modules_import_torch_and_triton_only_when_they_run() -> None:
    # module-level imports only: a CPU-only machine (no triton here) can import the GPU timer and calibration
    modules = ["roofline/measuring/timing.py", "roofline/measuring/timing_cpu.py", "roofline/measuring/timing_cuda.py",
               "roofline/measuring/sm_clock.py", "roofline/measuring/cuda_events.py",
               "roofline/measuring/clocktrace.py", "roofline/measuring/calibrate.py",
               "roofline/measuring/calibrate_gpu.py"]
    top = []
    for path in modules:
        for node in ast.parse((ROOT / path).read_text()).body:
            if isinstance(node, ast.Import):
                top += [f"{path}: {a.name}" for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                top.append(f"{path}: {node.module}")
    assert len(top) > 20
    assert [t for t in top if t.split(": ")[1].split(".")[0] in ("torch", "triton", "cupy")] == []
    import roofline.measuring.calibrate_gpu  # noqa: F401  (importable here, where triton is not installed)


def test_memory_guard_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(measure_mod, "available_bytes", lambda device: 1e9)
    with pytest.raises(RooflineError, match=r"needs about 2\.0 GiB but cpu has 0\.9 GiB"):
        measure_mod.guard_memory(2 * 2**30, "cpu", "gemm fp32")
    measure_mod.guard_memory(0.5e9, "cpu", "gemm fp32")  # fits


def test_memory_guard_from_cli(capsys: pytest.CaptureFixture[str]) -> None:
    # 2^40 fp32 elements in and out: 8 TiB, more than any test machine has
    code, _, err = run(capsys, "analyze", "relu", "--numel", str(2**40), "--device", "cpu")
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 1 and len(errors) == 1 and "needs about" in errors[0] and "Traceback" not in err


def test_cpu_path_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "analyze", "gemm", "--m", "128", "--json")
    assert code == 0, err
    doc = validate_document(json.loads(out), "analyze --json")
    rec = doc.records[0]
    assert doc.device["kind"] == "cpu" and rec.gpu == "cpu"
    assert rec.dtype == "fp32"  # the CPU default
    assert rec.time_s is not None and rec.time_s > 0
    assert rec.time_samples_s is not None and len(rec.time_samples_s) >= 3
    assert rec.time_s == pytest.approx(median(rec.time_samples_s))
    assert rec.achieved_flops_per_s == pytest.approx(2 * 128**3 / rec.time_s)
    assert rec.roofline_fraction == pytest.approx(rec.roofline_time_s / rec.time_s)
    assert rec.impl == "torch.matmul"
    assert rec.roof_source == "measured"
    assert rec.timing is not None and rec.timing.method == "cpu-perf-counter" and rec.clocks is None


def test_cpu_table_says_it_ran_on_the_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "analyze", "relu", "--numel", "65536")
    assert code == 0
    assert "timed on the CPU" in err and "measured (median)" in out


def test_measure_api_on_cpu() -> None:
    import roofline

    a, b = torch.randn(64, 64), torch.randn(64, 64)
    rec = roofline.measure(lambda: a @ b, flops=2 * 64**3, bytes=3 * 64 * 64 * 4, dtype="fp32")
    assert rec.time_s is not None and rec.time_s > 0 and rec.op == "custom" and rec.bound in ("compute", "memory")
    # the record is a valid schema-v1 record, as JSON
    validate_document(json.loads(dumps(Document(device={}, records=[rec]))), "measure()")
    with pytest.raises(RooflineError):
        roofline.measure(lambda: None, flops=1, bytes=0, dtype="fp32")


def test_above_roof_notes_say_why() -> None:
    from roofline.measuring.runner import above_roof_notes

    assert above_roof_notes(_record(), "datasheet") == []  # on the roof: nothing to say
    # 2x the DRAM roof for a 4 MB working set: the caches served it
    assert "caches" in above_roof_notes(_record(roofline_fraction=2.0), "datasheet")[0]
    compute = _record(bound="compute", roofline_fraction=1.3)
    assert "calibrate" in above_roof_notes(compute, "measured")[0]
    assert "spec" in above_roof_notes(compute, "datasheet")[0]


def test_timer_overhead_is_subtracted_from_every_sample_and_kept() -> None:
    # raw event intervals 35, 36, 37 µs with an empty pair of 1.3 µs: the operator took 33.7, 34.7, 35.7 µs
    m = Measurement([35e-6, 36e-6, 37e-6], "graph", 10, 40e-6, True, timer_overhead_s=1.3e-6)
    assert m.times_s == pytest.approx([33.7e-6, 34.7e-6, 35.7e-6])
    assert m.median_s == pytest.approx(34.7e-6)
    assert m.samples_s == [35e-6, 36e-6, 37e-6]  # the raw samples are kept as measured
    t = m.timing()
    assert t.timer_overhead_s == 1.3e-6 and t.stats is not None and t.stats["median"] == pytest.approx(34.7e-6)


def test_cpu_timing_subtracts_nothing() -> None:
    clock = FakeClock([0.002])
    m = time_cpu(clock.work, clock=clock)
    assert m.timer_overhead_s == 0.0 and m.times_s == m.samples_s


def test_clockprobe_module_imports_without_loading_the_kernels() -> None:
    import sys

    import roofline.measuring.clocktrace as cp

    assert "roofline.measuring.clocktrace_ptx" not in sys.modules  # only a launch loads the driver and the PTX
    assert cp.MIN_PROBE_NS > 0 and isinstance(cp.available(), bool)


def test_clock_in_window_from_a_trace() -> None:
    from roofline.measuring.clocktrace import clock_in_window

    # a trace every 1000 ns: 2.0 cycles/ns (2000 MHz) until t=10000, then 1.5 cycles/ns; the window 2000..14000
    trace, c = [], 0
    for t in range(0, 20001, 1000):
        trace.append((t, c))
        c += 2000 if t < 10000 else 1500
    w = clock_in_window(trace, 2000, 14000)
    assert w is not None
    # inside: t = 2000..14000 (13 points); cycles 2000 x 8 + 1500 x 4 = 22000 over 12000 ns -> 1833.3 MHz
    assert w.mhz == pytest.approx(22000 / 12000 * 1e3)
    assert w.coverage == pytest.approx(1.0)
    assert w.early_mhz == pytest.approx(2000) and w.late_mhz == pytest.approx(1500)
    # a trace that started late covers part of the window; too few points inside gives None
    late = clock_in_window(trace, 9000, 30000)
    assert late is not None and late.coverage == pytest.approx(11000 / 21000)
    assert clock_in_window(trace, 100, 2500) is None


def test_probe_slots_fill_in_order_and_refuse_past_the_end() -> None:
    from roofline.measuring.clocktrace import ClockTrace

    tr = ClockTrace(2, device="cpu")  # the buffer logic only; launching needs a CUDA driver and a GPU
    assert tr._take() == 0 and tr._take() == 1
    with pytest.raises(IndexError, match="clock trace slots used up"):
        tr._take()
    assert tr.traces() == [[], []]  # a trace that stopped early leaves zeroed points: they are left out
    tr._out[0, :3] = torch.tensor([[100, 7], [600, 1007], [1100, 2007]])
    assert tr.traces()[0] == [(100, 7), (600, 1007), (1100, 2007)]


def test_stamp_slots_are_16_byte_aligned_and_addressable_ahead() -> None:
    from roofline.measuring.clocktrace import ClockProbe, Stamps

    st = Stamps(4, device="cpu")
    base = st._out.data_ptr()
    # 64-bit stamps padded to 16 bytes each: slot k at base + 16 k; ahead(k) is the k-th next stamp's slot
    assert st.ahead(0) == base and st.ahead(1) == base + 16
    st._take()
    assert st.ahead(0) == base + 16 and st.ahead(2) == base + 48
    with pytest.raises(IndexError):
        st.ahead(3)
    probe = ClockProbe(2, device="cpu")
    assert probe._ptr(1) - probe._ptr(0) == 32  # (cycles, ns, start) padded to 32 bytes


def test_kernel_breakdown_is_shown_beside_each_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    from roofline.report.text import record_rows

    code, out, _ = run(capsys, "analyze", "relu", "--numel", "4096", "--device", "cpu", "--json")
    rec = validate_document(json.loads(out), "analyze --json").records[0]
    assert code == 0 and rec.kernels == []  # the CPU has no device kernels to profile
    # as the GPU path records them: one profiled call, names and their device times in launch order
    rec = dataclasses.replace(rec, kernels=["Memset (Device)", "conv_kernel"], kernel_times_s=[0.74e-6, 48.3e-6])
    shown = dict(record_rows(rec))["kernels"].splitlines()
    assert shown[0].endswith("Memset (Device)") and "0.74" in shown[0]
    assert shown[1].endswith("conv_kernel") and "48.3" in shown[1]
