"""GPU tests: run on a CUDA machine (`pytest -m gpu`), skipped elsewhere. Recorded in docs/measurements.md."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

from roofline.cli.app import main
from roofline.core.dtypes import get_dtype
from roofline.core.stats import median
from roofline.ops import OPERATORS, make

pytestmark = pytest.mark.gpu


def test_time_cuda_methods_agree() -> None:
    import torch

    from roofline.measuring.timing_cuda import TimingOptions, time_cuda

    # memory-bound on purpose: a GEMM's clock moves with the power state that each method's warm-up leaves
    # (4096^3 bf16 read 175-184 µs across the three methods on the H200 one day), a copy's does not
    x = torch.randn(2**26, device="cuda")  # 256 MiB read, 256 MiB written: ~110 µs on an H200
    times = {}
    for method in ("events", "graph", "graph-loop"):
        m = time_cuda(lambda: x * 2, TimingOptions(method=method))
        assert len(m.samples_s) >= 10 and m.l2_flush
        times[method] = m.median_s
    assert max(times.values()) / min(times.values()) < 1.05, times


def test_timer_overhead_is_measured_and_subtracted() -> None:
    import torch

    from roofline.measuring.timing_cuda import TimingOptions, time_cuda

    x = torch.randn(2**24, device="cuda")
    m = time_cuda(lambda: x * 2, TimingOptions(method="graph"))  # ~30 µs: auto would read kernel timestamps
    # an empty event pair costs ~1.3 µs on the H200 (docs/measurements.md); anything from 0.1 to 20 µs is a pair
    assert 1e-7 < m.timer_overhead_s < 2e-5, m.timer_overhead_s
    assert m.median_s == pytest.approx(median(m.samples_s) - m.timer_overhead_s)
    assert m.timing().timer_overhead_s == m.timer_overhead_s


def test_self_timed_clock_probe_agrees_with_the_event_timed_one_when_alone() -> None:
    import torch

    from roofline.measuring.clocktrace import ClockProbe, Stamps
    from roofline.measuring.sm_clock import PROBE_CYCLES

    probe, stamps = ClockProbe(8), Stamps(2)
    stamps.stamp()
    for _ in range(8):
        probe.launch(PROBE_CYCLES)
    stamps.stamp()
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(8)]
    for s, e in pairs:
        s.record()
        torch.cuda._sleep(PROBE_CYCLES)
        e.record()
    torch.cuda.synchronize()
    self_timed = median(probe.mhz())
    evented = median([PROBE_CYCLES / (s.elapsed_time(e) * 1e3) for s, e in pairs])
    # alone on an idle GPU both see the same clock; the events add ~3 µs of launch and timestamps to ~50 µs
    assert 300 < self_timed < 3500
    assert evented < self_timed * 1.02 and evented > self_timed * 0.85, (self_timed, evented)
    k0, k1 = stamps.results()
    assert all(k0 <= t0 <= k1 for _, _, t0 in probe.results())


def test_clock_trace_waits_for_its_start_stamp_and_stops_at_the_end_stamp() -> None:
    import torch

    from roofline.measuring.clocktrace import TRACE_POINTS, ClockTrace, Stamps, clock_in_window

    traces, stamps = ClockTrace(2), Stamps(2)
    main, side = torch.cuda.current_stream(), torch.cuda.Stream()
    go = torch.cuda.Event()
    go.record(main)
    with torch.cuda.stream(side):
        side.wait_event(go)
        # 64 points every 2 µs would span 128 µs; the "kernel" below lasts ~100 µs at 2 GHz
        traces.launch(2000, start=stamps.ahead(0), stop=stamps.ahead(1))
        # a trace whose start stamp never comes gives up after max_wait_ns
        traces.launch(500, start=stamps._ptr(1) + 8, stop=stamps._ptr(1) + 8, max_wait_ns=1_000_000)
    torch.cuda._sleep(200_000)  # ~100 µs before the first stamp: the trace must wait, recording nothing
    stamps.stamp()
    torch.cuda._sleep(200_000)  # the "kernel"
    stamps.stamp()
    main.wait_stream(side)
    torch.cuda.synchronize()
    (k0, k1), (tr, never) = stamps.results(), traces.traces()
    assert never == []
    assert 0 < len(tr) < TRACE_POINTS, len(tr)  # it stopped at the end stamp, before its 64 points
    assert tr[0][0] >= k0 and tr[-1][0] <= k1 + 5_000, (tr[0][0] - k0, tr[-1][0] - k1)
    w = clock_in_window(tr, k0, k1)
    assert w is not None and w.coverage > 0.9 and 300 < w.mhz < 3500, w


def test_warm_l2_is_not_slower_for_small_working_sets() -> None:
    import torch

    from roofline.measuring.timing_cuda import TimingOptions, time_cuda

    x = torch.randn(2**20, device="cuda")  # 4 MiB: fits in any L2 since Volta
    cold = time_cuda(lambda: x * 2).median_s
    warm = time_cuda(lambda: x * 2, TimingOptions(warm_l2=True)).median_s
    assert warm <= cold * 1.05


def test_analyze_on_gpu_reports_clock_and_kernels(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["analyze", "gemm", "--m", "4096", "--dtype", "bf16", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    rec = doc["records"][0]
    assert rec["time_s"] == pytest.approx(median(rec["time_samples_s"]))
    assert rec["clocks"]["sm_mhz"]["median"] > 0
    assert rec["kernels"], "profiler saw no kernel"
    # one profiled call's breakdown: a time per kernel, adding up to about the measured time (that call's
    # L2 is not flushed, and it runs eagerly: within a factor of 2 either way)
    assert len(rec["kernel_times_s"]) == len(rec["kernels"]) and min(rec["kernel_times_s"]) > 0
    assert 0.5 < sum(rec["kernel_times_s"]) / rec["time_s"] < 2.0, (rec["kernel_times_s"], rec["time_s"])
    assert 0.05 < rec["roofline_fraction"] < 1.2
    assert doc["device"]["cuda_version"] and doc["device"]["driver_version"]


@pytest.mark.parametrize("name", sorted(n for n, c in OPERATORS.items() if c.family != "collectives"))
def test_every_builder_runs_on_gpu(name: str) -> None:
    from roofline.measuring.kernels import build
    from roofline.measuring.runner import kernel_profile

    cls = OPERATORS[name]
    small = {"numel": 4096, "m": 64, "n": 64, "k": 64, "rows": 64, "cols": 256, "batch": 2, "heads": 4,
             "seq": 128, "head_dim": 64, "context": 256, "tokens": 64, "height": 16, "width": 16,
             "in_channels": 8, "out_channels": 8}
    fields = {f for f in cls.__dataclass_fields__}
    op = make(name, **{k: v for k, v in small.items() if k in fields})
    dtype = "bf16" if "bf16" in cls.dtypes else cls.dtypes[0]
    built = build(op, get_dtype(dtype), "cuda")
    built.fn()
    # it really runs on the device: one call launches at least one kernel, each with a positive device time
    profiled = kernel_profile(built.fn, "cuda")
    assert profiled and all(t > 0 for _, t in profiled), profiled


def test_memory_guard_on_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["analyze", "relu", "--numel", str(2**40), "--dtype", "fp16"])
    _, err = capsys.readouterr()
    assert code == 1 and "needs about" in err


def test_calibrate_quick_stores_ceilings(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["calibrate", "--quick", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert doc["memory_bytes_per_s"]["dram"] > 1e11
    assert doc["memory_bytes_per_s"]["l2"] > doc["memory_bytes_per_s"]["dram"]
    code = main(["analyze", "relu", "--numel", str(2**26), "--json"])
    out, _ = capsys.readouterr()
    assert "measured_ceilings" in json.loads(out)["device"]


def test_cli_process_output_is_complete_after_the_fast_exit(tmp_path: Path) -> None:
    """`roofline` skips the interpreter's teardown after GPU work (cli.exit_now): its piped stdout and the
    results file must still be whole."""
    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, "-m", "roofline", "analyze", "relu", "--numel", str(2**24), "--json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["records"][0]["time_s"] > 0
    proc = subprocess.run([sys.executable, "-m", "roofline", "run", "suites/smoke.toml", "-o", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(out.read_text())["records"]) == 8


def test_the_pytest_fixture_times_a_catalog_shape_on_the_gpu(roofline) -> None:  # type: ignore[no-untyped-def]
    """The plugin's `roofline` fixture (roofline/pytest_plugin.py) on the GPU: a bf16 GEMM the H200 runs at
    89-97% of its roof (docs/results); any real GPU is well above a tenth of it."""
    rec = roofline(op="gemm", m=4096, dtype="bf16")
    assert rec.timed and rec.device_kind == "gpu" and rec.clocks is not None
    assert 0.1 < rec.roofline_fraction < 1.2


def test_measure_refuses_a_wrong_kernel_on_the_gpu() -> None:
    import torch

    import roofline
    from roofline.core.errors import RooflineError

    a = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
    flops, nbytes = 2 * 1024**3, 3 * 1024 * 1024 * 2
    rec = roofline.measure(lambda: a @ b, flops=flops, bytes=nbytes, dtype="bf16",
                           ref=lambda: (a.float() @ b.float()).bfloat16())
    assert rec.timed
    with pytest.raises(RooflineError, match="first mismatch"):
        roofline.measure(lambda: a @ b + 1, flops=flops, bytes=nbytes, dtype="bf16", ref=lambda: a @ b)


def test_short_operators_are_timed_by_their_kernels_timestamps() -> None:
    """A decode-sized RMSNorm (64 x 4096 bf16, ~3-5 µs on an H200) is under SHORT_OP_S: auto picks the kernel
    timestamps, records each kernel's median and the launch gap; a 4096^3 GEMM (~180 µs) keeps the graph."""
    from roofline.measuring.runner import measure_op
    from roofline.measuring.target import resolve_target

    target = resolve_target(device="cuda", time=True)
    rec = measure_op(make("rmsnorm", rows=64, cols=4096), get_dtype("bf16"), target)
    assert rec.timing is not None and rec.timing.method.startswith("cupti"), rec.notes
    assert rec.kernels and rec.kernel_times_s and len(rec.kernels) == len(rec.kernel_times_s)
    assert rec.time_s == pytest.approx(median(rec.time_samples_s))
    assert sum(rec.kernel_times_s) == pytest.approx(rec.time_s, rel=0.1)  # medians of parts vs median of sums
    assert rec.timing.launch_gap_s is not None and rec.timing.kernel_span_s is not None
    assert 1e-6 < rec.time_s < 20e-6
    big = measure_op(make("gemm", m=4096, n=4096, k=4096), get_dtype("bf16"), target, kernels=False)
    assert big.timing is not None and big.timing.method.startswith("graph")


@pytest.mark.parametrize(("causal", "kv_heads"), [(False, 8), (True, 8), (True, 2)])
def test_attention_backward_times_the_fused_backward_kernels_alone(causal: bool, kv_heads: int) -> None:
    """`attention --backward` calls a fused backend's backward op (no forward kernel), is captured in a CUDA graph
    like the forward (a first version ran autograd, whose capture failed and broke every point after it in a
    sweep on the H200, 2026-12-02), and its gradients are SDPA's math backend's."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from roofline.measuring.kernels import build
    from roofline.measuring.runner import kernel_profile
    from roofline.measuring.timing_cuda import TimingOptions, time_cuda

    op = make("attention", batch=2, heads=8, kv_heads=kv_heads, seq=256, head_dim=64, causal=causal, backward=True)
    built = build(op, get_dtype("bf16"), "cuda")
    assert built.graph_safe and "backward" in built.impl, built.impl
    names = [n.lower() for n, _ in kernel_profile(built.fn, "cuda")]
    assert names and not any("fprop" in n or "fwd" in n for n in names), names
    m = time_cuda(built.fn, TimingOptions(rep_s=0.01, warmup_s=0.005))
    assert m.method != "events" and not any("capture failed" in n for n in m.notes), (m.method, m.notes)
    q, k, v = (t.detach().float().requires_grad_(True) for t in built.inputs[:3])
    with sdpa_kernel(SDPBackend.MATH):
        F.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(built.inputs[-1].float())
    for got, want in zip(built.fn(), (q.grad, k.grad, v.grad), strict=True):
        assert torch.allclose(got.float(), want, atol=3e-2, rtol=3e-2)
    torch.ones(1, device="cuda").add_(1).item()  # the context still works after it
