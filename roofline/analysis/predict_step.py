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

from roofline.analysis.predict import BOUND, Predictor


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


def step_prediction(records: Sequence[Any], predictor: Predictor) -> dict[str, Any]:
    """The step's predicted kernel time, interval and launch gaps from its records (a profile's: `count` calls
    each, times per call): their predicted_* fields, or the predictor's answer for a record without them (the
    bound, without a database); the bound's sum beside it."""
    parts = []
    bound = 0.0
    from_db = on_bound = unpredicted = kernels = 0
    for r in records:
        n = r.count or 1
        kernels += n * (len(r.kernels) if r.kernels else 1) if (r.bytes or r.time_s) else 0
        p = (r.predicted_time_s, r.predicted_low_s, r.predicted_high_s, r.prediction_source or BOUND) \
            if r.predicted_time_s is not None else predictor.predict(r)  # a record without its fields: now
        if p is None:
            unpredicted += n
            continue
        if not isinstance(p, tuple):
            p = (p.time_s, p.low_s, p.high_s, p.source)
        time_s, low_s, high_s, src = p
        bound += n * (r.roofline_time_s or 0.0)
        on_bound += n if src.startswith(BOUND) else 0
        from_db += 0 if src.startswith(BOUND) else n
        parts.append((src.split(":", 1)[0], n * time_s, n * low_s, n * high_s))
    kernel_s, low_s, high_s = sum_interval(parts)
    gap = predictor.db.launch_gap_s() if predictor.db is not None else None
    gaps_s = gap * kernels if gap is not None else None
    return {"predicted_kernel_time_s": kernel_s, "predicted_kernel_low_s": low_s, "predicted_kernel_high_s": high_s,
            "predicted_launch_gaps_s": gaps_s, "launch_gap_per_kernel_s": gap, "predicted_kernels": kernels,
            "predicted_step_s": kernel_s + (gaps_s or 0.0),
            "predicted_step_low_s": low_s + (gaps_s or 0.0), "predicted_step_high_s": high_s + (gaps_s or 0.0),
            "bound_time_s": bound, "calls_from_db": from_db, "calls_on_bound": on_bound,
            "calls_unpredicted": unpredicted, "prediction_source": predictor.name}
