"""Issue 4's open question: why do gemv 16x8192x8192 and rmsnorm 16384x4096 time 4-6% above Nsight Compute
when 13 other kernels agree within 1.6%? One GPU call answers it from three sides:

    PYTHONPATH=. python3 scripts/experiments/flush_experiment.py times          # roofline's timer, each preparation
    PYTHONPATH=. python3 scripts/experiments/flush_experiment.py cupti          # CUPTI's kernel durations, same loop
    ncu ... python3 scripts/experiments/flush_experiment.py target eager|graph  # one call of each case, for ncu

`times`: read x3 L2 (the default), read x8, write x3 (do_bench's zeroing), no flush (--warm-l2), eager events,
burst mode, and three fresh allocations of the inputs (placement). `cupti`: the kernel durations that CUPTI
(the profiler's activity API, what nsys shows) records for 50 x (flush, call), eager and as graph replays, so
an event-pair overhead and a slower kernel can be told apart. `target`: like ncu_compare.py's, for these cases.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from collections import defaultdict
from typing import Any

from roofline.core.dtypes import get_dtype
from roofline.measuring.cuda_events import event_times
from roofline.measuring.kernels import build
from roofline.measuring.timing_cuda import TimingOptions, time_cuda
from roofline.ops import make

CASES = [  # (label, op, params, ncu time in µs from the 2026-11-29 H200 run)
    ("gemv 16x8192x8192 bf16", "gemv", {"m": 16, "n": 8192, "k": 8192}, 33.4),
    ("rmsnorm 16384x4096 bf16", "rmsnorm", {"rows": 16384, "cols": 4096}, 77.5),
    ("gemv 1x8192x8192 bf16 (control)", "gemv", {"m": 1, "n": 8192, "k": 8192}, 35.8),
    ("layernorm 16384x4096 bf16 (control)", "layernorm", {"rows": 16384, "cols": 4096}, 104.9),
]
PREPARATIONS: list[tuple[str, dict[str, Any]]] = [
    ("read x3", {}), ("read x8", {"flush_multiple": 8}), ("write x3", {"flush_mode": "write"}),
    ("warm L2", {"warm_l2": True}), ("events", {"method": "events"}), ("burst", {"power": "burst"})]
L2_BYTES = 61440 * 1024  # H200 (specs/h200-sxm.toml)


def _build(op: str, params: dict[str, Any]) -> Any:
    return build(make(op, **params), get_dtype("bf16"), "cuda")


def times() -> None:
    head = [name for name, _ in PREPARATIONS] + ["alloc 1", "alloc 2", "alloc 3"]
    print(f"{'kernel':38s} {'ncu':>7s} " + " ".join(f"{h:>9s}" for h in head))
    for label, op, params, ncu_us in CASES:
        built = _build(op, params)
        row = [time_cuda(built.fn, TimingOptions(**kw), "cuda:0", L2_BYTES).median_s * 1e6 for _, kw in PREPARATIONS]
        del built
        for _ in range(3):
            fresh = _build(op, params)
            row.append(time_cuda(fresh.fn, TimingOptions(), "cuda:0", L2_BYTES).median_s * 1e6)
            del fresh
        print(f"{label:38s} {ncu_us:7.1f} " + " ".join(f"{t:9.1f}" for t in row), flush=True)


def _kernel_durations(loop: Any) -> dict[str, list[float]]:
    """CUPTI kernel durations (µs) by kernel name for one run of `loop`, from the profiler's chrome trace."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        loop()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as fh:
            trace = json.load(fh)
    out: dict[str, list[float]] = defaultdict(list)
    for ev in trace.get("traceEvents", []):
        if ev.get("cat") == "kernel":
            out[ev["name"]].append(float(ev["dur"]))
    return out


def cupti() -> None:
    import torch

    buf = torch.ones(3 * L2_BYTES // 4, dtype=torch.float32, device="cuda")
    sink = torch.empty((), dtype=torch.float32, device="cuda")

    def flush() -> None:
        torch.sum(buf, dim=0, out=sink)

    for label, op, params, ncu_us in CASES:
        built = _build(op, params)
        for _ in range(20):
            built.fn()
        graph = torch.cuda.CUDAGraph()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            built.fn()
        torch.cuda.current_stream().wait_stream(side)
        with torch.cuda.graph(graph):
            built.fn()
        for form, call in (("eager", built.fn), ("graph", graph.replay)):
            def loop(call: Any = call) -> None:
                for _ in range(50):
                    flush()
                    call()
            loop()  # warm
            torch.cuda.synchronize()
            for name, durs in _kernel_durations(loop).items():
                print(f"{label:38s} {form:5s} ncu {ncu_us:6.1f}  cupti median {statistics.median(durs):7.2f} "
                      f"min {min(durs):7.2f} n={len(durs):3d}  {name[:90]}", flush=True)
        del built, graph


def floor() -> None:
    """The timer's floor: event pairs (after the read flush, as timing_cuda samples) around graph replays of a spin
    kernel of N cycles, beside CUPTI's duration of the same kernel; the intercept is the event-pair overhead."""
    import torch

    buf = torch.ones(3 * L2_BYTES // 4, dtype=torch.float32, device="cuda")
    sink = torch.empty((), dtype=torch.float32, device="cuda")
    for cycles in (0, 1000, 20000, 80000):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            torch.cuda._sleep(cycles)

        def loop(g: Any = g) -> None:
            for _ in range(50):
                torch.sum(buf, dim=0, out=sink)
                g.replay()
        t = statistics.median(event_times(g.replay, 200, before=lambda: torch.sum(buf, dim=0, out=sink))) * 1e6
        durs = {k: statistics.median(v) for k, v in _kernel_durations(loop).items() if "spin" in k}
        print(f"spin {cycles:6d} cycles: events median {t:7.2f} µs   cupti {durs}", flush=True)


def alloc() -> None:
    """conv2d (run-level 6-9% shifts with the same cuDNN kernel and clock): six fresh allocations in one
    process, each timed as `roofline run` does. A spread here is placement, not the process or the clock."""
    params = {"batch": 32, "in_channels": 128, "height": 56, "width": 56, "out_channels": 128, "kernel_size": 3,
              "padding": 1}
    for i in range(6):
        b = build(make("conv2d", **params), get_dtype("fp16"), "cuda")
        m = time_cuda(b.fn, TimingOptions(compute_bound=True, power="sustained"), "cuda:0", L2_BYTES)
        clock = (m.clocks.sm_median_mhz if m.clocks else None) or 0.0
        print(f"conv2d allocation {i + 1}: median {m.median_s * 1e6:6.1f} µs  p10 {m.summary.p10 * 1e6:6.1f}  "
              f"clock {clock:5.0f} MHz", flush=True)
        del b


def conv_process(benchmark: bool) -> None:
    """One process's conv2d: cudnn.benchmark on or off, its median and the launch shape CUPTI saw (a run-level
    shift with the same kernel name could be a different configuration of that kernel)."""
    import torch

    params = {"batch": 32, "in_channels": 128, "height": 56, "width": 56, "out_channels": 128, "kernel_size": 3,
              "padding": 1}
    b = build(make("conv2d", **params), get_dtype("fp16"), "cuda")
    torch.backends.cudnn.benchmark = benchmark
    m = time_cuda(b.fn, TimingOptions(compute_bound=True, power="sustained"), "cuda:0", L2_BYTES)
    shapes = set()
    with tempfile.TemporaryDirectory() as tmp:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            b.fn()
            torch.cuda.synchronize()
        path = os.path.join(tmp, "t.json")
        prof.export_chrome_trace(path)
        for ev in json.load(open(path)).get("traceEvents", []):
            if ev.get("cat") == "kernel":
                a = ev.get("args", {})
                shapes.add((ev["name"][-40:], str(a.get("grid")), str(a.get("block")), a.get("shared memory")))
    print(f"benchmark={benchmark}: median {m.median_s * 1e6:6.1f} µs  {sorted(shapes)}", flush=True)


def pair() -> None:
    """An event pair with nothing between (after the read flush, as every sample is taken): the timer's own
    cost. Beside it the 4 cases' medians less that cost, and what ncu measured for them."""
    import torch

    buf = torch.ones(3 * L2_BYTES // 4, dtype=torch.float32, device="cuda")
    sink = torch.empty((), dtype=torch.float32, device="cuda")

    def empty_pair(n: int = 400, between: Any = None) -> float:
        times = event_times(between or (lambda: None), n, before=lambda: torch.sum(buf, dim=0, out=sink))
        return statistics.median(times) * 1e6

    for _ in range(3):
        print(f"empty event pair after the flush: {empty_pair():.3f} µs; around torch.cuda._sleep(0): "
              f"{empty_pair(between=lambda: torch.cuda._sleep(0)):.3f} µs", flush=True)
    for label, op, params, ncu_us in CASES:
        built = _build(op, params)
        t = time_cuda(built.fn, TimingOptions(), "cuda:0", L2_BYTES).median_s * 1e6
        p = empty_pair()
        print(f"{label:38s} ncu {ncu_us:6.1f}  events {t:6.1f}  less pair {t - p:6.1f}  ratio {(t - p) / ncu_us:.3f}",
              flush=True)
        del built


def target_loop() -> None:
    """For ncu --cache-control none: each case as timing_cuda runs it, (read flush, call) x 3, between markers."""
    import torch

    buf = torch.ones(3 * L2_BYTES // 4, dtype=torch.float32, device="cuda")
    sink = torch.empty((), dtype=torch.float32, device="cuda")
    built = [_build(op, params) for _, op, params, _ in CASES]
    for b in built:
        for _ in range(3):
            b.fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    torch.cuda._sleep(0)
    for b in built:
        torch.cuda._sleep(1000)
        for _ in range(3):
            torch.sum(buf, dim=0, out=sink)
            b.fn()
        torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def target(form: str) -> None:
    import torch

    built = [_build(op, params) for _, op, params, _ in CASES]
    calls = []
    for b in built:
        for _ in range(3):
            b.fn()
        if form == "graph":
            g = torch.cuda.CUDAGraph()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                b.fn()
            torch.cuda.current_stream().wait_stream(side)
            with torch.cuda.graph(g):
                b.fn()
            g.replay()
            calls.append(g.replay)
        else:
            calls.append(b.fn)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for call in calls:
        torch.cuda._sleep(1000)
        call()
        torch.cuda.synchronize()
    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "times"
    if what == "times":
        times()
    elif what == "cupti":
        cupti()
    elif what == "conv-process":
        conv_process(sys.argv[2] == "on")
    elif what == "alloc":
        alloc()
    elif what == "pair":
        pair()
    elif what == "floor":
        floor()
    elif what == "target-loop":
        target_loop()
    elif what == "target":
        target(sys.argv[2] if len(sys.argv) > 2 else "eager")
    else:
        sys.exit(f"unknown mode {what!r}: times, cupti or target eager|graph")
