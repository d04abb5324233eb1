"""Rendering of the operator database and of predictions: the sweep's summary per family, the prediction
columns of a record table, a profile's predicted step. Rendering only: the numbers come from
analysis/predict.py and analysis/predict_step.py."""

from __future__ import annotations

import math
from typing import Any

from roofline.analysis.predict import FamilyModel
from roofline.ceilings.opdb import OpDB
from roofline.core.format import duration
from roofline.report.text import Column, FitTable


def _pct(x: float) -> str:
    return f"{x:+.0%}"


def family_rows(db: OpDB) -> list[list[str]]:
    """One row per (family, dtype): points, the median efficiency and the interval the residuals give."""
    rows = []
    for (family, dtype), pts in sorted(db.families().items()):
        model = FamilyModel(family, dtype, pts)
        effs = sorted(p.efficiency for p in pts)
        lo, hi = model.spread
        rows.append([family, dtype, str(len(pts)), f"{effs[len(effs) // 2]:.0%}", f"{effs[0]:.0%}-{effs[-1]:.0%}",
                     f"{_pct(math.exp(-hi) - 1)} / {_pct(math.exp(-lo) - 1)}"])
    return rows


def db_table(db: OpDB, title: str | None = None) -> FitTable:
    cols = [Column("family", left=True), Column("dtype", left=True), Column("points"), Column("median\neff"),
            Column("eff range"), Column("interval\n(time)")]
    gap = db.launch_gap_s()
    caption = [f"device: {db.device.get('name')} ({db.device_id}); driver {db.device.get('driver') or '-'}, "
               f"torch {db.device.get('torch') or '-'}; updated {db.updated or '-'}",
               "eff: roofline time / measured time; interval: a prediction's range from the leave-one-out "
               "residuals (docs/prediction.md)"]
    if gap is not None:
        caption.append(f"launch gap per kernel (eager, back to back): {duration(gap)}")
    return FitTable(cols, family_rows(db), title=title or f"operator database {db.path or ''}".strip(),
                    caption=caption)


def sweep_summary(db: OpDB, result: Any) -> FitTable:
    """The database after a sweep, with what this run did in the title."""
    skipped = ", ".join(f"{n} {why}" for why, n in sorted(result.skipped.items()))
    title = (f"operator sweep: {result.measured} measured, {result.skipped_known} already there"
             + (f", skipped {skipped}" if skipped else "") + f" in {duration(result.seconds)}")
    return db_table(db, title)


def step_lines(step: dict[str, Any], measured_s: float | None = None) -> list[str]:
    """A profile's predicted step, beside the bound and (timed) the measured kernel time."""
    k, lo, hi = step["predicted_kernel_time_s"], step["predicted_kernel_low_s"], step["predicted_kernel_high_s"]
    lines = [f"predicted kernel time {duration(k)} ({duration(lo)} - {duration(hi)}); bound "
             f"{duration(step['bound_time_s'])}" + (f"; measured {duration(measured_s)}" if measured_s else "")]
    if step.get("predicted_launch_gaps_s") is not None:
        lines.append(f"eager step: {duration(step['predicted_step_s'])} with {step['predicted_kernels']} kernel "
                     f"launch gaps of {duration(step['launch_gap_per_kernel_s'])}")
    lines.append(f"predicted from {step['prediction_source']}: {step['calls_from_db']} calls from the database, "
                 f"{step['calls_on_bound']} on the bound, {step['calls_unpredicted']} without a formula")
    return lines


def verdict_table(verdicts: Any, margin: float) -> FitTable:
    """`check --against-prediction`: each judged record, measured beside its predicted interval."""
    from roofline.ci.predicted import SLOWER, UNJUDGED

    cols = [Column("record", left=True, wrap=True), Column("measured"), Column("predicted"), Column("interval"),
            Column("verdict", left=True, wrap=True)]
    order = sorted(verdicts, key=lambda v: (v.verdict != SLOWER, v.verdict == UNJUDGED, -v.measured_s))
    rows = [[v.label + (f" {v.module}" if v.module else ""), duration(v.measured_s), duration(v.predicted_s),
             f"{duration(v.low_s)}-{duration(v.high_s)}", f"{v.verdict}: {v.message}"] for v in order]
    slower = sum(v.verdict == SLOWER for v in verdicts)
    judged = sum(v.verdict != UNJUDGED for v in verdicts)
    return FitTable(cols, rows, title=f"against the prediction: {slower} of {judged} judged records slower than "
                                      f"their interval + {margin:.0%}",
                    caption=["interval: the family's spread in the operator database (docs/prediction.md); a record "
                             "fails above its top by more than the --fail-on median threshold"])
