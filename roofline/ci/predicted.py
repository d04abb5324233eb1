"""`roofline check RESULTS --against-prediction`: gate a measured run against its predicted times (an operator
database's, analysis/predict.py) instead of a baseline: "this op runs 40% slower than kernels of its kind do
here".

Noise-aware through the interval: a record fails only when its measured time is above the top of its
predicted interval (which holds the family's spread) by more than the margin (the `--fail-on` median rule's
threshold). Records predicted by the bound alone (no such family in the database) are listed, never judged;
a run with no record predicted from a database is refused (a gate never passes on nothing to judge).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from roofline.analysis.predict import BOUND, from_database, predicted, predictor_for
from roofline.ceilings.opdb import FLUSHED, WARM
from roofline.core.errors import UsageError

SLOWER, WITHIN, FASTER, UNJUDGED = "slower_than_predicted", "within_prediction", "faster_than_predicted", "bound_only"


@dataclass(frozen=True)
class PredictedVerdict:
    label: str
    module: str | None
    measured_s: float
    predicted_s: float
    low_s: float
    high_s: float
    source: str
    verdict: str

    @property
    def message(self) -> str:
        ratio = self.measured_s / self.predicted_s - 1
        if self.verdict == SLOWER:
            return f"runs {ratio:.0%} slower than kernels of its kind do here (above the predicted interval)"
        if self.verdict == FASTER:
            return f"runs {-ratio:.0%} faster than predicted (below the interval)"
        if self.verdict == UNJUDGED:
            return "not judged: no such family in the database (the prediction is the bound)"
        return f"within the predicted interval ({ratio:+.0%})"


def judge(records: Sequence[Any], margin: float) -> list[PredictedVerdict]:
    """A verdict per timed record with a prediction (module docstring)."""
    out = []
    for r in records:
        if r.time_s is None or r.predicted_time_s is None:
            continue
        src = r.prediction_source or BOUND  # the sentence, for people
        if not from_database(r):  # the bound alone: nothing to judge against
            verdict = UNJUDGED
        elif r.time_s > r.predicted_high_s * (1 + margin):
            verdict = SLOWER
        elif r.time_s < r.predicted_low_s:
            verdict = FASTER
        else:
            verdict = WITHIN
        label = r.label if r.count is not None else f"{r.label} {r.shape}"  # a profile's: its module says where
        out.append(PredictedVerdict(label, r.module, r.time_s, r.predicted_time_s, r.predicted_low_s,
                                    r.predicted_high_s, src, verdict))
    return out


def check_against_prediction(records: Sequence[Any], db: Any, margin: float, where: str) -> list[PredictedVerdict]:
    """The verdicts of a results document's records, re-predicted from `db` (a path; None: each device's own)."""
    timed = [r for r in records if r.time_s is not None]
    if not timed:
        raise UsageError(f"{where}: no timed record to judge against a prediction")
    device = timed[0].gpu
    in_model = any(r.count is not None for r in timed)  # a profile's ops ran inside a model, in its order
    warm = in_model or all(r.timing is not None and r.timing.l2_flush is False for r in timed)  # or --warm-l2
    verdicts = judge(predicted(timed, predictor_for(device, db, WARM if warm else FLUSHED, in_model)), margin)
    if not any(v.verdict != UNJUDGED for v in verdicts):
        if db is not None:  # the one named did not apply: say why (the sources: "bound (no gemm fp32 points ...)")
            why = "; ".join(sorted({v.source for v in verdicts})[:2])
            raise UsageError(f"{where}: {db} predicts none of the {len(timed)} timed record(s): {why}")
        raise UsageError(f"{where}: no record has a prediction from an operator database for {device} "
                         "(`roofline calibrate ops`, or name one with --db)")
    return verdicts


def exit_code(verdicts: Sequence[PredictedVerdict]) -> int:
    return 1 if any(v.verdict == SLOWER for v in verdicts) else 0
