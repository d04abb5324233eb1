"""Timing on the CPU path: statistics with a fake clock, budgets, the memory guard, the CPU path end to end."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch

from roofline.cli.app import main
from roofline.core.errors import RooflineError
from roofline.core.stats import NOISY_IQR_FRACTION, mad, median, outliers, quantile, summarize
from roofline.measuring import runner as measure_mod
from roofline.measuring.timing import BURST_GAP_FACTOR, BURST_MIN_GAP_S, MIN_REPS, burst_gap_s, plan_calls, time_cpu


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


def test_measure_api_passes_the_bound_to_the_gpu_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    """roofline.measure decides burst's gap from its own roofline verdict, as `analyze` does."""
    seen: dict[str, object] = {}

    def fake_time_cuda(fn: object, device: str, l2: object, warm_l2: bool, **kw: object) -> object:
        seen.update(kw)
        raise RooflineError("stop here")

    target = dataclasses.replace(measure_mod.resolve_target(gpu="h200-sxm", time=False), time_device="cuda:0")
    monkeypatch.setattr(measure_mod, "resolve_target", lambda **kw: target)
    monkeypatch.setattr(measure_mod, "time_cuda", fake_time_cuda)
    for flops, compute in ((1e12, True), (1e6, False)):  # AI 1e12/1e6 B >> ridge; 1 FLOP/B << ridge
        with pytest.raises(RooflineError):
            measure_mod.measure(lambda: None, flops=flops, bytes=1e6, dtype="bf16")
        assert seen["compute_bound"] is compute


def test_time_cpu_keeps_every_sample_with_fake_clock() -> None:
    # first call 5 ms (warm-up planning), then a 1 ms steady state: 100 ms budget -> 100 samples
    clock = FakeClock([0.005] + [0.001] * 10_000)
    m = time_cpu(clock.work, warmup_s=0.004, rep_s=0.1, clock=clock)
    assert len(m.samples_s) == 100
    assert m.median_s == pytest.approx(0.001)
    assert m.method == "cpu-perf-counter"
    assert m.timing_dict()["stats"]["n"] == 100


def test_time_cpu_minimum_samples_for_slow_calls() -> None:
    clock = FakeClock([0.5] * 100)
    m = time_cpu(clock.work, warmup_s=0.0, rep_s=0.1, clock=clock)
    assert len(m.samples_s) == 3  # > 0.2 s per call: three samples are enough and the budget is overrun anyway
    clock = FakeClock([0.05] * 100)
    m = time_cpu(clock.work, warmup_s=0.0, rep_s=0.1, clock=clock)
    assert len(m.samples_s) == MIN_REPS


def test_memory_guard_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(measure_mod, "available_bytes", lambda device: 1e9)
    with pytest.raises(RooflineError, match=r"needs about 2\.0 GiB but cpu has 0\.9 GiB"):
        measure_mod.guard_memory(2 * 2**30, "cpu", "gemm fp32")
    measure_mod.guard_memory(0.5e9, "cpu", "gemm fp32")  # fits


def test_memory_guard_from_cli(capsys: pytest.CaptureFixture[str]) -> None:
    # 2^40 fp32 elements in and out: 8 TiB, more than any test machine has
    code = main(["analyze", "relu", "--numel", str(2**40), "--device", "cpu"])
    _, err = capsys.readouterr()
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 1 and len(errors) == 1 and "needs about" in errors[0] and "Traceback" not in err


def test_cpu_path_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["analyze", "gemm", "--m", "128", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    rec = doc["records"][0]
    assert doc["device"]["kind"] == "cpu" and rec["gpu"] == "cpu"
    assert rec["dtype"] == "fp32"  # the CPU default
    assert rec["time_s"] > 0 and len(rec["time_samples_s"]) >= 3
    assert rec["time_s"] == pytest.approx(median(rec["time_samples_s"]))
    assert rec["achieved_flops_per_s"] == pytest.approx(2 * 128**3 / rec["time_s"])
    assert rec["roofline_fraction"] == pytest.approx(rec["roofline_time_s"] / rec["time_s"])
    assert rec["impl"] == "torch.matmul"
    assert rec["roof_source"] == "measured"


def test_cpu_table_says_it_ran_on_the_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["analyze", "relu", "--numel", "65536"])
    out, err = capsys.readouterr()
    assert code == 0
    assert "timed on the CPU" in err and "measured (median)" in out


def test_measure_api_on_cpu() -> None:
    import torch

    import roofline

    a, b = torch.randn(64, 64), torch.randn(64, 64)
    rec = roofline.measure(lambda: a @ b, flops=2 * 64**3, bytes=3 * 64 * 64 * 4, dtype="fp32")
    assert rec["time_s"] > 0 and rec["op"] == "custom" and rec["bound"] in ("compute", "memory")
    from roofline.core.document import new_document, validate_document

    validate_document(new_document({}, [rec]), "measure()")  # the record is a valid schema-v1 record
    with pytest.raises(RooflineError):
        roofline.measure(lambda: None, flops=1, bytes=0, dtype="fp32")


def test_above_roof_notes_say_why() -> None:
    from roofline.measuring.runner import above_roof_notes

    base = {"bytes": 4e6, "roofline_fraction": 1.0, "bound": "memory"}
    assert above_roof_notes(base, "datasheet") == []  # on the roof: nothing to say
    # 2x the DRAM roof for a 4 MB working set: the caches served it
    assert "caches" in above_roof_notes({**base, "roofline_fraction": 2.0}, "datasheet")[0]
    compute = {**base, "bound": "compute", "roofline_fraction": 1.3}
    assert "calibrate" in above_roof_notes(compute, "measured")[0]
    assert "spec" in above_roof_notes(compute, "datasheet")[0]


def test_timer_overhead_is_subtracted_from_every_sample_and_kept() -> None:
    from roofline.measuring.timing import Measurement

    # raw event intervals 35, 36, 37 µs with an empty pair of 1.3 µs: the operator took 33.7, 34.7, 35.7 µs
    m = Measurement([35e-6, 36e-6, 37e-6], "graph", 10, 40e-6, True, timer_overhead_s=1.3e-6)
    assert m.times_s == pytest.approx([33.7e-6, 34.7e-6, 35.7e-6])
    assert m.median_s == pytest.approx(34.7e-6)
    assert m.samples_s == [35e-6, 36e-6, 37e-6]  # the raw samples are kept as measured
    d = m.timing_dict()
    assert d["timer_overhead_s"] == 1.3e-6 and d["stats"]["median"] == pytest.approx(34.7e-6)


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

    code = main(["analyze", "relu", "--numel", "4096", "--device", "cpu", "--json"])
    rec = json.loads(capsys.readouterr().out)["records"][0]
    assert code == 0 and rec["kernels"] == []  # the CPU has no device kernels to profile
    # as the GPU path records them: one profiled call, names and their device times in launch order
    rec["kernels"], rec["kernel_times_s"] = ["Memset (Device)", "conv_kernel"], [0.74e-6, 48.3e-6]
    shown = dict(record_rows(rec))["kernels"].splitlines()
    assert shown[0].endswith("Memset (Device)") and "0.74" in shown[0]
    assert shown[1].endswith("conv_kernel") and "48.3" in shown[1]
