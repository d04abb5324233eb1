"""Timing real kernels, in the manner of `triton.testing.do_bench`, and the reasons for each choice.

GPU protocol (`time_cuda`):
- Warm-up and repetitions are time budgets, sized from a short estimate of one call.
- The L2 is flushed before every sample by *reading* a buffer of FLUSH_L2_MULTIPLE x the L2 size. A flush
  that writes (zeroing a buffer) leaves the L2 full of dirty lines whose write-back lands inside the next
  timed kernel; a read leaves clean lines that are dropped for free. The flush is outside the timed region.
- Every sample has its own pair of device events; all samples are enqueued before one synchronisation, so
  the GPU never idles between them (an idle GPU lowers its clock, and short kernels then read slow).
- `graph` (the default where capture works): the operator is captured once in a CUDA graph and each sample
  times one replay. A multi-kernel operator (unfused RoPE is five kernels) is timed as a whole: the replay
  has no host launch gaps between its kernels, so the time is the operator's device time, not Python's.
- `graph-loop`: the whole sampling loop (flush, event, operator, event) x N is captured in one graph with
  external event nodes; nothing on the host paces the GPU at all.
- `events`: eager launches between the events (for callables that cannot be captured).
- Power: `burst` (the default) spins at low power for 2x a compute-bound kernel's time before each sample, so
  that no sample runs under the power cap: the kernel as it runs in isolation, and as Nsight Compute times it.
  Other operators run back to back (the cap does not engage on them).
  `sustained` runs the samples back to back after a warm-up (at least SUSTAINED_WARMUP_S for compute-bound
  operators): the steady state, power cap included. On the H200 a 3.15 ms attention kernel stepped to
  3.69 ms after ~80 ms of back-to-back work, when the power cap engaged.
- Warm-up runs until the operator's time is steady: in chunks, until two chunk means agree within 1%.
- The event pair's own cost is measured (TIMER_PAIRS pairs with nothing between them, recorded after the
  flush as every sample is) and subtracted from every sample. On the H200 (2026-11-29) an empty pair read
  1.28-1.34 µs; with it left in, 33-105 µs kernels read 1.0-2.6 µs above Nsight Compute (a 33 µs GEMV +4-6%);
  less it, the memory-bound kernels of the acceptance suite agree within 2.0%. The launch latency stays in:
  every real launch pays it, and Nsight Compute's gpu__time_duration counts it too (a 0.5 µs spin reads
  1.6-2.0 µs there, 0.6-1.1 µs in CUPTI's kernel records).
- The SM clock: after every sample a spin of PROBE_CYCLES (torch.cuda._sleep) timed by its own events gives
  the clock between kernels. The clock *during* the kernel comes from clock traces (`roofline.measuring.clocktrace`)
  on a side stream beside a few more calls that follow the samples in the same stream of work, each cut to
  its call's window by %globaltimer stamps (`_Tracer`). NVML's sampled clock lags the power controller (it
  read 1980 MHz during kernels that Nsight Compute saw at 1.6-1.7 GHz), and the clock between kernels
  reads 10-20% above the clock during tensor-core kernels.
Every sample is kept; statistics are derived (`roofline.core.stats`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from roofline.core.stats import Summary, median, summarize

# Budgets: 10 ms of warm-up (at least; see below) and 25 ms of samples, a quarter of triton's do_bench
# default. Memory-bound samples run back to back (no burst gap, below), so 25 ms holds 54-211 of them on the
# H200's acceptance kernels (26-45 in 50 ms with the old 1 ms gap); compute-bound ones with a gap get at
# least MIN_REPS. Two runs of the 16 kernels agreed within 0.5-1.4% (median) at these budgets (2026-11-29).
WARMUP_BUDGET_S = 0.010
REP_BUDGET_S = 0.025
# Below 10 samples a median and an IQR mean little; above 2000 the enqueue loop itself costs too much.
MIN_REPS = 10
MAX_REPS = 2000
MIN_WARMUP_CALLS = 2
# The flush reads this multiple of the L2 size: 2x is the least that evicts an LRU-like cache; 3x leaves
# margin for the hashed set mapping of recent NVIDIA L2s.
FLUSH_L2_MULTIPLE = 3
DEFAULT_L2_BYTES = 64 * 2**20  # when neither the spec nor torch says (larger than any L2 before Blackwell)
METHODS = ("auto", "graph", "graph-loop", "events")
# "read" is the default and the right one; "write" (zeroing the buffer, as triton's do_bench does) is kept
# so the difference can be shown: its dirty lines are written back inside the next timed kernel.
FLUSH_MODES = ("read", "write")
# Warm-up in chunks of this much device time, until two consecutive chunk means agree within WARMUP_STABLE;
# operators that are not compute-bound use chunks a quarter as long (their time does not move with the power
# state: 10 memory-bound kernels repeated within 0.5% between runs on the H200, and burst and sustained runs
# of them agreed within 0.6%, one GEMV within 1.4%).
WARMUP_CHUNK_S = 0.02
WARMUP_STABLE = 0.01
# Compute-bound (tensor-core) work warms up for at least this long: the power cap engaged after ~50-100 ms
# of back-to-back tensor-core kernels on the H200 (2026-11-29), and the samples must come after it; with
# 0.15 s two runs of a cold-started 4096^3 GEMM differed by 4.4%, with 0.25 s by under 1%.
# `burst` mode does the opposite for compute-bound operators: a low-power spin of BURST_GAP_FACTOR x the
# kernel's time (at least BURST_MIN_GAP_S) before each sample keeps the duty cycle low, so every sample runs
# before the power cap engages, as a kernel does in isolation (and under Nsight Compute, which idles the GPU
# between kernels). Other operators run back to back in both modes: the cap never engaged on them (burst and
# sustained agreed within 0.6% on the H200's memory-bound kernels, one GEMV 1.4%, at the same clock), and a
# gap of at least 1 ms per sample spent 71-93% of their sampling time spinning. Gaps of 1x, 2x and 4x the
# kernel gave the same medians within 0.6% on the H200, all within 1% of Nsight Compute on the five
# power-capped kernels (docs/results/2026-11-29-h200-timing-4/gap_experiment_*); 2x keeps the duty cycle at
# a third, with margin.
BURST_GAP_FACTOR = 2.0
BURST_MIN_GAP_S = 0.001
POWER_MODES = ("sustained", "burst")
# Burst is the default: on the H200 (2026-11-29) two burst runs of the 16-kernel suite agreed within 0.56%
# and matched Nsight Compute's times within 1% on every power-capped kernel. Across four GPU calls (perhaps
# four machines) burst and ncu moved together (bf16 8192^3: 1365-1416 µs and 1370-1426 µs). The sustained
# (capped) time of the fp16 4096^3 GEMM ranged 181-210 µs across runs, 6.5% apart in two runs of one call:
# the capped clock follows the GPU's temperature, which a regression check cannot hold still.
DEFAULT_POWER = "burst"
SUSTAINED_WARMUP_S = 0.25
# A compute-bound operator timed right after another one (its samples ended less than HOT_GAP_S ago) finds the
# GPU already under the power cap and warms up for at least HOT_WARMUP_S instead. (The cap engaged after
# 100-190 ms from idle on the H200, 2026-11-29: scripts/warmup_experiment.py.)
HOT_GAP_S = 0.3
HOT_WARMUP_S = 0.1
MAX_WARMUP_S = 1.0
# Clock probe: ~50 µs at 2 GHz, long beside the ~1 µs resolution and launch overhead of an event pair.
PROBE_CYCLES = 100_000
# In-kernel clock: on the H200 the clock between kernels read 1.92-1.96 GHz while Nsight Compute saw
# tensor-core kernels at 1.54-1.69 GHz: the clock drops while the tensor cores draw current and recovers within
# microseconds, so only a trace running during the kernel sees the kernel's clock. INKERNEL_PROBES more calls
# follow the samples in the same enqueued stream of work (so at the same duty cycle and power state), each
# beside a clock trace on a side stream; kernels longer than TRACE_BUDGET_S / INKERNEL_PROBES get fewer (at
# least MIN_TRACES: a long kernel's trace still has 64 points). Traces in rounds of their own, each after a
# 100 µs idle spin, ran at a lower duty cycle than sustained samples: the fp16 4096^3 GEMM then read 6% slower
# than Nsight Compute "at the same clock"; traced in the samples' stream, 2.1-2.6%. Below INKERNEL_MIN_S
# the stamps' window (a few µs of launch either side) would be a large part of the kernel's.
INKERNEL_PROBES = 8
TRACE_BUDGET_S = 0.01
MIN_TRACES = 3
INKERNEL_MIN_S = 40e-6
# The clock trace's points are spaced TRACE_SPAN x the kernel's (warm) time / TRACE_POINTS apart, so that 64
# points outlast a kernel somewhat slower than its estimate; the trace stops at the stamp after the kernel.
# HOST_LEAD_CYCLES (~100 µs) of spin before each round of `_inkernel_clock` (rounds of their own, for
# graph-loop) lets the host enqueue the round before the GPU reaches it.
TRACE_SPAN = 1.3
HOST_LEAD_CYCLES = 200_000
# A note says so when the clock in the kernel's last third is this much below its first third's.
CLOCK_FALL_NOTE = 0.05
# The timer's own cost: the median of this many empty event pairs (a few milliseconds with the flush).
TIMER_PAIRS = 64


# When the last sustained compute-bound measurement of this process finished its samples (time.monotonic()).
_hot = {"end": -math.inf}


@dataclass
class Measurement:
    """Raw samples and how they were taken; statistics are derived on demand."""

    samples_s: list[float]
    method: str
    warmup_calls: int
    estimate_s: float
    l2_flush: bool
    flush_bytes: int = 0
    clocks: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    clock_samples_mhz: list[float] = field(default_factory=list)  # the probe's SM clock after each sample
    warmup_s: float = 0.0
    timer_overhead_s: float = 0.0  # an empty event pair's median, subtracted from every raw sample
    warmup_min_s: float = 0.0  # the least warm-up asked for (sustained compute-bound: full or after another)
    after_compute_s: float | None = None  # seconds since the previous compute-bound operator's samples ended
    capture_s: float = 0.0  # host seconds spent capturing the CUDA graph
    # host seconds of each part of time_cuda: setup (first call, estimate, capture, overhead probes), warmup,
    # samples (with the traced calls) and finish (the timer's cost, clock statistics): where a run's time goes
    host_phases_s: dict[str, float] = field(default_factory=dict)

    @property
    def times_s(self) -> list[float]:
        """The operator's time per sample: the raw event interval less the timer's own cost."""
        return [t - self.timer_overhead_s for t in self.samples_s]

    @property
    def summary(self) -> Summary:
        return summarize(self.times_s)

    @property
    def median_s(self) -> float:
        return self.summary.median

    def timing_dict(self) -> dict[str, Any]:
        return {"method": self.method, "warmup_calls": self.warmup_calls, "warmup_s": self.warmup_s,
                "reps": len(self.samples_s), "estimate_s": self.estimate_s, "l2_flush": self.l2_flush,
                "flush_bytes": self.flush_bytes, "stats": self.summary.to_dict(), "notes": self.notes,
                "timer_overhead_s": self.timer_overhead_s, "sm_clock_samples_mhz": self.clock_samples_mhz,
                "warmup_min_s": self.warmup_min_s, "after_compute_s": self.after_compute_s,
                "capture_s": self.capture_s, "host_phases_s": self.host_phases_s}


def plan_calls(per_call_s: float, budget_s: float, lo: int, hi: int) -> int:
    """How many calls fit a time budget, clamped to [lo, hi]."""
    if per_call_s <= 0:
        return hi
    return max(lo, min(hi, math.ceil(budget_s / per_call_s)))


def time_cpu(fn: Callable[[], Any], warmup_s: float = WARMUP_BUDGET_S, rep_s: float = REP_BUDGET_S,
             clock: Callable[[], float] = time.perf_counter, max_reps: int = MAX_REPS) -> Measurement:
    """Host-clock timing for the CPU device: torch's CPU ops are synchronous, so the clock brackets the work.

    NB: caches are not flushed on the CPU (its last-level cache is small beside any realistic input).
    """
    t0 = clock()
    fn()
    first = clock() - t0
    warm = plan_calls(first, warmup_s, 1, 100)
    for _ in range(warm):
        fn()
    t0 = clock()
    fn()
    estimate = max(clock() - t0, 1e-9)
    reps = plan_calls(estimate, rep_s, 3 if estimate > 0.2 else MIN_REPS, max_reps)
    samples = []
    for _ in range(reps):
        t0 = clock()
        fn()
        samples.append(clock() - t0)
    return Measurement(samples, "cpu-perf-counter", warm + 1, estimate, l2_flush=False)


def time_cuda(fn: Callable[[], Any], device: str = "cuda:0", l2_bytes: int | None = None, warm_l2: bool = False,
              method: str = "auto", warmup_s: float = WARMUP_BUDGET_S, rep_s: float = REP_BUDGET_S,
              graph_safe: bool = True, sample_clocks: bool = True, compute_bound: bool = False,
              power: str = DEFAULT_POWER, flush_mode: str = "read", flush_multiple: float = FLUSH_L2_MULTIPLE
              ) -> Measurement:
    """Device-event timing with a read-only L2 flush before every sample (see the module docstring).
    `compute_bound` (the roofline's verdict) decides the power handling: a burst gap, or a long warm-up."""
    import torch

    from roofline.measuring.nvml import ClockSampler

    if method not in METHODS:
        raise ValueError(f"unknown timing method {method!r}")
    if power not in POWER_MODES:
        raise ValueError(f"unknown power mode {power!r}")
    t_start = time.perf_counter()
    dev = torch.device(device)
    torch.cuda.set_device(dev)
    notes: list[str] = []
    if l2_bytes is None:
        l2_bytes = getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 0) or DEFAULT_L2_BYTES
    if flush_mode not in FLUSH_MODES:
        raise ValueError(f"unknown flush mode {flush_mode!r}")
    flush_bytes = 0 if warm_l2 else int(flush_multiple * l2_bytes) // 4 * 4
    flush_buf = torch.ones(flush_bytes // 4, dtype=torch.float32, device=dev) if flush_bytes else None
    flush_out = torch.empty((), dtype=torch.float32, device=dev)

    def flush() -> None:
        if flush_buf is None:
            return
        if flush_mode == "read":
            torch.sum(flush_buf, dim=0, out=flush_out)  # reads the buffer; writes 4 bytes
        else:
            flush_buf.zero_()  # do_bench's flush: leaves the L2 full of dirty lines (for comparison only)

    fn()  # first call: compilation, autotuning, handle creation
    torch.cuda.synchronize()
    estimate = event_time(fn, flush, 3)

    if method == "auto":
        # Without a flush between samples nothing on the GPU gives the host time to run ahead, so each replay's
        # launch latency would land inside the timed region: time the whole loop as one graph instead.
        method = "graph-loop" if warm_l2 else "graph"
    run, chosen = fn, "events"
    t_capture = time.perf_counter()
    if method in ("graph", "graph-loop") and graph_safe:
        try:
            run = _capture(fn)
            chosen = "graph"
        except Exception as exc:
            notes.append(f"CUDA graph capture failed ({type(exc).__name__}); timed eager launches")
    elif method != "events" and not graph_safe:
        notes.append("operator is not graph-safe; timed eager launches")
    capture_s = time.perf_counter() - t_capture

    flush_s = event_time(flush, lambda: None, 3) if flush_buf is not None else 0.0
    probe_overhead = _probe_overhead() if sample_clocks else 0.0
    gap_cycles = 0
    real_flush = flush
    sustained = compute_bound and power == "sustained"  # a steady state under the power cap: warm up long
    gap_s = burst_gap_s(estimate, compute_bound) if power == "burst" else 0.0
    if gap_s:
        gap_cycles = int(gap_s * 2e9)  # about gap_s at a 2 GHz clock: only the order of magnitude matters
        flush_s += gap_s

        def flush() -> None:  # the gap spin, then the flush: both outside the timed region
            torch.cuda._sleep(gap_cycles)
            real_flush()

    reps = plan_calls(estimate + flush_s, rep_s, MIN_REPS, MAX_REPS)
    index = dev.index if dev.index is not None else torch.cuda.current_device()

    t_setup = time.perf_counter()
    with ClockSampler(index) if sample_clocks else _NullSampler() as sampler:
        gap = time.monotonic() - _hot["end"] if sustained else math.inf
        warm_min = HOT_WARMUP_S if gap < HOT_GAP_S else SUSTAINED_WARMUP_S
        warm, warm_s, warm_mean = _warm_up(run, flush, estimate + flush_s, warmup_s, sustained, notes, warm_min)
        t_warm = time.perf_counter()
        # the kernel's time now that it is warm (the first estimate ran at the idle GPU's clock)
        kernel_est = max(estimate, warm_mean - flush_s)
        inkernel: list[float] = []
        inkernel_source, trace_detail = "", None
        traced: list[float] = []
        want_trace = sample_clocks and kernel_est >= INKERNEL_MIN_S
        if method == "graph-loop" and chosen == "graph":
            try:
                samples, probes = _graph_loop(fn, flush, reps, sample_clocks)
                chosen = "graph-loop"
            except Exception as exc:
                notes.append(f"graph-loop capture failed ({type(exc).__name__}); timed graph replays")
                samples, probes, _ = _sample(run, flush, reps, sample_clocks)
        else:
            tracer = _make_tracer(kernel_est, notes) if want_trace else None
            try:
                samples, probes, traced = _sample(run, flush, reps, sample_clocks, tracer)
            except Exception as exc:  # a trace that cannot launch (a driver that cannot load the PTX, say)
                if tracer is None:
                    raise
                notes.append(f"in-kernel clock trace failed ({type(exc).__name__})")
                tracer = None
                samples, probes, traced = _sample(run, flush, reps, sample_clocks)
            if tracer is not None:
                inkernel, inkernel_source, trace_detail = tracer.clock(notes, median(samples))
                want_trace = False
        if sustained:
            _hot["end"] = time.monotonic()
        t_samples = time.perf_counter()
        overhead = _timer_overhead(real_flush, chosen == "graph-loop")  # without the burst gap
        if overhead >= min(samples):
            notes.append(f"timer overhead ({overhead * 1e6:.2f} µs) not subtracted: a sample was shorter")
            overhead = 0.0
        if want_trace:
            try:
                inkernel, inkernel_source, trace_detail = _inkernel_clock(run, flush, median(samples) - overhead,
                                                                          probe_overhead, notes)
            except Exception as exc:
                notes.append(f"in-kernel clock probe failed ({type(exc).__name__})")
        if trace_detail is not None and traced:
            # a traced call beside an untraced one: shows whether the trace (one warp on one SM) disturbs it
            trace_detail["traced_over_untraced"] = median(traced) / median(samples)
    clock_mhz = [PROBE_CYCLES / (t - probe_overhead) / 1e6 for t in probes if t > probe_overhead]
    clocks = sampler.report.to_dict() if sample_clocks else None
    if clocks is not None:
        def stat(xs: list[float]) -> dict[str, float]:
            return {"median": median(xs), "min": min(xs), "max": max(xs)}

        clocks["sm_mhz_nvml"] = clocks["sm_mhz"]
        clocks["sm_mhz_between_kernels"] = stat(clock_mhz) if clock_mhz else None
        clocks["sm_mhz_in_kernel"] = stat(inkernel) if inkernel else None
        clocks["in_kernel_trace"] = trace_detail
        if inkernel:
            clocks["sm_mhz"], clocks["sm_mhz_source"] = stat(inkernel), inkernel_source
        elif clock_mhz:
            clocks["sm_mhz"], clocks["sm_mhz_source"] = stat(clock_mhz), "probe between kernels"
        else:
            clocks["sm_mhz_source"] = "nvml"
    if gap_cycles:
        notes.append(f"burst mode: {gap_cycles / 2e9 * 1e3:.1f} ms low-power spin before each sample")
    return Measurement(samples, chosen + ("+burst" if power == "burst" else ""), warm + 1, estimate,
                       l2_flush=flush_buf is not None, flush_bytes=flush_bytes, clocks=clocks, notes=notes,
                       clock_samples_mhz=clock_mhz, warmup_s=warm_s, timer_overhead_s=overhead,
                       warmup_min_s=warm_min if sustained else 0.0, capture_s=capture_s,
                       after_compute_s=gap if math.isfinite(gap) else None,
                       host_phases_s={"setup": t_setup - t_start, "warmup": t_warm - t_setup,
                                      "samples": t_samples - t_warm, "finish": time.perf_counter() - t_samples})


class _NullSampler:
    report = None

    def __enter__(self) -> _NullSampler:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def burst_gap_s(estimate_s: float, compute_bound: bool) -> float:
    """Seconds of low-power spin before each sample in burst mode: none for operators that are not
    compute-bound (see BURST_GAP_FACTOR)."""
    return max(BURST_MIN_GAP_S, BURST_GAP_FACTOR * estimate_s) if compute_bound else 0.0


def event_time(fn: Callable[[], Any], before: Callable[[], Any], n: int) -> float:
    """Mean seconds per call of `fn` over n calls, each after `before()`, from one event pair per call."""
    import torch

    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for s, e in pairs:
        before()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return sum(s.elapsed_time(e) for s, e in pairs) / n * 1e-3


def _warm_up(run: Callable[[], Any], flush: Callable[[], None], per_call_s: float, min_s: float, sustained: bool,
             notes: list[str], sustained_s: float = SUSTAINED_WARMUP_S) -> tuple[int, float, float]:
    """Run (flush, operator) in chunks until the chunk means are steady; returns (calls, seconds, the last
    chunk's seconds per call)."""
    import torch

    chunk = plan_calls(per_call_s, WARMUP_CHUNK_S if sustained else WARMUP_CHUNK_S / 4, MIN_WARMUP_CALLS, 1000)
    need = max(min_s, sustained_s if sustained else 0.0)
    total, calls, prev = 0.0, 0, None
    stream = torch.cuda.current_stream()
    while True:
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(stream)
        for _ in range(chunk):
            flush()
            run()
        e.record(stream)
        e.synchronize()
        t = s.elapsed_time(e) * 1e-3
        total, calls, mean = total + t, calls + chunk, t / chunk
        if prev is not None and abs(mean / prev - 1) < WARMUP_STABLE and total >= need:
            return calls, total, mean
        if total >= MAX_WARMUP_S:
            notes.append(f"time still drifting after {total:.2f} s of warm-up ({mean / prev - 1:+.1%} per chunk)"
                         if prev else "warm-up budget spent")
            return calls, total, mean
        prev = mean


def _probe_overhead() -> float:
    """Seconds an event-timed probe takes beyond its PROBE_CYCLES of spinning (launch and event latency):
    from probes of N and 4N cycles, t = N / f + overhead."""
    import torch

    def t(cycles: int) -> float:
        pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(5)]
        for s, e in pairs:
            s.record()
            torch.cuda._sleep(cycles)
            e.record()
        torch.cuda.synchronize()
        return median([s.elapsed_time(e) * 1e-3 for s, e in pairs])

    t1, t4 = t(PROBE_CYCLES), t(4 * PROBE_CYCLES)
    f = 3 * PROBE_CYCLES / (t4 - t1)
    return max(0.0, t1 - PROBE_CYCLES / f)


def _timer_overhead(flush: Callable[[], None], in_graph: bool, n: int = TIMER_PAIRS) -> float:
    """Median seconds between two events recorded back to back after the flush, the way every sample's pair
    is recorded (eagerly, or as external event nodes in one graph for `graph-loop`)."""
    import torch

    pairs = [(torch.cuda.Event(enable_timing=True, external=in_graph),
              torch.cuda.Event(enable_timing=True, external=in_graph)) for _ in range(n)]

    def record() -> None:
        for s, e in pairs:
            flush()
            s.record()
            e.record()

    if in_graph:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            record()
        graph.replay()
    else:
        record()
    torch.cuda.synchronize()
    return median([s.elapsed_time(e) * 1e-3 for s, e in pairs])


class _Tracer:
    """Clock traces beside calls of the operator (`roofline.measuring.clocktrace`), each cut to its call's window.

    `around(flush, run)` enqueues, on the current (main) stream: an event that lets a trace start on a side
    stream, the flush, a %globaltimer stamp, the call and a second stamp. The trace waits on its SM for the
    first stamp and stops at the second, recording (%globaltimer, %clock64) every TRACE_SPAN x kernel /
    TRACE_POINTS ns in between. The main stream never waits for a trace (`join()` makes it wait for all of
    them before the results are read), but a trace holds one SM slot, which can hold up one block of a kernel
    whose blocks each need a whole SM: traced calls are timed apart from the samples (see `clock`)."""

    def __init__(self, rounds: int, kernel_s: float) -> None:
        import torch

        from roofline.measuring.runner import clocktrace as clockprobe
        self.rounds = rounds
        self.traces, self.stamps = clockprobe.ClockTrace(rounds), clockprobe.Stamps(2 * rounds)
        self.period_ns = int(TRACE_SPAN * kernel_s * 1e9 / clockprobe.TRACE_POINTS)
        self.main, self.side = torch.cuda.current_stream(), torch.cuda.Stream()

    def around(self, flush: Callable[[], Any], run: Callable[[], Any],
               between: Callable[[Callable[[], Any]], Any] | None = None) -> None:
        """Start a trace, flush, stamp, call `run` (inside `between`'s bracket, e.g. an event pair), stamp."""
        import torch

        go = torch.cuda.Event()
        go.record(self.main)
        with torch.cuda.stream(self.side):
            self.side.wait_event(go)
            self.traces.launch(self.period_ns, start=self.stamps.ahead(0), stop=self.stamps.ahead(1))
        flush()
        self.stamps.stamp()
        (between or (lambda f: f()))(run)
        self.stamps.stamp()

    def join(self) -> None:
        self.main.wait_stream(self.side)

    def clock(self, notes: list[str], kernel_s: float | None = None) -> tuple[list[float], str, dict[str, Any] | None]:
        """After a synchronisation: the clock (MHz) in each traced call, its source, and the traces' coverage.

        With `kernel_s` (the untraced calls' median), each window is cut to its first kernel_s: the trace holds
        a slot on one SM, and a kernel whose blocks each need a whole SM runs one block late beside it (the
        fp16 4096^3 GEMM's traced calls took 1.20x as long on the H200), in a tail where few SMs work and the
        clock rises (1595 MHz in the first third, 1800 in the last)."""
        from roofline.measuring.runner import clocktrace as clockprobe
        st = self.stamps.results()
        cut = int(kernel_s * 1e9) if kernel_s else None
        wins = [w for tr, k0, k1 in zip(self.traces.traces(), st[0::2], st[1::2], strict=True)
                if (w := clockprobe.clock_in_window(tr, k0, min(k1, k0 + cut) if cut else k1)) is not None]
        if not wins:
            notes.append(f"in-kernel clock: none of {self.rounds} traces found room on an SM during the kernel; "
                         "the clock shown is the clock between kernels")
            return [], "", None
        detail = {"traces": len(wins), "of": self.rounds, "coverage": median([w.coverage for w in wins]),
                  "early_mhz": median([w.early_mhz for w in wins]), "late_mhz": median([w.late_mhz for w in wins]),
                  "window_s": median([(k1 - k0) * 1e-9 for k0, k1 in zip(st[0::2], st[1::2], strict=True)])}
        if detail["late_mhz"] < detail["early_mhz"] * (1 - CLOCK_FALL_NOTE):
            notes.append(f"SM clock fell within the kernel: {detail['early_mhz']:.0f} MHz in its first third, "
                         f"{detail['late_mhz']:.0f} MHz in its last (power or current limit)")
        return [w.mhz for w in wins], "in-kernel clock trace", detail


def _make_tracer(kernel_s: float, notes: list[str]) -> _Tracer | None:
    """A tracer for `kernel_s`-long calls, or None where the probe kernels cannot run (with a note when
    setting one up failed)."""
    from roofline.measuring.runner import clocktrace as clockprobe
    if not clockprobe.available():
        return None
    try:
        return _Tracer(trace_rounds(kernel_s), kernel_s)
    except Exception as exc:
        notes.append(f"in-kernel clock trace failed ({type(exc).__name__})")
        return None


def trace_rounds(kernel_s: float) -> int:
    """How many traced calls: INKERNEL_PROBES, fewer for long kernels (TRACE_BUDGET_S), never below MIN_TRACES."""
    return plan_calls(kernel_s, TRACE_BUDGET_S, MIN_TRACES, INKERNEL_PROBES)


def _inkernel_clock(run: Callable[[], Any], flush: Callable[[], None], kernel_s: float, overhead: float,
                    notes: list[str]) -> tuple[list[float], str, dict[str, Any] | None]:
    """SM clock (MHz) during the kernel from rounds of their own, after the samples (for `graph-loop`, whose
    samples are one graph; `_sample` traces its last calls instead). Each round first spins HOST_LEAD_CYCLES
    so that the host has enqueued the round before the GPU reaches its first stamp.
    Where the probe kernels cannot run: torch.cuda._sleep timed by events, which also counts any wait for
    room on an SM and so reads low beside kernels that fill them (relu 2^28: 340 MHz)."""
    import torch

    tracer = _make_tracer(kernel_s, notes)
    if tracer is not None:
        for _ in range(tracer.rounds):
            torch.cuda._sleep(HOST_LEAD_CYCLES)  # the GPU waits here while the host enqueues the rest
            tracer.around(flush, run)
        tracer.join()
        torch.cuda.synchronize()
        return tracer.clock(notes, kernel_s)
    main, side = torch.cuda.current_stream(), torch.cuda.Stream()
    cycles = int(min(PROBE_CYCLES, 0.5 * kernel_s * 1.5e9))
    pairs = []
    for _ in range(INKERNEL_PROBES):
        flush()
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
    times = [s.elapsed_time(e) * 1e-3 - overhead for s, e in pairs]
    return [cycles / t / 1e6 for t in times if t > 0], "in-kernel probe (event-timed, may read low)", None


def _sample(run: Callable[[], Any], flush: Callable[[], None], reps: int, probe: bool,
            tracer: _Tracer | None = None) -> tuple[list[float], list[float], list[float]]:
    """Enqueue every sample (and its clock probe), then synchronise once: the GPU runs them back to back.

    With a tracer, `tracer.rounds` more calls follow the samples, each beside a clock trace: they run in the
    same steady state as the samples (the host is far ahead of the GPU by then, so no gap opens), and their
    times are returned apart (third list), never mixed into the samples."""
    import torch

    extra = tracer.rounds if tracer is not None else 0
    n = reps + extra
    ev = [[torch.cuda.Event(enable_timing=True) for _ in range(n)] for _ in range(3 if probe else 2)]
    stream = torch.cuda.current_stream()  # passed to record(): looking it up costs ~20 µs of host per call
    sleep = torch.cuda._sleep
    for i in range(n):
        if i < reps:
            flush()
            ev[0][i].record(stream)
            run()
            ev[1][i].record(stream)
        else:
            def timed(f: Callable[[], Any], i: int = i) -> None:
                ev[0][i].record(stream)
                f()
                ev[1][i].record(stream)

            assert tracer is not None
            tracer.around(flush, run, timed)
        if probe:
            sleep(PROBE_CYCLES)
            ev[2][i].record(stream)
    if tracer is not None:
        tracer.join()
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) * 1e-3 for s, e in zip(ev[0], ev[1], strict=True)]
    probes = [s.elapsed_time(e) * 1e-3 for s, e in zip(ev[1], ev[2], strict=True)] if probe else []
    return times[:reps], probes[:reps], times[reps:]


def _capture(fn: Callable[[], Any]) -> Callable[[], Any]:
    """Capture `fn` in a CUDA graph (after a side-stream warm-up, as torch requires) and return its replay."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    graph.replay()
    torch.cuda.synchronize()
    return graph.replay


def _graph_loop(fn: Callable[[], Any], flush: Callable[[], None], reps: int, probe: bool
                ) -> tuple[list[float], list[float]]:
    """The whole sampling loop as one graph, timed by external event-record nodes."""
    import torch

    ev = [[torch.cuda.Event(enable_timing=True, external=True) for _ in range(reps)] for _ in range(3)]
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(reps):
            flush()
            ev[0][i].record()
            fn()
            ev[1][i].record()
            if probe:
                torch.cuda._sleep(PROBE_CYCLES)
                ev[2][i].record()
    graph.replay()
    torch.cuda.synchronize()
    samples = [s.elapsed_time(e) * 1e-3 for s, e in zip(ev[0], ev[1], strict=True)]
    probes = [s.elapsed_time(e) * 1e-3 for s, e in zip(ev[1], ev[2], strict=True)] if probe else []
    return samples, probes
