"""Timing on a CUDA device, in the manner of `triton.testing.do_bench` (docs/timing.md: the protocol, and the
measurements behind each choice).

- Warm-up and repetitions are time budgets, sized from a short estimate of one call; warm-up runs in chunks
  until two chunk means agree within WARMUP_STABLE.
- The L2 is flushed before every sample, outside the timed region, by *reading* a buffer of
  FLUSH_L2_MULTIPLE x the L2 (`L2Flush`): a flush that writes leaves the L2 full of dirty lines whose
  write-back lands inside the next timed kernel, a read leaves clean lines that are dropped for free.
- Every sample has its own pair of device events, and all samples are enqueued before one synchronisation,
  so the GPU never idles between them (an idle GPU lowers its clock, and short kernels then read slow).
- Methods: `cupti` (auto's choice for operators shorter than timing_cupti.SHORT_OP_S once warm) sums the device
  timestamps of the operator's own kernels in each sample (`roofline.measuring.timing_cupti`); `graph` (the
  default for longer operators, where capture works) times one replay of the operator captured in a CUDA
  graph, so a multi-kernel operator is timed as a whole, with no host launch gaps between its kernels;
  `graph-loop` captures the whole sampling loop (flush, event, operator, event) x N in one graph, so nothing
  on the host paces the GPU; `events` launches eagerly (callables that cannot be captured).
- Power: `burst` (the default) spins at low power before each sample of a compute-bound operator, so that no
  sample runs under the power cap: the kernel as it runs in isolation, and as Nsight Compute times it.
  `sustained` runs the samples back to back after a long warm-up: the steady state, power cap included.
  Other operators run back to back in both modes (the cap does not engage on them).
- The event pair's own cost (empty pairs recorded after the flush, as every sample's) is subtracted from
  every sample. The launch latency stays in: every real launch pays it, and Nsight Compute counts it too.
- The SM clock between and during the kernels: `roofline.measuring.sm_clock`; NVML's readings beside it.
Every sample is kept; statistics are derived (`roofline.core.stats`).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from roofline.core.stats import median
from roofline.measuring.cuda_events import event_times, mean_event_time
from roofline.measuring.sm_clock import (
    INKERNEL_MIN_S,
    PROBE_CYCLES,
    KernelClock,
    Tracer,
    between_kernels_mhz,
    clock_report,
    inkernel_clock,
    make_tracer,
    probe_overhead_s,
    with_traced_ratio,
)
from roofline.measuring.timing import (
    DEFAULT_POWER,
    FLUSH_L2_MULTIPLE,
    FLUSH_MODES,
    MAX_REPS,
    METHODS,
    MIN_REPS,
    POWER_MODES,
    REP_BUDGET_S,
    WARMUP_BUDGET_S,
    Measurement,
    plan_calls,
)
from roofline.measuring.timing_cupti import (
    SHORT_OP_S,
    KernelSamples,
    LayoutError,
    launch_gap,
    measures_launch_gap,
    profiled_samples,
)

DEFAULT_L2_BYTES = 64 * 2**20  # when neither the spec nor torch says (larger than any L2 before Blackwell)
# Warm-up in chunks of this much device time, until two consecutive chunk means agree within WARMUP_STABLE.
# Operators that are not sustained compute-bound use chunks a quarter as long: their time does not move with
# the power state (burst and sustained agree within 0.6% on memory-bound kernels, docs/measurements.md).
WARMUP_CHUNK_S = 0.02
WARMUP_STABLE = 0.01
MIN_WARMUP_CALLS = 2
MAX_WARMUP_CALLS_PER_CHUNK = 1000
MAX_WARMUP_S = 1.0
# Sustained compute-bound operators warm up at least this long, so that their samples come after the power cap
# engages (after 100-190 ms of back-to-back tensor-core work on the H200; with 0.25 s of warm-up two runs of a
# cold 4096^3 GEMM agreed within 1%). One whose samples start less than HOT_GAP_S after another compute-bound
# operator's ended finds the GPU already capped, and warms up at least HOT_WARMUP_S.
SUSTAINED_WARMUP_S = 0.25
HOT_GAP_S = 0.3
HOT_WARMUP_S = 0.1
# Burst: before each sample of a compute-bound operator, a low-power spin of BURST_GAP_FACTOR x its time (at
# least BURST_MIN_GAP_S) keeps the duty cycle at a third, so every sample runs before the power cap engages.
# Gaps of 1x, 2x and 4x gave the same medians within 0.6% on the H200; 2x leaves margin for GPUs whose cap is
# nearer their draw. Other operators get no gap: the cap does not engage on them, and a gap of at least 1 ms
# per sample would spend most of their sampling time spinning.
BURST_GAP_FACTOR = 2.0
BURST_MIN_GAP_S = 0.001
# Spin cycles per second assumed when turning a gap into torch.cuda._sleep cycles (only the order matters).
SPIN_CYCLES_PER_S = 2e9
# The method is chosen after the warm-up from the median of this many event-timed calls: the first estimate
# runs at the idle GPU's clock (345 MHz on the H200) and can read a short kernel (a 9 µs RMSNorm, a 14 µs decode
# attention) above timing_cupti.SHORT_OP_S, so one suite would be timed by two methods from run to run.
SETTLED_CALLS = 5
# The timer's own cost: the median of this many empty event pairs (a few milliseconds with the flush).
TIMER_PAIRS = 64


@dataclass(frozen=True)
class TimingOptions:
    """How `time_cuda` takes its samples; the defaults are `roofline analyze`'s."""

    method: str = "auto"  # one of METHODS; "auto": graph-loop with a warm L2, else graph
    power: str = DEFAULT_POWER  # one of POWER_MODES
    compute_bound: bool = False  # the roofline's verdict: decides the burst gap and the sustained warm-up
    warm_l2: bool = False  # no L2 flush: cache-hot numbers
    graph_safe: bool = True  # False for callables that cannot be captured in a CUDA graph
    sample_clocks: bool = True  # NVML readings, the clock probe between kernels and the in-kernel trace
    warmup_s: float = WARMUP_BUDGET_S  # the least warm-up
    rep_s: float = REP_BUDGET_S  # device time for the samples
    flush_mode: str = "read"  # one of FLUSH_MODES
    flush_multiple: float = FLUSH_L2_MULTIPLE  # the flush buffer, in L2 sizes

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"unknown timing method {self.method!r}")
        if self.power not in POWER_MODES:
            raise ValueError(f"unknown power mode {self.power!r}")
        if self.flush_mode not in FLUSH_MODES:
            raise ValueError(f"unknown flush mode {self.flush_mode!r}")

    @property
    def sustained(self) -> bool:
        """A steady state under the power cap is wanted: warm up long, no burst gap."""
        return self.compute_bound and self.power == "sustained"

    @property
    def resolved_method(self) -> str:
        """The method "auto" stands for: without a flush between samples nothing on the GPU gives the host time
        to run ahead, so each replay's launch latency would land inside the timed region: a warm L2 times the
        whole loop as one graph."""
        if self.method != "auto":
            return self.method
        return "graph-loop" if self.warm_l2 else "graph"

    def method_for(self, estimate_s: float) -> str:
        """The method for an operator whose warm call takes `estimate_s`: auto times one shorter than
        SHORT_OP_S by its kernels' timestamps, longer ones as `resolved_method` says; a forced one stands."""
        return "cupti" if self.method == "auto" and estimate_s < SHORT_OP_S else self.resolved_method


class L2Flush:
    """Evicts the L2 before a sample, outside the timed region, by reading a buffer of `nbytes` (a reduction
    that writes 4 bytes). `mode="write"` zeroes the buffer instead, as do_bench does, only to show the
    difference. With no buffer (a warm L2) a call does nothing."""

    def __init__(self, device: Any, nbytes: int, mode: str = "read") -> None:
        import torch

        self.nbytes = nbytes // 4 * 4
        self.mode = mode
        self._buf = torch.ones(self.nbytes // 4, dtype=torch.float32, device=device) if self.nbytes else None
        self._out = torch.empty((), dtype=torch.float32, device=device)
        self._sum = torch.sum

    @classmethod
    def for_options(cls, device: Any, l2_bytes: int, options: TimingOptions) -> L2Flush:
        return cls(device, 0 if options.warm_l2 else int(options.flush_multiple * l2_bytes), options.flush_mode)

    @property
    def active(self) -> bool:
        return self._buf is not None

    def __call__(self) -> None:
        if self._buf is None:
            return
        if self.mode == "read":
            self._sum(self._buf, dim=0, out=self._out)  # reads the buffer; writes 4 bytes
        else:
            self._buf.zero_()  # leaves the L2 full of dirty lines (for comparison only)


def burst_gap_s(estimate_s: float, compute_bound: bool) -> float:
    """Seconds of low-power spin before each sample in burst mode: none for operators that are not
    compute-bound (see BURST_GAP_FACTOR)."""
    return max(BURST_MIN_GAP_S, BURST_GAP_FACTOR * estimate_s) if compute_bound else 0.0


def _spin_then(flush: Callable[[], None], cycles: int) -> Callable[[], None]:
    """The burst gap: a low-power spin of `cycles`, then the flush, both outside the timed region."""
    import torch

    sleep = torch.cuda._sleep

    def prepare() -> None:
        sleep(cycles)
        flush()

    return prepare


# When the last sustained compute-bound measurement of this process finished its samples (time.monotonic()).
_last_sustained_end = [-math.inf]


def _sustained_floor(options: TimingOptions) -> tuple[float, float | None]:
    """The least warm-up of a sustained compute-bound operator (0 for others), and seconds since the previous
    one's samples ended (None when there was none, or this one is not sustained)."""
    if not options.sustained:
        return 0.0, None
    since = time.monotonic() - _last_sustained_end[0]
    floor = HOT_WARMUP_S if since < HOT_GAP_S else SUSTAINED_WARMUP_S
    return floor, (since if math.isfinite(since) else None)


def time_cuda(fn: Callable[[], Any], options: TimingOptions | None = None, device: str = "cuda:0",
              l2_bytes: int | None = None) -> Measurement:
    """Device-event timing of `fn` with an L2 flush before every sample (see the module docstring); `l2_bytes`
    defaults to what torch reports for the device."""
    import torch

    from roofline.measuring.nvml import ClockSampler

    opts = options or TimingOptions()
    t_start = time.perf_counter()
    dev = torch.device(device)
    torch.cuda.set_device(dev)
    notes: list[str] = []
    if l2_bytes is None:
        l2_bytes = getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 0) or DEFAULT_L2_BYTES
    flush = L2Flush.for_options(dev, l2_bytes, opts)
    fn()  # first call: compilation, autotuning, handle creation
    torch.cuda.synchronize()
    t_capture = time.perf_counter()
    run, chosen = _replayable(fn, "graph" if opts.method == "auto" else opts.resolved_method, opts.graph_safe,
                              notes)
    capture_s = time.perf_counter() - t_capture
    # one call as the samples will make it: a replay has no host time in it (a compiled callable's guards or a
    # Python wrapper kept an eager short kernel's estimate above SHORT_OP_S)
    estimate = mean_event_time(run, 3, before=flush)
    flush_s = mean_event_time(flush, 3) if flush.active else 0.0
    probe_overhead = probe_overhead_s() if opts.sample_clocks else 0.0
    gap_s = burst_gap_s(estimate, opts.compute_bound) if opts.power == "burst" else 0.0
    gap_cycles = int(gap_s * SPIN_CYCLES_PER_S)
    prepare = _spin_then(flush, gap_cycles) if gap_s else flush  # before every sample, untimed
    prepare_s = flush_s + gap_s
    reps = plan_calls(estimate + prepare_s, opts.rep_s, MIN_REPS, MAX_REPS)
    index = dev.index if dev.index is not None else torch.cuda.current_device()
    sampler = ClockSampler(index) if opts.sample_clocks else None

    t_setup = time.perf_counter()
    with sampler or contextlib.nullcontext():
        warm_min, after_compute = _sustained_floor(opts)
        warm = _warm_up(run, prepare, estimate + prepare_s, max(opts.warmup_s, warm_min), opts.sustained, notes)
        t_warm = time.perf_counter()
        # the kernel's time now that it is warm (the first estimate ran at the idle GPU's clock)
        kernel_s = max(estimate, warm.mean_s - prepare_s)
        method = opts.method_for(settled_estimate(run, prepare))
        taken = _take_samples(fn, run, prepare, reps, method, chosen, kernel_s, opts.sample_clocks, notes)
        if opts.sustained:
            _last_sustained_end[0] = time.monotonic()
        t_samples = time.perf_counter()
        overhead = _timer_overhead(flush, taken, notes) if taken.kernels is None else 0.0
        kernels_s = median(taken.samples)
        gap = launch_gap(fn, kernels_s) if taken.kernels is not None and measures_launch_gap(kernels_s) else None
        in_kernel = taken.in_kernel
        if in_kernel is None and opts.sample_clocks and kernel_s >= INKERNEL_MIN_S:  # traces of their own
            in_kernel = _clock_after_samples(run, prepare, median(taken.samples) - overhead, probe_overhead, notes)
        if in_kernel is not None:
            in_kernel = with_traced_ratio(in_kernel, taken.traced, taken.samples)
    between = between_kernels_mhz(taken.probes, probe_overhead)
    clocks = clock_report(sampler.report, between, in_kernel) if sampler is not None else None
    if gap_s:
        notes.append(f"burst mode: {gap_cycles / SPIN_CYCLES_PER_S * 1e3:.1f} ms low-power spin before each sample")
    return Measurement(taken.samples, taken.method + ("+burst" if opts.power == "burst" else ""), warm.calls + 1,
                       estimate, l2_flush=flush.active, flush_bytes=flush.nbytes, clocks=clocks, notes=notes,
                       clock_samples_mhz=between, warmup_s=warm.seconds, timer_overhead_s=overhead,
                       warmup_min_s=warm_min, capture_s=capture_s, after_compute_s=after_compute,
                       host_phases_s={"setup": t_setup - t_start, "warmup": t_warm - t_setup,
                                      "samples": t_samples - t_warm, "finish": time.perf_counter() - t_samples},
                       kernel_medians_s=taken.kernels.medians() if taken.kernels else [],
                       kernel_span_s=median(taken.kernels.spans) if taken.kernels else None, launch_gap_s=gap)


def settled_estimate(run: Callable[[], Any], prepare: Callable[[], Any]) -> float:
    """One call's time after the warm-up, as the samples will see it (median of SETTLED_CALLS event-timed
    calls, each after the samples' own prepare): what the method is chosen from."""
    return median(event_times(run, SETTLED_CALLS, before=prepare))


def _replayable(fn: Callable[[], Any], method: str, graph_safe: bool, notes: list[str]
                ) -> tuple[Callable[[], Any], str]:
    """What each sample calls, and the method that gives: a CUDA graph's replay ("graph") where the method
    asks for a graph (cupti's samples replay one too: the host stays ahead) and capture works, else `fn`
    itself ("events")."""
    if method in ("graph", "graph-loop", "cupti") and graph_safe:
        try:
            return capture_graph(fn), "graph"
        except Exception as exc:
            notes.append(f"CUDA graph capture failed ({type(exc).__name__}); timed eager launches")
    elif method != "events" and not graph_safe:
        notes.append("operator is not graph-safe; timed eager launches")
    return fn, "events"


def capture_graph(fn: Callable[[], Any]) -> Callable[[], Any]:
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


@dataclass(frozen=True)
class _WarmUp:
    calls: int
    seconds: float
    mean_s: float  # the last chunk's seconds per call


def _warm_up(run: Callable[[], Any], prepare: Callable[[], None], per_call_s: float, min_s: float,
             sustained: bool, notes: list[str]) -> _WarmUp:
    """Run (prepare, operator) in chunks until two consecutive chunk means agree and at least `min_s` passed."""
    chunk = plan_calls(per_call_s, WARMUP_CHUNK_S if sustained else WARMUP_CHUNK_S / 4, MIN_WARMUP_CALLS,
                       MAX_WARMUP_CALLS_PER_CHUNK)

    def calls() -> None:
        for _ in range(chunk):
            prepare()
            run()

    total, count, prev = 0.0, 0, None
    while True:
        t = event_times(calls, 1)[0]
        total, count, mean = total + t, count + chunk, t / chunk
        if prev is not None and abs(mean / prev - 1) < WARMUP_STABLE and total >= min_s:
            return _WarmUp(count, total, mean)
        if total >= MAX_WARMUP_S:
            notes.append(f"time still drifting after {total:.2f} s of warm-up ({mean / prev - 1:+.1%} per chunk)"
                         if prev else "warm-up budget spent")
            return _WarmUp(count, total, mean)
        prev = mean


@dataclass
class _Samples:
    samples: list[float]  # raw event intervals, seconds
    probes: list[float]  # the clock probe after each sample, seconds (empty without clock sampling)
    method: str  # the method that took them
    traced: list[float] = field(default_factory=list)  # the traced calls' times, apart from the samples
    in_kernel: KernelClock | None = None  # the clock from those traces (None: not traced with the samples)
    kernels: KernelSamples | None = None  # cupti: the samples' kernels; the samples are their device times


def _take_samples(fn: Callable[[], Any], run: Callable[[], Any], prepare: Callable[[], None], reps: int,
                  method: str, chosen: str, kernel_s: float, probe: bool, notes: list[str]) -> _Samples:
    """The samples by the chosen method; for methods other than graph-loop and cupti, with traced calls after
    them when the kernel is long enough for the in-kernel clock."""
    if method == "cupti":
        try:
            kernels, _, probes = profiled_samples(run, prepare, reps, probe, _sample)
            return _Samples(kernels.samples, probes, "cupti", kernels=kernels)
        except LayoutError as exc:
            notes.append(f"kernel timestamps could not be split into samples ({exc}); timed by device events")
        except Exception as exc:  # no CUPTI (a profiler already running in this process, or none in the build)
            notes.append(f"kernel timestamps unavailable ({type(exc).__name__}: {exc}); timed by device events")
    if method == "graph-loop" and chosen == "graph":
        try:
            return _Samples(*_graph_loop(fn, prepare, reps, probe), method="graph-loop")
        except Exception as exc:
            notes.append(f"graph-loop capture failed ({type(exc).__name__}); timed graph replays")
            samples, probes, _ = _sample(run, prepare, reps, probe)
            return _Samples(samples, probes, chosen)
    tracer = make_tracer(kernel_s, notes) if probe and kernel_s >= INKERNEL_MIN_S else None
    try:
        samples, probes, traced = _sample(run, prepare, reps, probe, tracer)
    except Exception as exc:  # a trace that cannot launch (a driver that cannot load the PTX, say)
        if tracer is None:
            raise
        notes.append(f"in-kernel clock trace failed ({type(exc).__name__})")
        tracer = None
        samples, probes, traced = _sample(run, prepare, reps, probe)
    in_kernel = tracer.clock(notes, median(samples)) if tracer is not None else None
    return _Samples(samples, probes, chosen, traced, in_kernel)


def _sample(run: Callable[[], Any], prepare: Callable[[], None], reps: int, probe: bool,
            tracer: Tracer | None = None) -> tuple[list[float], list[float], list[float]]:
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
        if tracer is None or i < reps:
            prepare()
            ev[0][i].record(stream)
            run()
            ev[1][i].record(stream)
        else:
            def timed(f: Callable[[], Any], i: int = i) -> None:
                ev[0][i].record(stream)
                f()
                ev[1][i].record(stream)

            tracer.around(prepare, run, timed)
        if probe:
            sleep(PROBE_CYCLES)
            ev[2][i].record(stream)
    if tracer is not None:
        tracer.join()
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) * 1e-3 for s, e in zip(ev[0], ev[1], strict=True)]
    probes = [s.elapsed_time(e) * 1e-3 for s, e in zip(ev[1], ev[2], strict=True)] if probe else []
    return times[:reps], probes[:reps], times[reps:]


def _graph_loop(fn: Callable[[], Any], prepare: Callable[[], None], reps: int, probe: bool
                ) -> tuple[list[float], list[float]]:
    """The whole sampling loop as one graph, timed by external event-record nodes."""
    import torch

    ev = [[torch.cuda.Event(enable_timing=True, external=True) for _ in range(reps)] for _ in range(3)]
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(reps):
            prepare()
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


def _timer_overhead(flush: Callable[[], None], taken: _Samples, notes: list[str]) -> float:
    """The seconds to subtract from every sample: the median of TIMER_PAIRS empty event pairs recorded after
    the flush (without the burst gap), the way the samples' pairs were (eagerly, or as external event nodes in
    one graph for `graph-loop`); none, with a note, when a sample was shorter than that."""
    overhead = median(event_times(lambda: None, TIMER_PAIRS, before=flush, in_graph=taken.method == "graph-loop"))
    if overhead >= min(taken.samples):
        notes.append(f"timer overhead ({overhead * 1e6:.2f} µs) not subtracted: a sample was shorter")
        return 0.0
    return overhead


def _clock_after_samples(run: Callable[[], Any], prepare: Callable[[], None], kernel_s: float,
                         probe_overhead: float, notes: list[str]) -> KernelClock | None:
    """The clock during the kernel from traced rounds of their own (graph-loop, or where tracing beside the
    samples was not possible); None, with a note, when that fails too."""
    try:
        return inkernel_clock(run, prepare, kernel_s, probe_overhead, notes)
    except Exception as exc:
        notes.append(f"in-kernel clock probe failed ({type(exc).__name__})")
        return None
