"""What every timer shares: the `Measurement` it returns, how many calls fit a time budget, the budgets,
and the names of the timing choices the command line offers.

The timers: `roofline.measuring.timing_cuda.time_cuda` (device events, in the manner of
`triton.testing.do_bench`) and `roofline.measuring.timing_cpu.time_cpu` (the host clock). docs/timing.md
gives the protocol and the measurements behind each choice. Importing this module never imports torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from roofline.core.record import Clocks, Timing
from roofline.measuring.choices import DEFAULT_POWER, METHODS, POWER_MODES  # noqa: F401 - --timer, --power

if TYPE_CHECKING:
    from roofline.core.stats import Summary

# Budgets: at least 10 ms of warm-up and 25 ms of samples (a quarter of triton's do_bench default). At these
# budgets two runs of the H200's 16 acceptance kernels agreed within 1.4% (docs/measurements.md), and a
# memory-bound kernel still gets tens to hundreds of samples.
WARMUP_BUDGET_S = 0.010
REP_BUDGET_S = 0.025
# Below 10 samples a median and an IQR mean little; above 2000 the enqueue loop itself costs too much.
MIN_REPS = 10
MAX_REPS = 2000

# "read" is the default and the right one; "write" (zeroing the buffer, as triton's do_bench does) is kept so
# that the difference can be shown: its dirty lines are written back inside the next timed kernel.
FLUSH_MODES = ("read", "write")
# The flush reads this multiple of the L2 size: 2x is the least that evicts an LRU-like cache; 3x leaves
# margin for the hashed set mapping of recent NVIDIA L2s.
FLUSH_L2_MULTIPLE = 3


@dataclass
class Measurement:
    """Raw samples and how they were taken; statistics are derived on demand."""

    samples_s: list[float]
    method: str
    warmup_calls: int
    estimate_s: float
    l2_flush: bool
    flush_bytes: int = 0
    clocks: Clocks | None = None  # the record's clocks (GPU only)
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
    # cupti: each kernel's median device time over the samples (launch order), their span (first start to
    # last end, gaps included) and the GPU's idle time per call when launched eagerly back to back
    kernel_medians_s: list[tuple[str, float]] = field(default_factory=list)
    kernel_span_s: float | None = None
    launch_gap_s: float | None = None

    @property
    def times_s(self) -> list[float]:
        """The operator's time per sample: the raw event interval less the timer's own cost."""
        return [t - self.timer_overhead_s for t in self.samples_s]

    @property
    def summary(self) -> Summary:
        from roofline.core.stats import summarize  # not at import: `analyze --no-time` reads the constants alone

        return summarize(self.times_s)

    @property
    def median_s(self) -> float:
        return self.summary.median

    def timing(self) -> Timing:
        """How the samples were taken, as the record stores it (`record.timing`; the runner adds phases_s)."""
        return Timing(method=self.method, warmup_calls=self.warmup_calls, warmup_s=self.warmup_s,
                      reps=len(self.samples_s), estimate_s=self.estimate_s, l2_flush=self.l2_flush,
                      flush_bytes=self.flush_bytes, stats=self.summary.to_dict(), notes=list(self.notes),
                      timer_overhead_s=self.timer_overhead_s, sm_clock_samples_mhz=list(self.clock_samples_mhz),
                      warmup_min_s=self.warmup_min_s, after_compute_s=self.after_compute_s,
                      capture_s=self.capture_s, host_phases_s=dict(self.host_phases_s),
                      kernel_span_s=self.kernel_span_s, launch_gap_s=self.launch_gap_s)


def plan_calls(per_call_s: float, budget_s: float, lo: int, hi: int) -> int:
    """How many calls fit a time budget, clamped to [lo, hi]."""
    if per_call_s <= 0:
        return hi
    return max(lo, min(hi, math.ceil(budget_s / per_call_s)))
