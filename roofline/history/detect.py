"""`history detect`: the change points of every series (`changes.change_points`), each with the run it began
at, its size, direction and confidence, what else changed there (the SM clock, the power cap, the driver, the
machine), and the gate on them (`--fail-on median:5%`: a change worse by more than 5% fails).

A series is judged in `time` (each run's median) or in `fraction` (the fraction of the roofline at the SM clock
the run measured: a run slowed by a lower clock alone keeps its fraction, so code that did not change reads
unchanged). The points are run medians, so the only rule that applies is `median`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from roofline.ci.rules import parse_fail_on
from roofline.core.errors import UsageError
from roofline.core.stats import median
from roofline.history.changes import Change, change_points, min_points
from roofline.history.series import METRICS, Point, Run, Series

# The SM clocks of two segments differ when their medians differ by more than this share: a GPU boosting
# normally holds its clock within ~1% run to run; a thermal or power limit takes 5-20% off.
CLOCK_CHANGE = 0.02
# A power cap set anew is a change of at least a watt (NVML reports milliwatts; caps are set in watts).
POWER_CHANGE_W = 1.0
# A series is judged on its latest this many runs (`--last` asks for more or fewer): PELT's L1 cost grows about with
# the square of the runs (0.02 s for 30 runs, 0.18 s for 100, 1.1 s for 300 on a 2-core CI machine), and 100 runs
# are three months of nightly ones. Older changes are history; a chart still draws every run.
DETECT_RUNS = 100
# Higher is better in these metrics (time: lower is).
HIGHER_IS_BETTER = {"time": False, "fraction": True}
assert set(HIGHER_IS_BETTER) == set(METRICS)


@dataclass(frozen=True)
class Found:
    """One change of one series: the run it began at and the run before it, its size in the metric (0.05: the
    value 5% higher), whether that is worse, and what else changed between the two segments."""

    change: Change
    run: Run
    previous: Run
    worse: bool
    also: tuple[str, ...]  # 'SM clock 1980 -> 1755 MHz', 'driver 550.54 -> 560.28', ...
    failed: bool  # worse by more than the --fail-on threshold

    @property
    def direction(self) -> str:
        return "worse" if self.worse else "better"

    def to_dict(self) -> dict[str, Any]:
        c = self.change
        return {"index": c.index, "commit": self.run.commit, "run": self.run.id,
                "previous_commit": self.previous.commit,
                "before": c.before, "after": c.after, "size": c.size, "direction": self.direction,
                "confidence": c.confidence, "p_value": c.p_value, "runs_before": c.n_before,
                "runs_after": c.n_after, "also_changed": list(self.also), "failed": self.failed}


@dataclass(frozen=True)
class Judged:
    """One series judged: its changes, or why it was not (`skipped`)."""

    series: Series
    metric: str
    changes: tuple[Found, ...] = ()
    skipped: str | None = None

    @property
    def failed(self) -> bool:
        return any(f.failed for f in self.changes)

    def to_dict(self) -> dict[str, Any]:
        s = self.series
        return {"key": s.key, "name": s.name, "gpu": s.gpu, "op": s.op, "metric": self.metric,
                "points": len(s.points), "skipped": self.skipped, "changes": [f.to_dict() for f in self.changes]}


def gate_threshold(fail_on: str) -> float:
    """The median threshold of `--fail-on` (`median:5%` -> 0.05); a rule on another statistic is refused: the
    points of a series are run medians."""
    rules = parse_fail_on(fail_on).rules
    other = [str(r) for r in rules if r.statistic != "median"]
    if other:
        raise UsageError(f"--fail-on {', '.join(other)}: history detect judges each run's median: give median:PCT%")
    return rules[0].threshold


def check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise UsageError(f"--metric {metric!r}: use {' or '.join(METRICS)}")


def also_changed(before: Sequence[Point], after: Sequence[Point]) -> tuple[str, ...]:
    """What else differs between the runs before a change and after it: the median SM clock (past CLOCK_CHANGE),
    the power cap, and between the last run before and the first after, the driver and the machine."""
    out = []
    clocks = [[p.sm_clock_mhz for p in side if p.sm_clock_mhz] for side in (before, after)]
    if all(clocks):
        a, b = median(clocks[0]), median(clocks[1])
        if abs(b / a - 1) > CLOCK_CHANGE:
            out.append(f"SM clock {a:.0f} -> {b:.0f} MHz")
    caps = [[p.power_limit_w for p in side if p.power_limit_w] for side in (before, after)]
    if all(caps):
        a, b = median(caps[0]), median(caps[1])
        if abs(b - a) >= POWER_CHANGE_W:
            out.append(f"power cap {a:.0f} -> {b:.0f} W")
    last, first = before[-1].run, after[0].run
    for what, x, y in (("driver", last.driver, first.driver), ("machine", last.machine, first.machine)):
        if x != y:
            out.append(f"{what} {x or '?'} -> {y or '?'}")
    return tuple(out)


def judge_series(series: Series, metric: str, threshold: float, runs: int | None = DETECT_RUNS) -> Judged:
    """The changes of one series (its points as read, oldest first) in `metric`, among its last `runs` points
    (None: all); each change's index counts from the series' first point."""
    if metric == "fraction" and any(p.value(metric) is None for p in series.points):
        return Judged(series, metric, skipped="no roofline time: not judged as a fraction of the roofline")
    points = series.points
    offset = max(0, len(points) - runs) if runs is not None else 0
    if len(points) - offset < min_points():
        n = len(points) - offset
        return Judged(series, metric, skipped=f"{n} run{'s' * (n != 1)}: a change needs {min_points()} or more")
    values = [p.value(metric) or 0.0 for p in points[offset:]]
    changes = [dataclasses.replace(c, index=c.index + offset) for c in change_points(values)]
    edges = [offset, *(c.index for c in changes), len(points)]
    found = []
    for i, c in enumerate(changes):
        before, after = points[edges[i]:c.index], points[c.index:edges[i + 2]]
        worse = (c.size < 0) if HIGHER_IS_BETTER[metric] else (c.size > 0)
        found.append(Found(c, points[c.index].run, points[c.index - 1].run, worse, also_changed(before, after),
                           failed=worse and abs(c.size) > threshold))
    return Judged(series, metric, tuple(found))


def judge(series: Sequence[Series], metric: str = "time", fail_on: str = "median:5%",
          runs: int | None = DETECT_RUNS) -> list[Judged]:
    """Every series judged on its last `runs` points; `fail_on` as `check`'s (median rules only)."""
    check_metric(metric)
    threshold = gate_threshold(fail_on)
    return [judge_series(s, metric, threshold, runs) for s in series]
