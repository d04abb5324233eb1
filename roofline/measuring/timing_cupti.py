"""Short operators timed by the GPU's own kernel timestamps (CUPTI activity records through torch.profiler),
the way tritonbench's profiler-based `do_bench` and Nsight Compute read a kernel's duration.

A pair of device events around a launch holds the kernel and the event pair's own cost; that cost (~1.3 µs on
the H200) is subtracted as a median, and its spread (about ±1 µs) is a few percent of a 4 µs kernel
(docs/timing.md, "Short kernels"). A kernel's activity record is the device's start and end of the kernel
itself. The sampling loop is the event timer's (`timing_cuda._sample`: flush, operator, clock probe, all
enqueued before one synchronisation) run inside a profiler session; each sample's time is the sum of the
device times of the kernels the operator launched, found by position: every sample launches the same
kernels in the same order (the flush's, the operator's, the probe's), which one profiled call of each tells.

NB: the sum leaves out the gaps between the kernels of a multi-kernel operator (their span is kept beside it)
and the launch latency that every real launch pays; `launch_gap` measures the latter for the advice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from roofline.core.stats import median

# Operators whose first estimate is shorter than this are timed by kernel timestamps when the method is
# "auto": an event pair's spread (about +-1 us) is over 5% of a shorter kernel, and timestamps repeat within
# 0.55% between runs of 1-17 us kernels. Longer ones keep the event pair: Nsight Compute frames a kernel
# 1.0-2.5 us longer than its timestamps, and events followed it within 0.4-2.2% from 33 us up, where
# timestamps read the 33 us GEMVs 4.5-5.4% below it (docs/measurements.md, issue 21).
SHORT_OP_S = 20e-6
# Calls per launch-gap measurement: back-to-back eager launches without a flush, long enough that the
# host's launch rate, not the first launch's latency, sets the pace.
LAUNCH_GAP_CALLS = 200


@dataclass
class KernelSamples:
    """Per-sample device times of the operator's kernels (seconds), taken by position in launch order."""

    names: list[str]  # the operator's kernels, in launch order
    per_kernel: list[list[float]]  # per_kernel[j][i]: kernel j's device time in sample i
    spans: list[float] = field(default_factory=list)  # first kernel start to last kernel end, per sample

    @property
    def samples(self) -> list[float]:
        """Each sample's time: the sum of its kernels' device times."""
        return [sum(k[i] for k in self.per_kernel) for i in range(len(self.spans))]

    def medians(self) -> list[tuple[str, float]]:
        """Each kernel's median device time over the samples, in launch order (names may repeat)."""
        return [(n, median(ts)) for n, ts in zip(self.names, self.per_kernel, strict=True)]


def device_activities(prof: Any) -> list[tuple[str, int, int]]:
    """(name, start ns, end ns) of every device activity (kernel, memset, memcpy) in a finished torch.profiler
    session, in start order. Reads the raw Kineto events: building FunctionEvents for thousands of samples
    costs seconds."""
    import torch

    cuda = torch.autograd.DeviceType.CUDA
    out = []
    for e in prof.profiler.kineto_results.events():
        if e.device_type() != cuda or getattr(e, "is_user_annotation", lambda: False)():
            continue
        start = int(e.start_ns())
        out.append((e.name(), start, start + int(e.duration_ns())))
    out.sort(key=lambda a: a[1])
    return out


def kernel_names(fn: Callable[[], Any]) -> list[str]:
    """The device activities one call of `fn` launches, in order (one short profiler session)."""
    import torch

    from roofline.measuring.cupti import device_profiler

    torch.cuda.synchronize()
    with device_profiler() as prof:
        fn()
        torch.cuda.synchronize()
    return [name for name, _, _ in device_activities(prof)]


class LayoutError(RuntimeError):
    """The profiled loop's kernels do not repeat as one sample's did: they cannot be split into samples."""


def split_samples(acts: list[tuple[str, int, int]], before: list[str], op: list[str], after: list[str],
                  reps: int) -> KernelSamples:
    """Cut a profiled sampling loop into samples: each is `before` (flush, burst spin), the operator's `op`
    kernels, then `after` (the clock probe). Raises LayoutError where the names do not line up."""
    per = len(before) + len(op) + len(after)
    if not op:
        raise LayoutError("the operator launched no device work")
    if len(acts) != per * reps:
        raise LayoutError(f"{len(acts)} device activities for {reps} samples of {per}")
    layout = [*before, *op, *after]
    per_kernel: list[list[float]] = [[] for _ in op]
    spans = []
    for i in range(reps):
        names = [a[0] for a in acts[i * per:(i + 1) * per]]
        if names != layout:
            first = next(j for j, (a, b) in enumerate(zip(names, layout, strict=True)) if a != b)
            raise LayoutError(f"sample {i} launched {names[first]!r} where {layout[first]!r} was expected, not "
                              "the operator's kernels in one sample's order")
        window = acts[i * per + len(before): i * per + len(before) + len(op)]
        for j, (_, start, end) in enumerate(window):
            per_kernel[j].append((end - start) * 1e-9)
        spans.append((window[-1][2] - window[0][1]) * 1e-9)
    return KernelSamples(list(op), per_kernel, spans)


def profiled_samples(run: Callable[[], Any], prepare: Callable[[], None], reps: int, probe: bool,
                     sample: Callable[..., tuple[list[float], list[float], list[float]]]
                     ) -> tuple[KernelSamples, list[float], list[float]]:
    """The event timer's loop (`sample`) run inside a profiler session and split into the operator's kernel
    times per sample; also returns the loop's event intervals and clock probes, as the event timer would."""
    import torch

    from roofline.measuring.cupti import device_profiler
    from roofline.measuring.sm_clock import PROBE_CYCLES

    before, op = kernel_names(prepare), kernel_names(run)
    after = kernel_names(lambda: torch.cuda._sleep(PROBE_CYCLES)) if probe else []
    with device_profiler() as prof:
        events, probes, _ = sample(run, prepare, reps, probe)
        torch.cuda.synchronize()
    return split_samples(device_activities(prof), before, op, after, reps), events, probes


def measures_launch_gap(kernel_s: float) -> bool:
    """Whether an operator timed by its kernels' timestamps gets a launch gap: one shorter than SHORT_OP_S. A
    longer one keeps the GPU busy past its next launch (its gap is 0), and the gap's 800 eager calls of it take
    seconds a point (a 25 ms attention: 20 s)."""
    return kernel_s < SHORT_OP_S


def launch_gap(fn: Callable[[], Any], kernel_s: float, calls: int = LAUNCH_GAP_CALLS) -> float:
    """Seconds per call the GPU sits idle when `fn` is launched eagerly back to back (warm L2, nothing else
    queued): the host's time per launch beyond the kernel's own device time; 0 when the GPU keeps busy.
    This is what a CUDA graph or a fusion with a neighbour removes in a model that launches it so."""
    from roofline.measuring.cuda_events import event_times

    def loop() -> None:
        for _ in range(calls):
            fn()

    loop()  # the first loop pays allocator and cache misses on the host
    per_call = min(event_times(loop, 3)) / calls
    return max(0.0, per_call - kernel_s)
