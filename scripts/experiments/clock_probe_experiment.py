"""Does the self-timed clock probe (roofline/measuring/clocktrace.py) see the clock Nsight Compute sees, where the
event-timed torch.cuda._sleep probe read 10-25% low? One GPU call:

    PYTHONPATH=. python3 scripts/experiments/clock_probe_experiment.py

1. The probe alone, back to back: clock, and the smallest step of %globaltimer seen (its update grain).
2. Beside kernels of the kernels-h200 suite (after the read flush, as timing_cuda samples): per kernel a clock
   trace (64 points of %globaltimer and %clock64 on a side stream) cut to the kernel's window (globaltimer
   stamps before and after it on the main stream), with its first and last third and its coverage; beside
   it a self-timed spin (all, and those that ran inside the kernel) and an event-timed spin.
"""

from __future__ import annotations

import itertools
import statistics
from typing import Any

import torch

from roofline.core.dtypes import get_dtype
from roofline.measuring.clocktrace import TRACE_POINTS, ClockProbe, ClockTrace, Stamps, clock_in_window
from roofline.measuring.cuda_events import event_times
from roofline.measuring.kernels import build
from roofline.ops import make

L2_BYTES = 61440 * 1024
CASES = [("gemv 16x8192x8192 bf16", "gemv", {"m": 16, "n": 8192, "k": 8192}, "bf16", 1796),
         ("gemv 1x8192x8192 bf16", "gemv", {"m": 1, "n": 8192, "k": 8192}, "bf16", 1808),
         ("rmsnorm 16384x4096 bf16", "rmsnorm", {"rows": 16384, "cols": 4096}, "bf16", 1942),
         ("relu 2^28 bf16", "relu", {"numel": 2**28}, "bf16", 1943),
         ("decode attention", "decode_attention", {"batch": 32, "heads": 32, "kv_heads": 8, "context": 8192,
                                                   "head_dim": 128}, "bf16", 1749),
         ("gemm 4096 fp16", "gemm", {"m": 4096}, "fp16", 1553),
         ("gemm 8192 bf16", "gemm", {"m": 8192}, "bf16", 1595),
         ("flash attention 8x32x4096x128", "attention", {"batch": 8, "heads": 32, "seq": 4096, "head_dim": 128},
          "bf16", 1688),
         ("conv2d 32x128x56x56 k3 fp16", "conv2d", {"batch": 32, "in_channels": 128, "height": 56, "width": 56,
                                                   "out_channels": 128, "kernel_size": 3, "padding": 1}, "fp16", 1697)]


def alone() -> None:
    probe = ClockProbe(200)
    for cycles in (20_000, 50_000, 100_000, 400_000):
        for _ in range(40):
            probe.launch(cycles)
    torch.cuda.synchronize()
    res = probe.results()
    steps = sorted({ns % 1000 for _, ns, _ in res})
    starts = sorted(t0 for _, _, t0 in res)
    gaps = sorted({b - a for a, b in itertools.pairwise(starts) if b > a})
    print(f"probe alone: clocks {[round(x) for x in probe.mhz()[::20]]} MHz; ns mod 1000 seen: {steps[:12]}; "
          f"smallest start-to-start step {gaps[:3]} ns", flush=True)


def beside() -> None:
    """Per kernel: the clock trace over the kernel (all of it, its first and last third), how much of the
    kernel the trace covered, and the two spin probes (self-timed, event-timed) sized to half the kernel."""
    buf = torch.ones(3 * L2_BYTES // 4, dtype=torch.float32, device="cuda")
    sink = torch.empty((), dtype=torch.float32, device="cuda")

    def flush() -> None:
        torch.sum(buf, dim=0, out=sink)

    print(f"{'kernel':32s} {'ncu MHz':>7s} {'trace':>6s} {'early':>6s} {'late':>6s} {'cover':>6s} {'n':>5s} "
          f"{'spin':>6s} {'spin-in':>7s} {'events':>6s} kernel µs")
    for label, op, params, dt, ncu_mhz in CASES:
        b = build(make(op, **params), get_dtype(dt), "cuda")
        for _ in range(5):
            b.fn()
        kernel_s = statistics.median(event_times(b.fn, 5, before=flush))
        cycles = int(min(100_000, 0.5 * kernel_s * 1.5e9))
        n = 8
        traces, stamps = ClockTrace(n), Stamps(4 * n)
        probe = ClockProbe(n)
        main, side = torch.cuda.current_stream(), torch.cuda.Stream()
        ev: list[Any] = []
        for kind in ("trace", "spin", "events"):
            for _ in range(n):
                torch.cuda._sleep(200_000)  # ~100 µs: the host enqueues the round before the GPU gets to it
                if kind == "trace":  # as sm_clock.Tracer does: resident before the flush, waiting for the stamp
                    go = torch.cuda.Event()
                    go.record(main)
                    with torch.cuda.stream(side):
                        side.wait_event(go)
                        traces.launch(int(1.3 * kernel_s * 1e9 / TRACE_POINTS), start=stamps.ahead(0),
                                      stop=stamps.ahead(1))
                flush()
                if kind != "events":
                    stamps.stamp()
                go = torch.cuda.Event()
                go.record(main)
                es, ee = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                with torch.cuda.stream(side):
                    side.wait_event(go)
                    if kind == "spin":
                        probe.launch(cycles)
                    elif kind == "events":
                        es.record(side)
                        torch.cuda._sleep(cycles)
                        ee.record(side)
                        ev.append((es, ee))
                b.fn()
                if kind != "events":
                    stamps.stamp()
                main.wait_stream(side)
        torch.cuda.synchronize()
        st = stamps.results()
        wins = [clock_in_window(tr, k0, k1) for tr, k0, k1 in zip(traces.traces(), st[0:2 * n:2], st[1:2 * n:2],
                                                                   strict=True)]
        wins = [w for w in wins if w is not None]
        spins = [c / ns * 1e3 for (c, ns, t0), k0, k1 in zip(probe.results(), st[2 * n::2], st[2 * n + 1::2],
                                                             strict=True) if k0 <= t0 and t0 + ns <= k1]
        evc = [cycles / (s.elapsed_time(e) * 1e3) for s, e in ev]

        def med(xs: list[float]) -> float:
            return statistics.median(xs) if xs else float("nan")

        print(f"{label:32s} {ncu_mhz:7d} {med([w.mhz for w in wins]):6.0f} {med([w.early_mhz for w in wins]):6.0f} "
              f"{med([w.late_mhz for w in wins]):6.0f} {med([w.coverage for w in wins]):6.2f} {len(wins):2d}/{n} "
              f"{med([c / ns * 1e3 for c, ns, _ in probe.results()]):6.0f} {med(spins):7.0f} {med(evc):6.0f} "
              f"{kernel_s * 1e6:8.1f}", flush=True)
        del b


if __name__ == "__main__":
    alone()
    beside()
