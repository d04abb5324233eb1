"""The SM clock while `time_cuda` samples: between kernels, during them, and the record's clock report.

- Between kernels: after every sample a spin of PROBE_CYCLES (torch.cuda._sleep), timed by its own events.
- During the kernel: a few more calls follow the samples in the same enqueued stream of work, each beside a
  clock trace on a side stream (`Tracer`, over `roofline.measuring.clocktrace`), cut to its call's window by
  %globaltimer stamps. The clock drops while the tensor cores draw current and recovers within microseconds,
  so only a trace running during the kernel sees the kernel's clock: the clock between kernels reads 10-20%
  above it on tensor-core kernels, and NVML's sampled clock lags the power controller.
- `clock_report` (pure) turns NVML's readings and both probes into the record's `Clocks`, choosing the best
  source there is for `sm_mhz`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from roofline.core.record import Clocks
from roofline.core.stats import median
from roofline.measuring import clocktrace
from roofline.measuring.nvml import ClockReport, spread
from roofline.measuring.timing import plan_calls

# Clock probe: ~50 µs at 2 GHz, long beside the ~1 µs resolution and launch overhead of an event pair.
PROBE_CYCLES = 100_000
# Traced calls: INKERNEL_PROBES, fewer for kernels longer than TRACE_BUDGET_S / INKERNEL_PROBES, never fewer
# than MIN_TRACES (a long kernel's trace still has TRACE_POINTS points). They follow the samples in the same
# enqueued work so that they run at the samples' duty cycle and power state: traced in rounds of their own,
# after an idle spin, a power-capped GEMM read 6% slower than Nsight Compute at the same clock.
INKERNEL_PROBES = 8
TRACE_BUDGET_S = 0.01
MIN_TRACES = 3
# Below this the stamps' window (a few µs of launch either side) would be a large part of the kernel's:
# shorter kernels get the clock between kernels.
INKERNEL_MIN_S = 40e-6
# A trace's points are TRACE_SPAN x the kernel's (warm) time / TRACE_POINTS apart, so that its points outlast
# a kernel somewhat slower than its estimate; the trace stops at the stamp after the kernel.
TRACE_SPAN = 1.3
# Spin (~100 µs) before each round of `inkernel_clock` (rounds of their own, for graph-loop): the host
# enqueues the round before the GPU reaches it, so the window holds no idle time.
HOST_LEAD_CYCLES = 200_000
# A note says so when the clock in the kernel's last third is this much below its first third's.
CLOCK_FALL_NOTE = 0.05
# Cycles per second assumed to size the event-timed fallback spin (only the order of magnitude matters).
FALLBACK_CYCLES_PER_S = 1.5e9


@dataclass(frozen=True)
class KernelClock:
    """The SM clock (MHz) in each traced call, where it came from, and the traces' coverage (or None)."""

    mhz: list[float]
    source: str
    detail: dict[str, Any] | None = None


def probe_overhead_s() -> float:
    """Seconds an event-timed probe takes beyond its PROBE_CYCLES of spinning (launch and event latency):
    from probes of N and 4N cycles, t = N / f + overhead."""
    import torch

    from roofline.measuring.cuda_events import event_times

    def probe_s(cycles: int) -> float:
        return median(event_times(lambda: torch.cuda._sleep(cycles), 5))

    t1, t4 = probe_s(PROBE_CYCLES), probe_s(4 * PROBE_CYCLES)
    f = 3 * PROBE_CYCLES / (t4 - t1)
    return max(0.0, t1 - PROBE_CYCLES / f)


def between_kernels_mhz(probe_s: list[float], overhead_s: float) -> list[float]:
    """The SM clock (MHz) from each probe's event-timed seconds, less the probe's own overhead."""
    return [PROBE_CYCLES / (t - overhead_s) / 1e6 for t in probe_s if t > overhead_s]


def clock_report(nvml: ClockReport, between_mhz: list[float], in_kernel: KernelClock | None) -> Clocks:
    """The record's clocks: NVML's readings, the clock between and during the kernels, and as `sm_mhz` the
    best of them: during the kernel, else between kernels, else NVML's (kept as `sm_mhz_nvml` too)."""
    readings = nvml.to_dict()
    during = in_kernel.mhz if in_kernel else []
    if in_kernel and during:
        sm, source = spread(during), in_kernel.source
    elif between_mhz:
        sm, source = spread(between_mhz), "probe between kernels"
    else:
        sm, source = readings["sm_mhz"], "nvml"
    # from_dict keeps every key, None included, in this order: the clocks as records have always held them
    return Clocks.from_dict({**readings, "sm_mhz": sm, "sm_mhz_nvml": readings["sm_mhz"],
                             "sm_mhz_between_kernels": spread(between_mhz), "sm_mhz_in_kernel": spread(during),
                             "in_kernel_trace": in_kernel.detail if in_kernel else None, "sm_mhz_source": source})


def trace_rounds(kernel_s: float) -> int:
    """How many traced calls: INKERNEL_PROBES, fewer for long kernels (TRACE_BUDGET_S), never below MIN_TRACES."""
    return plan_calls(kernel_s, TRACE_BUDGET_S, MIN_TRACES, INKERNEL_PROBES)


class Tracer:
    """Clock traces beside calls of the operator, each cut to its call's window.

    `around(before, run)` enqueues, on the current (main) stream: an event that lets a trace start on a side
    stream, `before()` (the flush), a %globaltimer stamp, the call and a second stamp. The trace waits on its
    SM for the first stamp and stops at the second, recording (%globaltimer, %clock64) every TRACE_SPAN x
    kernel / TRACE_POINTS ns in between: launched before the flush, it is resident before the kernel fills the
    SMs. The main stream never waits for a trace (`join()` makes it wait for all of them before the results
    are read), but a trace holds one SM slot, which can hold up one block of a kernel whose blocks each need a
    whole SM: traced calls are timed apart from the samples (see `clock`)."""

    def __init__(self, rounds: int, kernel_s: float) -> None:
        import torch

        self.rounds = rounds
        self.traces, self.stamps = clocktrace.ClockTrace(rounds), clocktrace.Stamps(2 * rounds)
        self.period_ns = int(TRACE_SPAN * kernel_s * 1e9 / clocktrace.TRACE_POINTS)
        self.main, self.side = torch.cuda.current_stream(), torch.cuda.Stream()

    def around(self, before: Callable[[], Any], run: Callable[[], Any],
               between: Callable[[Callable[[], Any]], Any] | None = None) -> None:
        """Start a trace, `before()`, stamp, call `run` (inside `between`'s bracket, e.g. an event pair), stamp."""
        import torch

        go = torch.cuda.Event()
        go.record(self.main)
        with torch.cuda.stream(self.side):
            self.side.wait_event(go)
            self.traces.launch(self.period_ns, start=self.stamps.ahead(0), stop=self.stamps.ahead(1))
        before()
        self.stamps.stamp()
        (between or (lambda f: f()))(run)
        self.stamps.stamp()

    def join(self) -> None:
        self.main.wait_stream(self.side)

    def clock(self, notes: list[str], kernel_s: float | None = None) -> KernelClock:
        """After a synchronisation: the clock in each traced call, and the traces' coverage.

        With `kernel_s` (the untraced calls' median), each window is cut to its first kernel_s: beside the trace
        a kernel whose blocks each need a whole SM runs one block late, in a tail where few SMs work and the
        clock rises, so the traced call's tail is not the kernel's clock."""
        st = self.stamps.results()
        cut = int(kernel_s * 1e9) if kernel_s else None
        wins = [w for tr, k0, k1 in zip(self.traces.traces(), st[0::2], st[1::2], strict=True)
                if (w := clocktrace.clock_in_window(tr, k0, min(k1, k0 + cut) if cut else k1)) is not None]
        if not wins:
            notes.append(f"in-kernel clock: none of {self.rounds} traces found room on an SM during the kernel; "
                         "the clock shown is the clock between kernels")
            return KernelClock([], "")
        early, late = median([w.early_mhz for w in wins]), median([w.late_mhz for w in wins])
        detail = {"traces": len(wins), "of": self.rounds, "coverage": median([w.coverage for w in wins]),
                  "early_mhz": early, "late_mhz": late,
                  "window_s": median([(k1 - k0) * 1e-9 for k0, k1 in zip(st[0::2], st[1::2], strict=True)])}
        if late < early * (1 - CLOCK_FALL_NOTE):
            notes.append(f"SM clock fell within the kernel: {early:.0f} MHz in its first third, "
                         f"{late:.0f} MHz in its last (power or current limit)")
        return KernelClock([w.mhz for w in wins], "in-kernel clock trace", detail)


def make_tracer(kernel_s: float, notes: list[str]) -> Tracer | None:
    """A tracer for `kernel_s`-long calls, or None where the trace kernels cannot run (with a note when
    setting one up failed)."""
    if not clocktrace.available():
        return None
    try:
        return Tracer(trace_rounds(kernel_s), kernel_s)
    except Exception as exc:
        notes.append(f"in-kernel clock trace failed ({type(exc).__name__})")
        return None


def inkernel_clock(run: Callable[[], Any], before: Callable[[], None], kernel_s: float, probe_overhead: float,
                   notes: list[str]) -> KernelClock:
    """The SM clock during the kernel from rounds of their own, after the samples (for `graph-loop`, whose
    samples are one graph; other methods trace their last calls instead). Each round first spins
    HOST_LEAD_CYCLES so that the host has enqueued the round before the GPU reaches its first stamp.

    Where the trace kernels cannot run: torch.cuda._sleep beside the call, timed by events, which also counts
    any wait for room on an SM and so reads low beside kernels that fill them."""
    import torch

    tracer = make_tracer(kernel_s, notes)
    if tracer is not None:
        for _ in range(tracer.rounds):
            torch.cuda._sleep(HOST_LEAD_CYCLES)  # the GPU waits here while the host enqueues the rest
            tracer.around(before, run)
        tracer.join()
        torch.cuda.synchronize()
        return tracer.clock(notes, kernel_s)
    main, side = torch.cuda.current_stream(), torch.cuda.Stream()
    cycles = int(min(PROBE_CYCLES, 0.5 * kernel_s * FALLBACK_CYCLES_PER_S))
    pairs = []
    for _ in range(INKERNEL_PROBES):
        before()
        go = torch.cuda.Event()
        go.record(main)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(side):
            side.wait_event(go)
            s.record(side)
            torch.cuda._sleep(cycles)
            e.record(side)
        run()
        main.wait_stream(side)
        pairs.append((s, e))
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) * 1e-3 - probe_overhead for s, e in pairs]
    return KernelClock([cycles / t / 1e6 for t in times if t > 0], "in-kernel probe (event-timed, may read low)")


def with_traced_ratio(clock: KernelClock, traced_s: list[float], untraced_s: list[float]) -> KernelClock:
    """The clock with the traced calls' median time over the untraced ones' in its detail: whether the trace
    (one warp on one SM) disturbs the kernel."""
    if clock.detail is None or not traced_s:
        return clock
    return dataclasses.replace(clock, detail={**clock.detail,
                                              "traced_over_untraced": median(traced_s) / median(untraced_s)})
