"""What the CI check answers, as data: the verdicts, one `Row` per record (or whole region) and the `Report` of
all rows. `ci.judge` reaches the verdicts (`ci.counters` those of counter rules); `report.check` renders them.

Verdicts: better, better_not_significant, same, worse_not_significant, worse, worse_busy_machine (worse, on a
record timed on a busy machine: the slowdown may be the machine's), unjudged (a record of a suite with too few
samples on a side to be judged: it fails unless allowed), not_comparable, missing, new.

A report may also be refused (`Report.refused`, exit status 2): when fewer than MIN_COMPARED_SHARE of the
records both documents hold were compared, its pass would speak for what it did not compare.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from roofline.ci.rules import FailOn
from roofline.core.record import ROOT_MODULE, label, shape_text

BETTER = "better"
BETTER_NOT_SIGNIFICANT = "better_not_significant"
SAME = "same"
WORSE_NOT_SIGNIFICANT = "worse_not_significant"
WORSE = "worse"
WORSE_BUSY = "worse_busy_machine"
UNJUDGED = "unjudged"
NOT_COMPARABLE = "not_comparable"
MISSING = "missing"
NEW = "new"
# Row kinds: a record's row, or a whole region of a profile (synthetic: from the document's summary).
RECORD = "record"
REGION = "region"
VERDICTS = (WORSE, WORSE_BUSY, UNJUDGED, WORSE_NOT_SIGNIFICANT, NOT_COMPARABLE, MISSING, NEW, BETTER,
            BETTER_NOT_SIGNIFICANT, SAME)
# What `--busy` makes of a worse_busy_machine verdict: it fails the check (the default), or it is reported only.
BUSY_FAIL = "fail"
BUSY_OK = "ok"
BUSY_CHOICES = (BUSY_FAIL, BUSY_OK)
# When several rules judge one record, the most severe verdict stands (unjudged fails unless allowed: above
# worse_not_significant, below a worse that a counter rule found without samples).
SEVERITY = {SAME: 0, BETTER_NOT_SIGNIFICANT: 1, BETTER: 2, WORSE_NOT_SIGNIFICANT: 3, UNJUDGED: 4, WORSE: 5}
# A check must have compared at least this share of the records (and regions) both documents hold, timed on at
# least one side, or it is refused (exit 2): a pass says the suite did not regress, and it cannot say so of
# what it did not compare. The honest reasons a record is not compared (a spec peak corrected for one dtype, a
# record without energy samples or roofline time, one with too few samples) touch a few records of a suite;
# another device, driver, roof or suite touches all of them. Half keeps the first working and refuses the
# second, and any check that compared nothing.
MIN_COMPARED_SHARE = 0.5


def where_text(module: str | None, region: str | None) -> str:
    """Where a profile record ran: 'fc1', 'step: fc1', '(root)' for the model itself."""
    return (f"{region}: " if region else "") + (module or ROOT_MODULE)


# ---------------------------------------------------------------- outcomes
@dataclass(frozen=True)
class Row:
    """One record's outcome. Values are in the metric's unit (seconds, or a fraction of the roofline)."""

    op: str
    variant: str | None
    dtype: str
    params: dict[str, Any]
    verdict: str
    reason: str
    metric: str = "time"
    statistic: str = "median"
    threshold: str = ""
    baseline_median: float | None = None
    current_median: float | None = None
    baseline_value: float | None = None  # the judged statistic (== median under a median rule)
    current_value: float | None = None
    change: float | None = None  # relative change of the judged statistic: +0.07 is 7% higher
    p_value: float | None = None
    p_method: str | None = None
    u_statistic: float | None = None
    n_baseline: int = 0
    n_current: int = 0
    case: str = ""  # set only when two records share op, variant, shape and dtype (e.g. "tensor_cores=False")
    # Profiles: a record's module and region; a region row (kind REGION) has its region and `basis`, what
    # its samples are ("wall time per entry", "kernel time per entry").
    kind: str = RECORD
    module: str | None = None
    region: str | None = None
    basis: str = ""
    # Runs behind each side's samples, and the between-run noise the change was held against: the relative
    # standard deviation of one run's statistic and its degrees of freedom (None, 0: unknown), and the
    # relative change that noise allows (`noise_floor`: a change within it is not significant between runs).
    runs_baseline: int = 0
    runs_current: int = 0
    run_noise: float | None = None
    noise_dof: int = 0
    noise_floor: float | None = None
    # The sides ("baseline", "results") whose record was timed on a busy machine (its notes say so).
    busy: tuple[str, ...] = ()

    @property
    def profile(self) -> bool:
        """A row of a profile document (a region, or a record with its module)."""
        return self.kind == REGION or self.module is not None

    @property
    def shape(self) -> str:
        if self.kind == REGION:
            return self.basis
        return shape_text(self.params) + (f" [{self.case}]" if self.case else "")

    @property
    def where(self) -> str:
        """Where a profile row ran ('step: fc1', 'step (whole region)'); empty for other rows."""
        if self.kind == REGION:
            return f"{self.region} (whole region)"
        return where_text(self.module, self.region) if self.module is not None else ""

    @property
    def name(self) -> str:
        if self.kind == REGION:
            return f"region {self.region} ({self.basis})"
        return f"{label(self.op, self.variant, self.dtype)} {self.shape}" + (f" in {self.where}" if self.where else "")

    def to_dict(self) -> dict[str, Any]:
        """The row as plain data; a profile's rows add kind, module, region and basis."""
        out = {"op": self.op, "variant": self.variant, "dtype": self.dtype, "params": self.params,
               "shape": self.shape, "verdict": self.verdict, "reason": self.reason, "metric": self.metric,
               "statistic": self.statistic, "threshold": self.threshold, "baseline_median": self.baseline_median,
               "current_median": self.current_median, "baseline_value": self.baseline_value,
               "current_value": self.current_value, "change": self.change, "p_value": self.p_value,
               "p_method": self.p_method, "u_statistic": self.u_statistic, "n_baseline": self.n_baseline,
               "n_current": self.n_current, "case": self.case, "runs_baseline": self.runs_baseline,
               "runs_current": self.runs_current, "run_noise": self.run_noise, "noise_dof": self.noise_dof,
               "noise_floor": self.noise_floor, "busy_machine": list(self.busy)}
        if self.profile:
            out.update(kind=self.kind, module=self.module, region=self.region, basis=self.basis)
        return out


@dataclass(frozen=True)
class Report:
    """Every record's verdict, and how they were reached. Its outputs (table, markdown, JUnit, JSON): report.check."""

    rows: tuple[Row, ...]
    rules: FailOn
    alpha: float
    metric: str
    notes: tuple[str, ...] = ()
    allow_missing: bool = False  # a baseline record missing from the results fails unless the user allows it
    busy: str = BUSY_FAIL  # whether a worse verdict on a record timed on a busy machine fails (`--busy`)
    allow_unjudged: bool = False  # an unjudged record (too few samples) fails unless the user allows it
    # Why the check is refused (exit 2: too few of the records both documents hold were compared), one line; empty
    # when it stands.
    refused: str = ""

    @property
    def failing_verdicts(self) -> frozenset[str]:
        """The verdicts that fail the check: worse; worse_busy_machine unless `--busy ok`; missing unless
        `--allow-missing`; unjudged unless `--allow-unjudged`."""
        return frozenset({WORSE} | ({WORSE_BUSY} if self.busy == BUSY_FAIL else set())
                         | (set() if self.allow_missing else {MISSING})
                         | (set() if self.allow_unjudged else {UNJUDGED}))

    @property
    def regressions(self) -> tuple[Row, ...]:
        failing = self.failing_verdicts
        return tuple(r for r in self.rows if r.verdict in failing)

    @property
    def passed(self) -> bool:
        return not self.regressions and not self.refused

    @property
    def exit_code(self) -> int:
        """0 when nothing regressed, 1 on a regression, 2 when the check is refused (too little compared; other
        bad input never gets here: it raised UsageError)."""
        return 2 if self.refused else 0 if self.passed else 1

    def counts(self) -> dict[str, int]:
        return {v: n for v in VERDICTS if (n := sum(r.verdict == v for r in self.rows))}

    @property
    def profile(self) -> bool:
        """Whether the report judges profile documents (its table then says where each row ran)."""
        return any(r.profile for r in self.rows)

    def summary(self) -> str:
        counts = ", ".join(f"{n} {v}" for v, n in self.counts().items()) or "no records"
        status = "REFUSED" if self.refused else "FAILED" if not self.passed else "passed"
        regions = sum(r.kind == REGION for r in self.rows)
        of = f"; {regions} of the rows {'are whole regions' if regions > 1 else 'is a whole region'}" if regions else ""
        what = f"{self.metric}, " if self.rules.timing.rules else ""
        return f"roofline check {status}: {counts} ({what}{self.rules}, alpha {self.alpha:g}{of})"
