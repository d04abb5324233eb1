"""Timing on the CPU: torch's CPU operators are synchronous, so a host clock brackets each call; warm-up and
samples are budgeted as on the GPU (`roofline.measuring.timing`). A timing that the first call shows to be
long is announced then, each step reports its progress between calls, and a machine that was busy while it ran
is named in the measurement's notes (`roofline.measuring.machine_load`). Nothing is forecast before the first
call: the only figure then is the roofline time, and a CPU's measured roof is no bound (a busy calibration, or
an op on another pipe, is beaten by 2-20x: the README's attention was forecast "at least 55 min" and took
2 min 44 s)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from roofline.core.format import rough_duration
from roofline.core.progress import LONG_RUN_S, QUIET, Reporter, Throttle
from roofline.core.record import BUSY_NOTE
from roofline.measuring.machine_load import CpuTimes, load_between, read_cpu_times
from roofline.measuring.timing import MAX_REPS, MIN_REPS, REP_BUDGET_S, WARMUP_BUDGET_S, Measurement, plan_calls

# Warm-up calls, at most: the CPU has no clock or power state to settle, only caches and allocator pools.
MAX_WARMUP_CALLS = 100
# A call slower than this gets at least MIN_SLOW_REPS samples instead of MIN_REPS (the budget is overrun
# anyway, and three samples of a slow call already give a median), no warm-up beyond its first call (which
# has filled the caches and pools; another call of seconds settles nothing more), and the call that
# estimates it counts as its first sample (it ran after the first call, as the samples do).
SLOW_CALL_S = 0.2
MIN_SLOW_REPS = 3


def warmup_calls(first_s: float, warmup_s: float = WARMUP_BUDGET_S) -> int:
    """Warm-up calls after a first call of `first_s`."""
    return 0 if first_s > SLOW_CALL_S else plan_calls(first_s, warmup_s, 1, MAX_WARMUP_CALLS)


def sample_calls(estimate_s: float, rep_s: float = REP_BUDGET_S, max_reps: int = MAX_REPS) -> int:
    """Samples for calls of `estimate_s`."""
    return plan_calls(estimate_s, rep_s, MIN_SLOW_REPS if estimate_s > SLOW_CALL_S else MIN_REPS, max_reps)


def planned_calls(call_s: float, warmup_s: float = WARMUP_BUDGET_S, rep_s: float = REP_BUDGET_S,
                  max_reps: int = MAX_REPS) -> int:
    """Every call `time_cpu` makes when each takes `call_s`: the first, the warm-up, the estimate, the samples
    (a slow call's estimate being its first sample)."""
    reps = sample_calls(call_s, rep_s, max_reps)
    return 1 + warmup_calls(call_s, warmup_s) + (reps if call_s > SLOW_CALL_S else 1 + reps)


def time_cpu(fn: Callable[[], Any], warmup_s: float = WARMUP_BUDGET_S, rep_s: float = REP_BUDGET_S,
             clock: Callable[[], float] = time.perf_counter, max_reps: int = MAX_REPS, *,
             progress: Reporter = QUIET, cpu_times: Callable[[], CpuTimes] = read_cpu_times) -> Measurement:
    """Host-clock timing of `fn`: a first call, a warm-up sized from it, an estimate, then the samples.

    A forecast over LONG_RUN_S, from the first call (what was measured, never the roofline time), goes to
    `progress.long_run`. Each step goes to `progress.status`, between calls only. `cpu_times` reads the
    machine's load around the run.

    NB: caches are not flushed on the CPU (its last-level cache is small beside any realistic input)."""
    start = cpu_times()
    progress.status("first call")
    t0 = clock()
    fn()
    first = clock() - t0
    warm = warmup_calls(first, warmup_s)
    left = planned_calls(first, warmup_s, rep_s, max_reps) - 1
    if first * left > LONG_RUN_S:
        progress.long_run(first * left, f"about {rough_duration(first * left)} more ({left} calls of about "
                                        f"{rough_duration(first)}, as long as the first)")
    if warm:
        progress.status(f"warming up ({warm} calls)")
    for _ in range(warm):
        fn()
    if first > SLOW_CALL_S:
        progress.status(f"sampling 1 of {sample_calls(first, rep_s, max_reps)}, ~{rough_duration(first * left)} left")
    t0 = clock()
    fn()
    estimate = max(clock() - t0, 1e-9)
    reps = sample_calls(estimate, rep_s, max_reps)
    samples = [estimate] if estimate > SLOW_CALL_S else []
    redraw = Throttle(clock)
    while len(samples) < reps:
        if redraw():
            per_call = sum(samples) / len(samples) if samples else estimate
            progress.status(f"sampling {len(samples) + 1} of {reps}, "
                            f"~{rough_duration(per_call * (reps - len(samples)))} left")
        t0 = clock()
        fn()
        samples.append(clock() - t0)
    m = Measurement(samples, "cpu-perf-counter", warm + 1, estimate, l2_flush=False)
    load = load_between(start, cpu_times())
    if load.busy:
        m.notes.append(f"{BUSY_NOTE} ({', '.join(load.reasons)}): the time may be slow")
    return m
