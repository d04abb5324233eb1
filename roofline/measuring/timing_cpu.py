"""Timing on the CPU: torch's CPU operators are synchronous, so a host clock brackets each call; warm-up and
samples are budgeted as on the GPU (`roofline.measuring.timing`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from roofline.measuring.timing import MAX_REPS, MIN_REPS, REP_BUDGET_S, WARMUP_BUDGET_S, Measurement, plan_calls

# Warm-up calls, at most: the CPU has no clock or power state to settle, only caches and allocator pools.
MAX_WARMUP_CALLS = 100
# A call slower than this gets at least MIN_SLOW_REPS samples instead of MIN_REPS: the budget is overrun
# anyway, and three samples of a slow call already give a median.
SLOW_CALL_S = 0.2
MIN_SLOW_REPS = 3


def time_cpu(fn: Callable[[], Any], warmup_s: float = WARMUP_BUDGET_S, rep_s: float = REP_BUDGET_S,
             clock: Callable[[], float] = time.perf_counter, max_reps: int = MAX_REPS) -> Measurement:
    """Host-clock timing of `fn`: a first call, a warm-up sized from it, an estimate, then the samples.

    NB: caches are not flushed on the CPU (its last-level cache is small beside any realistic input)."""
    t0 = clock()
    fn()
    first = clock() - t0
    warm = plan_calls(first, warmup_s, 1, MAX_WARMUP_CALLS)
    for _ in range(warm):
        fn()
    t0 = clock()
    fn()
    estimate = max(clock() - t0, 1e-9)
    reps = plan_calls(estimate, rep_s, MIN_SLOW_REPS if estimate > SLOW_CALL_S else MIN_REPS, max_reps)
    samples = []
    for _ in range(reps):
        t0 = clock()
        fn()
        samples.append(clock() - t0)
    return Measurement(samples, "cpu-perf-counter", warm + 1, estimate, l2_flush=False)
