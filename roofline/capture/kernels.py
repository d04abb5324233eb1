"""Device time per recorded op call, from torch.profiler's events.

The trace wraps each op call in a profiler range `roofline#<call index>`. On a GPU, the profiler ties each
device kernel (and memcpy/memset) to the CPU op that launched it by CUPTI's correlation id
(`FunctionEvent.kernels`: name and device duration from the device's own timestamps, never host-side events,
which overstate GPU time by launch gaps). Each launching op is walked up its CPU parents to the nearest
`roofline#i` range: its kernels' device time is the call's time. torch hands a correlation's kernels to every
CPU event of its id (a kernel's first launch nests a "Lazy Function Loading" event of the op's id inside the op),
so each correlation's kernels are counted once (and time attributed beyond what the device ran is kept as
`overcount_s`, which the profile states). Kernels with no such range (launched by a CUDA graph replay, or
code outside the profiled mode) are kept as unattributed rows with their time, so
coverage shows them; those the trace itself launched reading a mask's or offsets' values (trace.READ_RANGE) are
left out of every total (`reading_s`: the profile says how much). A torch.compile'd region's Triton kernels are
launched under a CPU op of their own (the kernel's name, its arguments and generated source): they are kept as
`launches`, which capture/inductor.py turns into calls of the aten ops they fused (unattributed when it cannot).

On the CPU there are no kernels: a call's time is the host time of the op, taken by the tracer around the
call (the time the op's range would hold; torch.profiler is not started, which saves its first start, seconds
on a small machine).

The GPU's busy time is the union of the device intervals; its idle time the span from the first kernel's
start to the last one's end less that union (gaps where the host was late: launch-bound models show there).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from roofline.capture.compiled import COMPILED_PREFIX
from roofline.capture.inductor import Launch
from roofline.capture.trace import READ_RANGE, OpCall

RANGE = re.compile(r"^roofline#(\d+)$")
REGION_PREFIX = "roofline.region:"
US = 1e-6  # the profiler's times are in microseconds
# Device time (µs) left over after attribution below which it is rounding, not missing kernels.
LOST_US = 0.01
UNLINKED = "(device work tied to no launching op)"
# Where a CUDA graph's replayed kernels are tied to: the runtime call (cudaGraphLaunch and its versioned names)
# or torch's replay (CUDAGraph.replay), where the profiler records them; torch.compile(mode="reduce-overhead")
# replays under its region's "## Call CompiledFxGraph" range, which then owns kernels itself (compiled code that
# is not replayed launches each Triton kernel under an op of its own: `_is_triton_launch`).
# Under the profile (the trace's dispatch mode and the tracker's "roofline.compiled:" range), the same kernels
# are the compiled region's own ("Torch-Compiled Region: 0/0"): compiled code run without graphs launches each
# kernel under an op (an extern kernel's aten op, a Triton launch), so a kernel owned by either range is replayed.
GRAPH_LAUNCH = ("cudaGraphLaunch", "CUDAGraph.replay")
GRAPH_OWNER = ("## Call CompiledFxGraph", "Torch-Compiled Region")
GPU_METHOD = "device kernels per op (torch.profiler, CUPTI correlation ids)"
CPU_METHOD = "host time of each op (perf_counter around the call; no device kernels)"


@dataclass
class CallTime:
    """The work of one op call: kernels in launch order with their device times (s), or on the CPU the op's
    host time."""

    kernels: list[tuple[str, float]] = field(default_factory=list)
    host_s: float | None = None

    @property
    def time_s(self) -> float:
        return self.host_s if self.host_s is not None else sum(t for _, t in self.kernels)


@dataclass
class Timeline:
    """What the profiler saw: per-call times, unattributed kernels, and the GPU's busy/idle split."""

    calls: dict[int, CallTime]
    unattributed: list[tuple[str, float, str | None]]  # (kernel name, device time s, region or None)
    method: str
    busy_s: float = 0.0  # union of device intervals
    span_s: float = 0.0  # first kernel start to last kernel end
    device_total_s: float = 0.0  # sum of device event durations (concurrent kernels counted each)
    launches: list[Launch] = field(default_factory=list)  # torch.compile'd Triton launches (inductor.py)
    graph_s: float = 0.0  # device time of kernels launched by CUDA graph replays (unattributed: `in_graph`)
    reading_s: float = 0.0  # device time of the trace's own value reads (trace.READ_RANGE): in no call, no total
    overcount_s: float = 0.0  # kernel time attributed beyond what the device ran: some kernels counted twice

    @property
    def idle_s(self) -> float:
        return max(0.0, self.span_s - self.busy_s)


def _range_index(evt: Any) -> int | None:
    m = RANGE.match(evt.name)
    return int(m.group(1)) if m else None


def _owner(evt: Any) -> tuple[int | None, str | None, str | None]:
    """The nearest enclosing roofline#i range of a CPU event (itself included), the nearest region and the
    compiled module it ran in."""
    index: int | None = None
    region: str | None = None
    compiled: str | None = None
    e = evt
    while e is not None:
        if index is None:
            index = _range_index(e)
        if region is None and e.name.startswith(REGION_PREFIX):
            region = e.name[len(REGION_PREFIX):]
        if compiled is None and e.name.startswith(COMPILED_PREFIX):
            compiled = e.name[len(COMPILED_PREFIX):]
        e = e.cpu_parent
    return index, region, compiled


def _reading(evt: Any) -> bool:
    """Whether a CPU event ran inside the trace's own value reads (trace.READ_RANGE)."""
    e = evt
    while e is not None:
        if e.name == READ_RANGE:
            return True
        e = e.cpu_parent
    return False


def in_graph(evt: Any) -> bool:
    """Whether a CPU event is (or runs inside) a CUDA graph replay: its kernels were captured with the ops that
    launched them before the profile began, so no op call of the profile owns them."""
    if evt.name.startswith(GRAPH_OWNER):
        return True
    e = evt
    while e is not None:
        if e.name.startswith(GRAPH_LAUNCH):
            return True
        e = e.cpu_parent
    return False


def _is_triton_launch(evt: Any) -> bool:
    """The CPU op Inductor wraps each Triton launch in while the profiler runs (inductor.py)."""
    kw = getattr(evt, "kwinputs", None) or {}
    return kw.get("kernel_backend") == "triton" or evt.name.startswith("triton_")


def union_length(intervals: list[tuple[float, float]]) -> float:
    """Total length covered by a set of [start, end) intervals (overlaps counted once)."""
    total, end = 0.0, float("-inf")
    for s, e in sorted(intervals):
        if s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def _is_device(evt: Any) -> bool:
    """A kernel, memcpy or memset on the device. The profiler also puts each record_function range on the
    device timeline (a GPU user annotation spanning the kernels inside it): not device work."""
    kind = str(getattr(evt, "device_type", ""))
    if not (kind.endswith("CUDA") or kind.endswith("PrivateUse1") or kind.endswith("XPU")):
        return False
    return not (getattr(evt, "is_user_annotation", False) or RANGE.match(evt.name)
                or evt.name.startswith((REGION_PREFIX, COMPILED_PREFIX)))


def gpu_timeline(events: list[Any]) -> Timeline:
    """Attribute device kernels to op calls (module docstring)."""
    calls: dict[int, CallTime] = defaultdict(CallTime)
    unattributed: list[tuple[str, float, str | None]] = []
    attributed_us = 0.0
    intervals: list[tuple[float, float]] = []
    device_us = 0.0
    launches: list[Launch] = []
    last_index: int | None = None  # the latest op call range started: program order for the launches
    graph_us = 0.0
    reading_us = 0.0
    counted: set[int] = set()  # correlation ids whose kernels are attributed
    for evt in events:
        if (i := _range_index(evt)) is not None:
            last_index = i
        if _is_device(evt):
            start, end = evt.time_range.start, evt.time_range.end
            intervals.append((start, end))
            device_us += end - start
            continue
        kernels = getattr(evt, "kernels", None) or []
        if not kernels:
            continue
        corr = getattr(evt, "id", None)
        if corr is not None:  # torch gives a correlation's kernels to every CPU event of that id: count them once
            if corr in counted:
                continue
            counted.add(corr)
        index, region, compiled = _owner(evt)
        if index is None and _reading(evt):  # the trace reading a mask or offsets: not the program's work
            reading_us += sum(k.duration for k in kernels)
            continue
        if index is None and _is_triton_launch(evt):
            kw = getattr(evt, "kwinputs", None) or {}
            launches.append(Launch(evt.name, kw.get("kernel_file") or None, list(getattr(evt, "input_shapes", None)
                                   or []), list(getattr(evt, "concrete_inputs", None) or []),
                                   [(k.name, k.duration * US) for k in kernels], region, compiled, last_index))
            attributed_us += sum(k.duration for k in kernels)
            continue
        graph = index is None and in_graph(evt)
        for k in kernels:
            attributed_us += k.duration
            if graph:
                graph_us += k.duration
            if index is None:
                unattributed.append((k.name, k.duration * US, region))
            else:
                calls[index].kernels.append((k.name, k.duration * US))
    # Device work the profiler tied to no CPU op (correlation id 0): unattributed, by kernel name, and any
    # remainder (device time that reached no op's `kernels`) as one row, so the totals add up.
    device_us -= reading_us  # the reads' kernels are in the device events too
    lost_us = device_us - attributed_us
    overcount_us = -lost_us if -lost_us > LOST_US else 0.0
    if lost_us > LOST_US:
        named: dict[str, float] = defaultdict(float)
        for evt in events:
            if _is_device(evt) and getattr(evt, "linked_correlation_id", None) == 0:
                named[evt.name] += evt.time_range.elapsed_us()
        unattributed += [(name, us * US, None) for name, us in named.items()]
        rest = lost_us - sum(named.values())
        if rest > LOST_US:
            unattributed.append((UNLINKED, rest * US, None))
    busy = union_length(intervals) * US
    span = (max(e for _, e in intervals) - min(s for s, _ in intervals)) * US if intervals else 0.0
    return Timeline(dict(calls), unattributed, GPU_METHOD, busy, span, device_us * US, launches, graph_us * US,
                    reading_us * US, overcount_us * US)


def cpu_timeline(calls: list[OpCall]) -> Timeline:
    """On the CPU: each call's time is its host time (the tracer's clock around the op)."""
    times = {c.index: CallTime(host_s=c.host_time_s) for c in calls if c.host_time_s is not None}
    total = sum(t.time_s for t in times.values())
    return Timeline(times, [], CPU_METHOD, total, total, total)


def timeline(prof: Any) -> Timeline:
    """The device timeline of a finished torch.profiler.profile."""
    return gpu_timeline(list(prof.events()))
