"""A whole step's predicted time from its records' predictions (`roofline.analysis.predict`): the kernels'
sum with an interval, plus the launch gaps of an eager program.

Interval arithmetic (docs/prediction.md): a family's kernels share their library and their errors, so within a
family the distances from the prediction to the interval's ends add up (`sum_interval`); different families
err independently, so across families they add in quadrature. Launch gaps: each kernel of an eager program
leaves the GPU idle for about the gap the database measured per kernel (`OpDB.launch_gap_s`); one kernel per
op call is assumed where the profile did not see the kernels (an analytic profile).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from roofline.analysis.predict import BOUND, Prediction, Predictor
from roofline.core.summary import StepPrediction


def sum_interval(parts: Iterable[tuple[str | None, float, float, float]]) -> tuple[float, float, float]:
    """(sum, low, high) of (group, value, low, high) parts: within a group the distances below and above add;
    across groups they add in quadrature. Each part's low <= value <= high."""
    total = 0.0
    below: dict[str | None, float] = {}
    above: dict[str | None, float] = {}
    for group, value, low, high in parts:
        if not low <= value <= high:
            raise ValueError(f"interval [{low}, {high}] does not hold {value}")
        total += value
        below[group] = below.get(group, 0.0) + (value - low)
        above[group] = above.get(group, 0.0) + (high - value)
    return (total, total - math.sqrt(sum(d * d for d in below.values())),
            total + math.sqrt(sum(d * d for d in above.values())))


def step_prediction(records: Sequence[Any], predictor: Predictor,
                    measured_kernel_time_s: float | None = None) -> StepPrediction:
    """The step's predicted kernel time, interval and launch gaps from its records (a profile's: `count` calls
    each, times per call): their predicted_* fields, or the predictor's answer for a record without them (the
    bound, without a database); the bound's sum beside it. `measured_kernel_time_s`: a timed profile's kernel sum,
    kept beside the prediction."""
    parts = []
    bound = 0.0
    from_db = on_bound = unpredicted = kernels = 0
    for r in records:
        n = r.count or 1
        kernels += n * (len(r.kernels) if r.kernels else 1) if (r.bytes or r.time_s) else 0
        p = Prediction.of(r) if r.predicted_time_s is not None else predictor.predict(r)  # without its fields: now
        if p is None:
            unpredicted += n
            continue
        bound += n * (r.roofline_time_s or 0.0)
        on_bound += 0 if p.from_db else n
        from_db += n if p.from_db else 0
        parts.append((p.family if p.from_db else BOUND, n * p.time_s, n * p.low_s, n * p.high_s))
    kernel_s, low_s, high_s = sum_interval(parts)
    gap = predictor.db.launch_gap_s() if predictor.db is not None else None
    gaps_s = gap * kernels if gap is not None else None
    return StepPrediction(kernel_s, low_s, high_s, gaps_s, gap, kernels, kernel_s + (gaps_s or 0.0),
                          low_s + (gaps_s or 0.0), high_s + (gaps_s or 0.0), bound, from_db, on_bound, unpredicted,
                          predictor.name, measured_kernel_time_s)
