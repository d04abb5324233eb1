"""The SM clock during a kernel, measured by the GPU itself with %clock64 (SM cycles) and %globaltimer (ns).

- `ClockTrace`: a one-thread kernel on a side stream that records (%globaltimer, %clock64) every period;
  `Stamps` writes %globaltimer just before and just after the kernel on the main stream, and
  `clock_in_window` cuts the trace to that window: cycles / ns over the part of the kernel the trace saw,
  and over its first and last third. The trace is launched before the L2 flush that precedes the kernel and
  waits, resident on an SM, until the first stamp is written, then records until the second is: a trace
  launched beside the kernel finds no room on an SM until the kernel's last blocks, and one that runs past
  its kernel delays the next trace.
- `ClockProbe`: a spin of N cycles that times itself the same way (start, cycles, ns).

Why not a spin timed by events (`torch.cuda._sleep` between two events): the events also time how long
the spin waited for room on an SM, and beside a kernel that fills every SM that wait is most of it (it read
340 MHz beside a relu that ran at 1.94 GHz; the trace agreed with Nsight Compute within 3% on every kernel
tried: docs/measurements.md, scripts/experiments/clock_probe_experiment.py).

The kernels are PTX launched through the CUDA driver (`roofline.measuring.clocktrace_ptx`, imported only
when a probe is launched); `available()` says whether they can run.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

# %globaltimer counts nanoseconds but is documented only as a "global nanosecond timer", not how often it
# updates; probes shorter than MIN_PROBE_NS are left out so that a coarse update step stays small beside them.
MIN_PROBE_NS = 10_000
# A clock trace: this many (time, cycles) points, at least MIN_PERIOD_NS apart: %globaltimer advances in
# steps (32 ns on the H200), and 500 ns keeps each step's error under 7% and a whole trace's far under 1%.
TRACE_POINTS = 64
MIN_PERIOD_NS = 500
# A trace gives up waiting for its start stamp after this long (so a round that never ran cannot hang the GPU).
MAX_WAIT_NS = 1_000_000_000


@cache
def available() -> bool:
    """Whether the probe kernels can run: a CUDA device, and the driver library to load them."""
    try:
        import ctypes

        import torch

        if not torch.cuda.is_available():
            return False
        ctypes.CDLL("libcuda.so.1")
    except Exception:
        return False
    return True


def _launch(name: str, *args: int) -> None:
    from roofline.measuring.clocktrace_ptx import launch

    launch(name, *args)


class _Slots:
    """A device buffer of result slots that one-thread probe kernels fill, one slot per launch.

    Slots are whole 16-byte units, so every slot starts 16-byte aligned."""

    what = "probe"

    def __init__(self, shape: tuple[int, ...], device: Any) -> None:
        import torch

        self._out = torch.zeros(shape, dtype=torch.int64, device=device)
        self._used = 0
        self._slot_bytes = self._out[0].numel() * 8

    def _take(self) -> int:
        """The next free slot's index (IndexError when none is left)."""
        if self._used >= self._out.shape[0]:
            raise IndexError(f"{self.what} slots used up")
        self._used += 1
        return self._used - 1

    def _ptr(self, index: int) -> int:
        """Device address of slot `index`."""
        if not 0 <= index < self._out.shape[0]:
            raise IndexError(f"{self.what} slot {index} out of range")
        return self._out.data_ptr() + index * self._slot_bytes

    def _filled(self) -> list[Any]:
        return self._out[: self._used].tolist()


class Stamps(_Slots):
    """%globaltimer written by a one-thread kernel on the current stream: `stamp()` before and after a kernel
    brackets it in the probe's time base, so a probe can be checked to have run inside the kernel."""

    what = "stamp"

    def __init__(self, slots: int, device: Any = "cuda") -> None:
        super().__init__((slots, 2), device)  # the second word pads the slot to 16 bytes

    def stamp(self) -> None:
        _launch("stamp", self._ptr(self._take()))

    def ahead(self, k: int) -> int:
        """Device address of the slot that the k-th next `stamp()` (k = 0: the next) will write; it reads 0 until
        then, so a trace can wait for it."""
        return self._ptr(self._used + k)

    def results(self) -> list[int]:
        return [int(t) for t, _ in self._filled()]


@dataclass(frozen=True)
class WindowClock:
    """The SM clock over the part of a window (a kernel, between two stamps) that a clock trace covered."""

    mhz: float  # cycles / ns over the covered part
    coverage: float  # covered part / window
    early_mhz: float  # over the first third of the covered part
    late_mhz: float  # over the last third


def clock_in_window(trace: list[tuple[int, int]], k0: int, k1: int) -> WindowClock | None:
    """Clock from the (ns, cycles) trace points that lie inside [k0, k1]; None with fewer than 4 of them.

    NB: the window is a little wider than the kernel (the stamps run just before and just after it)."""
    inside = [(t, c) for t, c in trace if k0 <= t <= k1]
    if len(inside) < 4 or k1 <= k0:
        return None

    def rate(a: tuple[int, int], b: tuple[int, int]) -> float:
        return (b[1] - a[1]) / (b[0] - a[0]) * 1e3 if b[0] > a[0] else 0.0

    third = max(1, (len(inside) - 1) // 3)
    return WindowClock(mhz=rate(inside[0], inside[-1]), coverage=(inside[-1][0] - inside[0][0]) / (k1 - k0),
                       early_mhz=rate(inside[0], inside[third]), late_mhz=rate(inside[-1 - third], inside[-1]))


class ClockTrace(_Slots):
    """Side-stream clock traces: `launch(period_ns, start, stop)` starts one trace of up to TRACE_POINTS points,
    from when the int64 at device address `start` turns non-zero (a stamp) until the one at `stop` does; after a
    synchronisation, `traces()` gives each as a list of (globaltimer ns, clock64 cycles), unfilled points left
    out."""

    what = "clock trace"

    def __init__(self, slots: int, device: Any = "cuda") -> None:
        super().__init__((slots, TRACE_POINTS, 2), device)

    def launch(self, period_ns: int, start: int, stop: int, max_wait_ns: int = MAX_WAIT_NS) -> None:
        _launch("trace", self._ptr(self._take()), start, stop, TRACE_POINTS, max(MIN_PERIOD_NS, int(period_ns)),
                int(max_wait_ns))

    def traces(self) -> list[list[tuple[int, int]]]:
        return [[(int(t), int(c)) for t, c in tr if t] for tr in self._filled()]


class ClockProbe(_Slots):
    """Launch with `launch(cycles)` on the current stream (any number of times, no synchronisation); after one
    `torch.cuda.synchronize()`, `results()` gives (cycles, ns, start_ns) per launch and `mhz()` the clocks."""

    what = "clock probe"

    def __init__(self, slots: int, device: Any = "cuda") -> None:
        super().__init__((slots, 4), device)  # (cycles, ns, start ns) and a word of padding to 32 bytes

    def launch(self, cycles: int) -> None:
        _launch("spin", self._ptr(self._take()), int(cycles))

    def results(self) -> list[tuple[int, int, int]]:
        return [(int(c), int(ns), int(t0)) for c, ns, t0, _ in self._filled()]

    def mhz(self) -> list[float]:
        """Clock per launch in MHz; probes shorter than MIN_PROBE_NS are left out (too coarse)."""
        return [c / ns * 1e3 for c, ns, _ in self.results() if ns >= MIN_PROBE_NS]
