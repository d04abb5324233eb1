"""Energy on the roofline: the counter arithmetic (wrap-around, reset), the edge-bounded window driven through
its seam by real-shaped counter sequences, joules per call and their split, the fitted energy model on
synthetic readings with known answers, the power roof, and the refusals (--energy on the CPU: one line, exit 2).

The counter sequences copy what NVML's nvmlDeviceGetTotalEnergyConsumption did on an H200 (driver 580.159,
2026-12-01): a change every 97-100 ms, by that period's energy in mJ (7611 mJ at 80 W idle, ~65 J at 650 W
under a bf16 GEMM)."""

from __future__ import annotations

import math

import pytest

from roofline.core.energy import (
    COUNTER_MODULUS,
    CalibrationPoint,
    CounterWindow,
    EnergyError,
    EnergyModel,
    counter_delta,
    energy_fields,
    fit_energy_model,
    flops_per_j_roof,
    power_roof_flops_per_s,
    sustained_clock_mhz,
)
from roofline.measuring.energy import idle_window, window

# --- the counter's arithmetic


def test_delta_plain_and_across_a_wrap():
    assert counter_delta(1000, 8611) == 7611
    # 2**64 - 100 mJ, then 7511 mJ past the wrap: 100 + 7511 = 7611 mJ
    assert counter_delta(COUNTER_MODULUS - 100, 7511) == 7611
    assert counter_delta(250, 30, modulus=256) == 36  # 6 to the top, 30 past it


def test_a_counter_that_went_back_from_low_in_its_range_was_reset():
    with pytest.raises(EnergyError, match="reset"):
        counter_delta(50_000, 1_000)


def test_a_window_without_a_change_is_refused_never_zero():
    w = CounterWindow(((0.0, 5000), (1.0, 5000)))  # two readings, same value
    with pytest.raises(EnergyError, match="did not advance"):
        _ = w.power_w
    with pytest.raises(EnergyError):
        CounterWindow(((0.0, 5000),))


# --- the window, through its seam


class SimCounter:
    """An NVML-like counter on a simulated clock: it changes every `period_s` (+ a repeating jitter of up to 3 ms,
    as measured), to the energy so far at `watts` in whole mJ, starting from `start_mj` (wrapping at `modulus`);
    each chunk of work advances the clock by `chunk_s`."""

    def __init__(self, watts: float, period_s: float = 0.1, start_mj: int = 123_456, chunk_s: float = 0.005,
                 modulus: int = COUNTER_MODULUS, stuck_after_s: float | None = None) -> None:
        self.watts, self.period_s, self.start, self.chunk_s, self.modulus = watts, period_s, start_mj, chunk_s, modulus
        self.stuck_after_s = stuck_after_s
        self.now = 0.0
        self.reads = 0

    def update_time(self, k: int) -> float:
        return k * self.period_s - (0.003 * ((k * 7) % 4) / 3)  # jitter 0, 1, 2, 3 ms early

    def value_at(self, t: float) -> int:
        k = int(t / self.period_s) + 1
        while k > 0 and self.update_time(k) > t:
            k -= 1
        last = self.update_time(k) if k > 0 else 0.0
        if self.stuck_after_s is not None:
            last = min(last, self.stuck_after_s)
        return (self.start + int(self.watts * last * 1000)) % self.modulus

    def read(self) -> tuple[float, int]:
        self.reads += 1
        return self.now, self.value_at(self.now)

    def chunk(self) -> None:
        self.now += self.chunk_s


def test_window_gives_the_power_within_the_edge_jitter():
    c = SimCounter(watts=650.0)
    w = window(c, c.chunk)
    # edges land on updates; the power over >= 10 updates and >= 1 s is 650 W within the 3 ms jitter (0.3%)
    assert w.updates >= 10 and w.seconds >= 1.0
    assert w.power_w == pytest.approx(650.0, rel=0.005)
    figures = w.counter_figures()
    assert figures["update_period_s"] == pytest.approx(0.1, abs=0.004)
    assert figures["resolution_mj"] == 1


def test_window_across_a_wrap_of_the_counter():
    c = SimCounter(watts=80.0, start_mj=COUNTER_MODULUS - 20_000)  # wraps after ~0.25 s
    w = window(c, c.chunk)
    assert w.edges[0][1] > w.edges[-1][1]  # the raw readings wrapped
    assert w.power_w == pytest.approx(80.0, rel=0.005)


def test_a_counter_that_stops_advancing_is_refused():
    c = SimCounter(watts=300.0, stuck_after_s=0.45)
    with pytest.raises(EnergyError, match="did not advance"):
        window(c, c.chunk, stuck_after_s=2.0)
    assert c.now > 2.0  # it waited the whole grace period before refusing


def test_a_slow_counter_widens_the_window():
    c = SimCounter(watts=200.0, period_s=0.25)  # a counter four times slower than the H200's
    w = window(c, c.chunk)
    assert w.updates >= 10 and w.seconds >= 2.2  # ten updates, not one second, bound it
    assert w.power_w == pytest.approx(200.0, rel=0.005)


def test_idle_window_uses_the_host_nap(monkeypatch):
    c = SimCounter(watts=80.0)
    monkeypatch.setattr("roofline.measuring.energy.time.sleep", lambda s: c.chunk())
    assert idle_window(c).power_w == pytest.approx(80.0, rel=0.005)


# --- joules per call


def test_energy_fields_split_static_and_dynamic():
    # 650 W for 1.2 s; one call takes 1.6 ms: 650 * 0.0016 = 1.04 J, of which 118 W * 0.0016 = 0.1888 J static
    w = CounterWindow(((0.0, 0), (1.2, 780_000)))
    e = energy_fields(w, 0.0016, flops=2 * 8192**3, nbytes=3 * 8192**2 * 2, static_w=118.0, static_source="test")
    assert e["energy_j"] == pytest.approx(1.04)
    assert e["static_j"] == pytest.approx(0.1888)
    assert e["dynamic_j"] == pytest.approx(1.04 - 0.1888)
    assert e["flops_per_j"] == pytest.approx(2 * 8192**3 / 1.04)
    assert e["bytes_per_j"] == pytest.approx(3 * 8192**2 * 2 / 1.04)
    assert e["calls"] == pytest.approx(1.2 / 0.0016)


def test_energy_fields_refuse_a_non_positive_time():
    with pytest.raises(EnergyError):
        energy_fields(CounterWindow(((0.0, 0), (1.0, 1000))), 0.0, 1.0, 1.0, None)


# --- the energy model


def _model_points() -> tuple[dict[str, float], float, float, float, list[CalibrationPoint]]:
    """Readings made from a known model: 150 W while a kernel runs, bf16 0.9 pJ/FLOP, fp8 0.5, fp32 (FMA) 3.0, HBM
    read 60 and write 30 pJ/B, over 118 W static."""
    e = {"bf16_tensor_dense_tflops": 0.9, "fp8_tensor_dense_tflops": 0.5, "fp32_dense_tflops": 3.0}
    e_r, e_w, active, static = 60.0, 30.0, 150.0, 118.0

    def point(name: str, flops: dict[str, float], read: float, write: float) -> CalibrationPoint:
        watts = static + active + sum(e[p] * 1e-12 * r for p, r in flops.items()) + (e_r * read + e_w * write) * 1e-12
        return CalibrationPoint(name=name, flops_per_s=flops, read_bytes_per_s=read, write_bytes_per_s=write,
                                power_w=watts, sm_mhz=1500.0)

    pts = [point("bf16 GEMM", {"bf16_tensor_dense_tflops": 620e12}, 0.17e12, 0.08e12),
           point("fp8 GEMM", {"fp8_tensor_dense_tflops": 1100e12}, 0.2e12, 0.1e12),
           point("FP32 FMA", {"fp32_dense_tflops": 60e12}, 0.0, 0.001e12),
           point("HBM read", {}, 4.3e12, 0.0), point("HBM write", {}, 0.0, 4.1e12),
           point("HBM copy", {}, 1.9e12, 1.9e12), point("torch copy", {}, 1.6e12, 1.6e12)]
    return e, e_r, e_w, active, pts


def test_fit_recovers_a_known_model():
    e, e_r, e_w, active, pts = _model_points()
    m = fit_energy_model(pts, static_w=118.0, power_cap_w=700.0, idle_w=80.0, max_sm_mhz=1980.0,
                         form="active+flop+rw")
    for pipe, pj in e.items():
        assert m.pj_per_flop[pipe] == pytest.approx(pj, rel=1e-6)
    assert m.pj_per_byte_read == pytest.approx(e_r, rel=1e-6)
    assert m.pj_per_byte_written == pytest.approx(e_w, rel=1e-6)
    assert m.active_w == pytest.approx(active, rel=1e-6)
    assert m.residual == pytest.approx(0.0, abs=1e-9)
    assert m.sm_clock_mhz == 1500.0
    again = EnergyModel.from_dict(m.to_dict())
    assert again.pj_per_flop == m.pj_per_flop and again.points == m.points
    # a pipe without its own figure uses the one it shares units with: fp16 tensor -> bf16 tensor
    assert m.pipe_figure("fp16_tensor_dense_tflops") == pytest.approx(0.9, rel=1e-6)
    assert m.pipe_figure("fp64_tensor_dense_tflops") is None


def test_fit_recovers_the_default_form_with_a_read_write_overlap():
    # readings made from a known "flop+rw+mix" model: bf16 0.8 pJ/FLOP, fp8 0.45, FP32 2.8, read 107, write 64 and
    # 31 pJ per byte of min(read, written), no watts for a kernel merely running (the H200's fitted figures,
    # docs/measurements.md, rounded)
    e = {"bf16_tensor_dense_tflops": 0.8, "fp8_tensor_dense_tflops": 0.45, "fp32_dense_tflops": 2.8}
    e_r, e_w, e_mix, static = 107.0, 64.0, 31.0, 125.0

    def point(name: str, flops: dict[str, float], read: float, write: float) -> CalibrationPoint:
        watts = static + sum(e[p] * 1e-12 * r for p, r in flops.items()) + \
            (e_r * read + e_w * write + e_mix * min(read, write)) * 1e-12
        return CalibrationPoint(name, flops, read, write, watts, 1980.0)

    pts = [point("bf16 GEMM", {"bf16_tensor_dense_tflops": 610e12}, 0.15e12, 0.075e12),
           point("fp8 GEMM", {"fp8_tensor_dense_tflops": 1200e12}, 0.15e12, 0.15e12),
           point("FP32 FMA", {"fp32_dense_tflops": 62e12}, 0.0, 0.004e12),
           point("HBM read", {}, 3.9e12, 0.0), point("HBM write", {}, 0.0, 4.1e12),
           point("HBM copy", {}, 1.76e12, 1.76e12), point("torch copy", {}, 1.92e12, 1.92e12)]
    m = fit_energy_model(pts, static_w=static, power_cap_w=700.0)  # the default form
    for pipe, pj in e.items():
        assert m.pj_per_flop[pipe] == pytest.approx(pj, rel=1e-6)
    assert (m.pj_per_byte_read, m.pj_per_byte_written, m.pj_per_byte_mixed) == \
        pytest.approx((e_r, e_w, e_mix), rel=1e-6)
    assert m.active_w == 0.0 and m.residual == pytest.approx(0.0, abs=1e-9)
    # a copy of 1 GB each way: 107 + 64 + 31 pJ/B x 1e9 = 0.202 J beside the static 125 W x 1 ms
    assert m.energy_j("bf16_tensor_dense_tflops", 0.0, 1e9, 1e9, 1e-3) == pytest.approx(0.125 + 0.202)
    assert EnergyModel.from_dict(m.to_dict()).pj_per_byte_mixed == pytest.approx(e_mix)
    # the power roof's per-byte energy at a read share of 2/3: 2/3 x 107 + 1/3 x 64 + 1/3 x 31 pJ
    assert m.j_per_byte(2 / 3) == pytest.approx((2 / 3 * 107 + 1 / 3 * 64 + 1 / 3 * 31) * 1e-12)


def test_fit_refuses_an_unknown_form():
    _e, _r, _w, _a, pts = _model_points()
    with pytest.raises(EnergyError, match="unknown energy model form"):
        fit_energy_model(pts, static_w=118.0, power_cap_w=700.0, form="cubic")


def test_fit_clamps_a_negative_term_to_zero():
    # HBM powers below what the GEMM's bytes imply would make pJ/B negative: set to 0 and the rest refitted
    pts = [CalibrationPoint("gemm", {"bf16_tensor_dense_tflops": 600e12}, 0.2e12, 0.0, 118 + 0.9e-12 * 600e12),
           CalibrationPoint("hbm", {}, 4e12, 0.0, 110.0)]
    m = fit_energy_model(pts, static_w=118.0, power_cap_w=700.0, form="flop+rw")
    assert m.pj_per_byte_read == 0.0
    assert m.pj_per_flop["bf16_tensor_dense_tflops"] == pytest.approx(0.9, rel=1e-6)


def test_fit_refuses_too_few_points():
    with pytest.raises(EnergyError, match="cannot fit"):
        fit_energy_model([CalibrationPoint("gemm", {"bf16_tensor_dense_tflops": 6e14}, 2e11, 1e11, 640.0)], 118.0,
                         700.0)


def test_model_rejects_a_cap_below_static_power():
    with pytest.raises(ValueError):
        EnergyModel(pj_per_flop={"x": 1.0}, pj_per_byte_read=1.0, pj_per_byte_written=1.0, static_w=700.0,
                    power_cap_w=600.0)


# --- the power roof


def _model() -> EnergyModel:
    return EnergyModel(pj_per_flop={"bf16_tensor_dense_tflops": 0.9}, pj_per_byte_read=20.0, pj_per_byte_written=20.0,
                       static_w=118.0, active_w=82.0, power_cap_w=700.0)


def test_power_roof_at_known_intensities():
    m = _model()
    # (700 - 118 - 82) W / (0.9 pJ + 20 pJ / 1000) = 500 / 0.92e-12 = 543.5 TFLOP/s at I = 1000 FLOP/B
    assert power_roof_flops_per_s(m, "bf16_tensor_dense_tflops", 1000.0) == pytest.approx(500 / 0.92e-12)
    # at I = 10: 500 / (0.9 + 2.0) pJ = 172 TFLOP/s; the roof falls as intensity falls
    assert power_roof_flops_per_s(m, "bf16_tensor_dense_tflops", 10.0) == pytest.approx(500 / 2.9e-12)
    assert power_roof_flops_per_s(m, "fp8_tensor_dense_tflops", 10.0) is None
    assert power_roof_flops_per_s(m, "bf16_tensor_dense_tflops", 0.0) == 0.0


def test_sustained_clock_under_the_cap():
    m = _model()
    # a GEMM of 400,000 FLOP per SM cycle (I = 1000): the roof's 543.5 TFLOP/s is reached at 543.5e12 / 4e5 Hz
    # = 1359 MHz
    assert sustained_clock_mhz(m, "bf16_tensor_dense_tflops", 1000.0, 4e5, 1980.0) == \
        pytest.approx(500 / 0.92e-12 / 4e5 / 1e6)
    # a kernel of few FLOPs per cycle is not held down: the max clock
    assert sustained_clock_mhz(m, "bf16_tensor_dense_tflops", 1000.0, 1e5, 1980.0) == 1980.0


def test_energy_roofline_flops_per_joule():
    m = _model()
    # at 500 TFLOP/s and I = 1000: 1 / ((118 + 82) / 5e14 + 0.9e-12 + 0.02e-12) FLOP per J
    assert flops_per_j_roof(m, "bf16_tensor_dense_tflops", 1000.0, 5e14) == \
        pytest.approx(1 / (200 / 5e14 + 0.92e-12))
    # (118 + 82) W * 2 ms + 0.9 pJ * 1e12 + 20 pJ * (1e9 + 5e8) = 0.4 + 0.9 + 0.03 J
    assert m.energy_j("bf16_tensor_dense_tflops", 1e12, 1e9, 5e8, 0.002) == pytest.approx(1.33)
    assert math.isfinite(m.energy_j("fp16_tensor_dense_tflops", 1e12, 0.0, 0.0, 0.002))


# --- the model form, chosen on the H200's recorded readings


def _forms_script():
    import importlib.util
    import sys

    from helpers import ROOT

    spec = importlib.util.spec_from_file_location("energy_model_forms",
                                                  ROOT / "scripts" / "experiments" / "energy_model_forms.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_the_default_form_is_the_one_the_recorded_readings_choose():
    """scripts/experiments/energy_model_forms.py on docs/results/energy/ (the H200, 2026-12-01): fitted on call 3's
    9 calibration kernels, the form that predicts most of the 40 suite readings within 10% is core's default, and
    core's fit of it on the same points gives the script's coefficients (both weigh points by 1 / power)."""
    from roofline.core.energy import DEFAULT_FORM, ENERGY_FORMS, MIX

    forms = _forms_script()
    cal, static_w = forms.calibration(forms.RESULTS / "call3_model.json")
    st = forms.suite()
    assert (len(cal), len(st)) == (9, 40)
    errors = {f: forms.cal_to_suite(cal, st, terms, static_w)[1] for f, terms in forms.FORMS.items()}
    best = forms.best_form(cal, errors)
    assert forms.CORE_FORMS[best] == DEFAULT_FORM and MIX in ENERGY_FORMS[DEFAULT_FORM]
    within = int((abs(errors[best]) <= 0.10).sum())
    main_form = next(f for f, c in forms.CORE_FORMS.items() if c == "active+flop+rw")
    assert within == 16 and int((abs(errors[main_form]) <= 0.10).sum()) == 12  # docs/measurements.md's table
    coef = forms.fit(cal, forms.FORMS[best], static_w)
    import json

    points = [CalibrationPoint(**p) for p in json.loads((forms.RESULTS / "call3_model.json").read_text())
              ["energy_model"]["points"]]
    m = fit_energy_model(points, static_w=static_w, power_cap_w=700.0)
    assert m.pj_per_flop["bf16_tensor_dense_tflops"] == pytest.approx(coef[0] * 1e12, rel=1e-3)
    assert (m.pj_per_byte_read, m.pj_per_byte_written, m.pj_per_byte_mixed) == \
        pytest.approx(tuple(coef[3:] * 1e12), rel=1e-3)


def test_the_model_table_names_the_overlap_term_and_no_active_watts_when_none():
    # call 3's calibration points refitted in the default form: no watts for a kernel running, an overlap term
    import json

    from helpers import ROOT

    from roofline.report.energy import energy_model_table

    d = json.loads((ROOT / "docs" / "results" / "energy" / "call3_model.json").read_text())
    points = [CalibrationPoint(**p) for p in d["energy_model"]["points"]]
    m = fit_energy_model(points, static_w=d["energy_model"]["static_w"], power_cap_w=700.0)
    title = energy_model_table(m, d["details"]).title
    assert "read+write overlap 31.3 pJ/B" in title and "while a kernel runs" not in title
    assert "HBM read 107, write 63.6" in title


def test_a_window_marks_each_change_of_the_counter_for_the_works_own_clock():
    # measure_fn takes the time per call between the window's first and last edge (marked on the CUDA stream),
    # not over the warm-up too: a power-capped GEMM's clock falls during its first second on the H200
    c = SimCounter(watts=650.0)
    marks: list[float] = []
    w = window(c, c.chunk, on_edge=lambda: marks.append(c.now))
    assert len(marks) == len(w.edges) and marks[0] == w.edges[0][0] and marks[-1] == w.edges[-1][0]


def test_a_chunk_is_a_graph_only_where_one_can_be_captured():
    # measure_fn's chunk: `calls` calls of the work, as one CUDA graph where asked and capture works; on this
    # CPU-only torch the capture fails, and the calls are launched one by one, saying why
    from roofline.measuring.energy import _chunk

    ran: list[int] = []
    run, how = _chunk(lambda: ran.append(1), 3, graph=True)
    assert how.startswith("launched one by one (CUDA graph capture failed: ")
    run()
    assert len(ran) == 3
    run, how = _chunk(lambda: ran.append(1), 2, graph=False)
    assert how == "launched one by one"
    run()
    assert len(ran) == 5


class _SlowCounter:
    """A real-time counter that changes every `period_s` and takes `read_s` to read (NVML's read kept the host
    for ~5 ms in some windows on the H200)."""

    modulus = 2**64

    def __init__(self, period_s: float, read_s: float, stuck: bool = False) -> None:
        import time

        self.t0, self.period_s, self.read_s, self.stuck, self.reads = time.perf_counter(), period_s, read_s, stuck, 0

    def read(self) -> tuple[float, int]:
        import time

        time.sleep(self.read_s)
        self.reads += 1
        t = time.perf_counter()
        return t, 0 if self.stuck else 1000 + int((t - self.t0) / self.period_s) * 50


def test_a_slow_counter_read_on_its_own_thread_holds_back_no_launch():
    # the launching loop runs chunks (here 1 ms each) while the reader waits 4 ms per read: several chunks per
    # read, where window() runs one per read; each change is marked once, from the reader
    import time

    from roofline.measuring.energy import threaded_window

    c = _SlowCounter(period_s=0.01, read_s=0.004)
    chunks: list[int] = []
    marks: list[int] = []
    w = threaded_window(c, lambda: (time.sleep(0.001), chunks.append(1)), lambda: marks.append(len(chunks)),
                        min_updates=5, min_window_s=0.05)
    assert w.updates >= 5 and w.seconds >= 0.05 and len(marks) == len(w.edges)
    assert len(chunks) > 2 * c.reads
    assert w.power_w == pytest.approx(50 / 1e3 / 0.01, rel=0.3)  # 50 mJ per 10 ms


def test_a_stuck_counter_on_the_reader_thread_raises_in_the_launching_one():
    import time

    from roofline.core.energy import EnergyError
    from roofline.measuring.energy import threaded_window

    with pytest.raises(EnergyError, match="did not advance"):
        threaded_window(_SlowCounter(0.01, 0.0, stuck=True), lambda: time.sleep(0.001), lambda: None,
                        stuck_after_s=0.05)


def test_a_chunk_that_raises_stops_the_reader_thread_and_the_error_reaches_the_caller():
    import threading

    from roofline.measuring.energy import threaded_window

    def fails() -> None:
        raise RuntimeError("the kernel failed")

    marks: list[int] = []
    with pytest.raises(RuntimeError, match="the kernel failed"):
        threaded_window(_SlowCounter(0.001, 0.0), fails, lambda: marks.append(1))
    assert not any(t.name == "roofline-energy-counter" for t in threading.enumerate())


# --- an operator's own watts (the SM work its FLOPs and bytes do not account for)


def test_an_operators_own_watts_add_to_its_calls_and_no_others():
    from roofline.core.energy import op_watts

    # a round figure near what the H200 measured (2026-12-02): softmax drew 257-284 W beyond its terms
    base = _model()
    m = EnergyModel.from_dict({**base.to_dict(), "op_w": {"softmax": 270.0}})
    args = ("bf16_dense_tflops", 1e9, 134e6, 134e6, 200e-6)
    assert m.energy_j(*args, op="softmax") == pytest.approx(base.energy_j(*args) + 270.0 * 200e-6)
    assert m.energy_j(*args, op="gelu") == pytest.approx(base.energy_j(*args))
    assert m.energy_j(*args) == pytest.approx(base.energy_j(*args))
    # op_watts recovers it from a measured call: (measured J - the terms' J) / time
    measured = base.energy_j(*args) + 270.0 * 200e-6
    assert op_watts(base, measured, *args) == pytest.approx(270.0)
    with pytest.raises(ValueError):
        op_watts(base, measured, *args[:4], 0.0)


def test_an_operators_own_watts_are_validated():
    d = _model().to_dict()
    for bad in (math.inf, 700.0, -118.0):  # not finite; at the cap; leaving static + it <= 0
        with pytest.raises(ValueError):
            EnergyModel.from_dict({**d, "op_w": {"gelu": bad}})
    # below what the streams' bytes gave is allowed (a kernel that draws less than its bytes imply)
    assert EnergyModel.from_dict({**d, "op_w": {"gemv": -40.0}}).op_w == {"gemv": -40.0}
    # a model stored before the term: none
    assert EnergyModel.from_dict({k: v for k, v in d.items() if k != "op_w"}).op_w == {}


def test_a_calls_modelled_power_stops_at_the_power_cap():
    # on the H200 (2026-12-02 21:44) the linear terms gave RMS norm 767 W where it drew 697 under the 700 W cap:
    # the board's controller holds the average at the cap (the clock falls), so the model's J is capped there
    m = EnergyModel.from_dict({**_model().to_dict(), "op_w": {"rmsnorm": 300.0}})
    t, nbytes = 80e-6, 134e6  # 2 x 134 MB in 80 us: 3.35 TB/s, 67 W of bytes at 20 pJ/B; + 118 + 82 + 300 W
    linear = m.linear_j("bf16_dense_tflops", 0.0, nbytes, nbytes, t, op="rmsnorm")
    assert linear / t == pytest.approx(118.0 + 82.0 + 300.0 + 20e-12 * 2 * nbytes / t)  # 567 W: under the cap
    assert m.energy_j("bf16_dense_tflops", 0.0, nbytes, nbytes, t, op="rmsnorm") == pytest.approx(linear)
    hot = EnergyModel.from_dict({**_model().to_dict(), "op_w": {"rmsnorm": 600.0}})  # 867 W of terms
    assert hot.linear_j("bf16_dense_tflops", 0.0, nbytes, nbytes, t, op="rmsnorm") / t > 700.0
    assert hot.energy_j("bf16_dense_tflops", 0.0, nbytes, nbytes, t, op="rmsnorm") == pytest.approx(700.0 * t)
    # an operator's own watts are measured against the uncapped terms: a call drawing the cap recovers them
    from roofline.core.energy import op_watts

    assert op_watts(m, 700.0 * t, "bf16_dense_tflops", 0.0, nbytes, nbytes, t) == pytest.approx(
        700.0 - (118.0 + 82.0 + 20e-12 * 2 * nbytes / t))


def test_an_operators_own_watts_are_the_mean_over_its_shapes():
    from roofline.measuring.energy_calibrate import OP_CALIBRATION, mean_op_watts

    rows = [{"op": "softmax", "op_w": 226.0}, {"op": "softmax", "op_w": 257.0}, {"op": "softmax", "op_w": 267.0},
            {"op": "gelu", "op_w": 155.0}, {"op": "gelu", "error": "RuntimeError: out of memory"},
            {"op": "attention", "error": "RuntimeError: no flash kernel"}]
    assert mean_op_watts(rows) == pytest.approx({"softmax": 250.0, "gelu": 155.0})  # failed shapes left out
    # the reductions are measured at three shapes, each operator at one or more; none is a kernels-suite shape
    # (the model is judged on that suite: docs/measurements.md)
    from helpers import SUITES

    from roofline.core.tomlfile import read_toml

    suite = {(e["op"], tuple(sorted(e["gpu_params"].items())))
             for e in read_toml(SUITES / "kernels-h200.toml", "suite")["entry"]}
    shapes = [(op, tuple(sorted(params.items()))) for op, params in OP_CALIBRATION]
    assert not set(shapes) & suite and len(set(shapes)) == len(shapes)
    for op in ("softmax", "layernorm", "rmsnorm"):
        assert sum(o == op for o, _ in shapes) == 3


def test_the_model_table_lists_each_operators_own_watts():
    from roofline.report.energy import energy_model_table

    m = EnergyModel.from_dict({**_model().to_dict(), "op_w": {"gelu": 185.0}})
    details = {"kernels": [], "operators": [
        {"op": "gelu", "op_w": 185.0, "power_w": 690.0, "per_call_s": 9e-5, "energy_j": 0.062},
        {"op": "attention", "error": "RuntimeError: no flash kernel"},
        {"op": "softmax", "op_w": 226.0, "power_w": 503.0}, {"op": "softmax", "op_w": 267.0, "power_w": 664.0},
        {"op": "softmax", "error": "RuntimeError: out of memory"}]}
    cells = energy_model_table(m, details).rows
    assert cells[0][:3] == ["gelu (own W)", "690", "505"] and cells[0][4] == "+185 W its own"
    assert cells[1][0] == "attention (own W)" and "not measured: RuntimeError" in cells[1][4]
    # an operator measured at several shapes: one line, the means (power 583.5, own 246.5) and the spread
    assert cells[2] == ["softmax (own W)", "584", "337", "-", "+246 W its own (+226..+267, 2 shapes)"]


def test_a_profiled_operator_gets_its_catalog_operators_watts():
    # a profile's aten::gelu maps to the catalog's gelu by its formula (flops_source), and gets gelu's watts
    from roofline.analysis.energy_profile import op_estimate_j
    from roofline.core.record import Record

    m = EnergyModel.from_dict({**_model().to_dict(), "op_w": {"gelu": 185.0}})
    rec = Record(op="aten::gelu", variant=None, params={"numel": 2**20}, dtype="bf16", flops=8.4e6,
                 bytes_read=2.1e6, bytes_written=2.1e6, bytes=4.2e6, compute_pipe="bf16_dense_tflops",
                 time_s=2e-6, count=3, flops_source="catalog:gelu")
    without = EnergyModel.from_dict(_model().to_dict())
    assert op_estimate_j(rec, m, None) == pytest.approx(op_estimate_j(rec, without, None) + 3 * 185.0 * 2e-6)
