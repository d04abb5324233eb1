"""The change points of one series: where its level moved, found by ruptures' PELT and confirmed by a rank test.

A series is one value per run (a run's median time, or its fraction of the roofline). PELT (Killick et al.,
2012; `ruptures.Pelt`) finds the segmentation that minimises the segments' cost plus a penalty per change. The
cost is L1 (each point's distance from its segment's median), as asv's step detection fits an L1 Potts model: one
slow run moves a segment's cost by its distance, not by its square, so a lone outlier is not a step. The penalty
is BIC-like, PENALTY_FACTOR x noise x log(n), with the noise of one run estimated from the series itself (the MAD
of successive differences, which a step moves in one difference only), so the same rule fits a 2 µs kernel and a
20 ms one. Each change found is then confirmed by a two-sided Mann-Whitney U test of the segment before it
against the segment after (`roofline.core.stats`, the test `check` uses): a change whose p-value is not below
ALPHA is dropped, and the confidence reported is 1 - p.

Why ruptures, and these numbers: docs/trends.md ("Choosing the detector"), measured by scripts/history_bench.py
detectors on synthetic A/A series and injected 5% steps.

NB: a change is a level shift; a slow drift is a run of small steps or none, and a series that alternates
between two levels (two GPUs of one machine taken in turn) reads as many changes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from roofline.core.stats import mann_whitney_u, median

# The penalty per change, in units of noise x log(n) (the L1 cost of a point is its distance, so the penalty is
# linear in the noise): 3 raised no false alarm in 900 30-run A/A series (normal 1% and 2%, Student t 1%) and found a
# 5% step within two runs in 100% of series over 1% noise, 65% over 2%; 2 found 85% over 2% with 1.3% false alarms
# (docs/trends.md, "Choosing the detector").
PENALTY_FACTOR = 3.0
# A segment holds at least this many runs: one run alone is an outlier, not a level.
MIN_SEGMENT = 2
# A change is kept only where the runs before and after it differ by a two-sided Mann-Whitney U test at this
# level (the gate's own ALPHA, roofline.ci.judge): PELT proposes, the rank test confirms.
ALPHA = 0.01
# The noise of one run is at least this share of the series' median: a series of identical values (a timer's
# resolution, a synthetic series) would otherwise give a penalty of 0 and a change at every point.
NOISE_FLOOR = 1e-4
# MAD to standard deviation for normal noise; successive differences carry the noise of two runs (sqrt 2).
MAD_TO_SD = 1.4826


@dataclass(frozen=True)
class Change:
    """One change point: the series' level moved from `before` to `after` at point `index` (the first point of
    the new level); `p_value`: the rank test of the segments on either side."""

    index: int
    before: float  # the median of the segment before the change
    after: float  # the median of the segment after it
    p_value: float
    n_before: int
    n_after: int

    @property
    def size(self) -> float:
        """The relative change of the level (0.05: 5% higher)."""
        return self.after / self.before - 1 if self.before else math.inf

    @property
    def confidence(self) -> float:
        return 1.0 - self.p_value


def noise(values: Sequence[float]) -> float:
    """The standard deviation of one point, robustly: the MAD of successive differences / sqrt(2), at least
    NOISE_FLOOR of the median."""
    diffs = [b - a for a, b in itertools.pairwise(values)]
    floor = NOISE_FLOOR * abs(median(values))
    if not diffs:
        return floor
    mid = median(diffs)
    return max(MAD_TO_SD * median([abs(d - mid) for d in diffs]) / math.sqrt(2), floor)


def penalty(values: Sequence[float]) -> float:
    return PENALTY_FACTOR * noise(values) * math.log(len(values))


def min_points() -> int:
    """The shortest series that can hold a change: a segment on either side."""
    return 2 * MIN_SEGMENT


def _breaks(values: Sequence[float]) -> list[int]:
    """PELT's change points (the index of each new segment's first point)."""
    import numpy as np
    import ruptures  # type: ignore[import-untyped]

    signal = np.asarray(values, dtype=float).reshape(-1, 1)
    ends = ruptures.Pelt(model="l1", min_size=MIN_SEGMENT, jump=1).fit(signal).predict(pen=penalty(values))
    return [int(b) for b in ends[:-1]]


def change_points(values: Sequence[float]) -> list[Change]:
    """The changes of the series `values` (oldest first), each confirmed by the rank test; none for a series
    shorter than `min_points()` or with a value that is not a finite number."""
    if len(values) < min_points() or not all(math.isfinite(v) for v in values):
        return []
    proposed = _breaks(values)
    out: list[Change] = []
    edges = [0, *proposed, len(values)]
    for i, at in enumerate(proposed):
        left, right = list(values[edges[i]:at]), list(values[at:edges[i + 2]])
        p = mann_whitney_u(left, right).p_value
        if p < ALPHA:
            out.append(Change(at, median(left), median(right), p, len(left), len(right)))
    return out
