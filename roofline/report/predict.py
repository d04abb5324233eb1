"""Rendering of the operator database and of `check --against-prediction`: the sweep's summary per family, the
verdicts. (A record table's prediction column is report/text.py's, a profile's predicted step report/profile.py's.)
Rendering only: the numbers come from analysis/predict.py and analysis/predict_step.py."""

from __future__ import annotations

import math
from typing import Any

from roofline.analysis.l2_drain import drain_model
from roofline.analysis.predict import FamilyModel
from roofline.ceilings.opdb import L2_STATES, OpDB
from roofline.core.format import duration
from roofline.report.text import Column, FitTable

# A family's interval is printed in percent while it is within these (a GPU's, typically -20% / +30%), else as
# factors: "-100% / +42347%" reads worse than "0.004x-424x" (a shared CPU's spreads).
PERCENT_SPAN = (0.5, 2.0)


def _eff(x: float) -> str:
    """An efficiency: whole percent, a decimal below 10%, "<0.1%" below that."""
    return f"{x:.0%}" if x >= 0.1 else f"{x:.1%}" if x >= 0.001 else "<0.1%"


def interval_text(low: float, high: float) -> str:
    """A time interval as factors of the prediction (low <= 1 <= high): percent when narrow, else factors."""
    if PERCENT_SPAN[0] <= low and high <= PERCENT_SPAN[1]:
        return f"{low - 1:+.0%} / {high - 1:+.0%}"
    return f"{low:.2g}x-{high:.3g}x"


def family_rows(db: OpDB) -> list[list[str]]:
    """One row per (family, dtype, L2 state): points, the median efficiency and the interval the residuals
    give; a warm row counts the family's points timed with a warm L2 alone."""
    rows = []
    for l2 in L2_STATES:
        for (family, dtype), pts in db.families(l2).items():
            pts = [p for p in pts if p.l2 == l2]
            if not pts:
                continue
            model = FamilyModel(family, dtype, pts)
            effs = sorted(p.efficiency for p in pts)
            lo, hi = model.spread
            rows.append([family, dtype, l2, str(len(pts)), _eff(effs[len(effs) // 2]),
                         f"{_eff(effs[0])}-{_eff(effs[-1])}", interval_text(math.exp(-hi), math.exp(-lo))])
    return sorted(rows)


def db_table(db: OpDB, title: str | None = None) -> FitTable:
    cols = [Column("family", left=True), Column("dtype", left=True), Column("L2", left=True), Column("points"),
            Column("median\neff"), Column("eff range"), Column("interval\n(time)")]
    gap = db.launch_gap_s()
    caption = [f"device: {db.device.get('name')} ({db.device_id}); driver {db.device.get('driver') or '-'}, "
               f"torch {db.device.get('torch') or '-'}; updated {db.updated or '-'}",
               "eff: roofline time / measured time; interval: a prediction's range from the leave-one-out "
               "residuals (docs/prediction.md)",
               "L2: flushed before each sample (an op alone), or warm (as a model's ops find it)"]
    if gap is not None:
        caption.append(f"launch gap per kernel (eager, back to back): {duration(gap)}")
    if (drain := drain_model(db.l2_drain)) is not None:
        caption.append(f"L2 write-back: a model's memory-bound op pays {drain.keep:.2f} of what the op before "
                       f"wrote, up to {drain.cap_bytes / 2**20:.0f} MiB at {drain.bytes_per_s / 1e12:.2f} TB/s")
    return FitTable(cols, family_rows(db), title=title or f"operator database {db.path or ''}".strip(),
                    caption=caption)


def sweep_summary(db: OpDB, result: Any) -> FitTable:
    """The database after a sweep, with what this run did in the title."""
    skipped = ", ".join(f"{n} {why}" for why, n in sorted(result.skipped.items()))
    title = (f"operator sweep: {result.measured} measured, {result.skipped_known} already there"
             + (f" ({result.retimed} older ones timed again)" if result.retimed else "")
             + (f", skipped {skipped}" if skipped else "") + f" in {duration(result.seconds)}")
    return db_table(db, title)


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
