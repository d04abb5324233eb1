"""Several runs of one suite in one document: each record's per-run samples and its between-run noise.

The samples of one run share that run's clocks, placement and cache state, so they are not independent of
the run: the run, not the sample, is the unit that repeats. A document that holds several runs (from
`roofline run --repeat N` or `roofline baseline update A.json B.json ...`) keeps each run's samples apart, and
the spread of a statistic between runs of unchanged code (A/A runs) is that record's between-run noise.

Schema v1 additions (fields added, none renamed):
- record `run_samples_s`: each run's raw samples, one list per run in run order; written when a document holds
  two or more runs of the record. `time_samples_s` then holds all of them concatenated (a reader that knows
  only it still sees every sample) and `time_s` the mean of the runs' medians (`core.stats.of_runs`: the value
  `check` compares; check reads the runs themselves, never `time_s`).
- record `run_noise`: the between-run noise learned from A/A runs, `{"runs": k, "dof": d, "relative_sd":
  {"median": s, "mean": s, "min": s, "p90": s}}`: per statistic, the relative standard deviation of one run's
  value around the mean of its A/A group, with its degrees of freedom. Relative, so it serves the time and the
  roofline-fraction metrics alike.
- document `runs`: one entry per run, `{"created": ISO time, "command": [argv]}`, in run order.

The record has no typed attribute for the two record fields: they live in `Record.extra` (kept and written back
like any field this version does not type), read and written only here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from roofline.core.record import Record
from roofline.core.stats import pool_sd, relative_sd, run_values, statistic, t_quantile

RUN_SAMPLES = "run_samples_s"
RUN_NOISE = "run_noise"
# The statistics a failure rule can judge (`--fail-on median:5%`); a noise figure holds one spread for each.
STATISTICS = ("median", "mean", "min", "p90")
# A stored noise figure agrees with the one learned again from the same runs to float round-off (JSON keeps a
# double exactly; the tolerance is for a writer that rounds).
NOISE_RTOL = 1e-9


def check_runs(rec: Record) -> str | None:
    """What is wrong with a record's `run_samples_s`, or None: it must be a list of non-empty lists of positive
    numbers whose concatenation is the record's `time_samples_s` (`with_runs` writes both so: runs that are
    not its samples would be judged in their place)."""
    runs = rec.extra.get(RUN_SAMPLES)
    if runs is None:
        return None
    if not isinstance(runs, list) or not runs or not all(isinstance(r, list) and _positive(r) for r in runs):
        return f"{RUN_SAMPLES} must be a list of runs, each a non-empty list of positive numbers"
    if rec.time_samples_s is None or [t for r in runs for t in r] != list(rec.time_samples_s):
        return (f"{RUN_SAMPLES} does not hold the record's samples: its runs, one after another, must be its "
                "time_samples_s (as `run --repeat` and `baseline update` write them)")
    return None


def _positive(run: list[Any]) -> bool:
    """A run of samples: numbers above 0, at least one (min and sum run in C over thousands of samples; a string
    raises TypeError; a boolean counts as the number it equals, as in the sample list it must equal)."""
    try:
        return bool(run) and min(run) > 0 and math.isfinite(sum(run))
    except (TypeError, OverflowError):
        return False


def check_noise(rec: Record) -> str | None:
    """What is wrong with a results record's stored `run_noise`, or None: a results document's between-run noise
    is what its own runs show (`merge_runs` writes it so); a figure that is not would set the noise floor in
    their place. A baseline's stored figure may hold A/A history beyond its runs (`--keep-noise`): not checked."""
    stored = rec.extra.get(RUN_NOISE)
    if stored is None:
        return None
    noise = Noise.from_dict(stored)
    if noise is None:
        return f"{RUN_NOISE} must be {{runs, dof, relative_sd: {{{', '.join(STATISTICS)}}}}} (numbers)"
    own = own_noise(rec)
    if own is None:
        return (f"{RUN_NOISE} on a record of one run: a results document's between-run noise is learned from its "
                f"runs ({RUN_SAMPLES}), never given")
    if (own.dof, own.runs) != (noise.dof, noise.runs) or not all(
            math.isclose(own.relative_sd[k], noise.relative_sd[k], rel_tol=NOISE_RTOL, abs_tol=NOISE_RTOL)
            for k in STATISTICS):
        return (f"{RUN_NOISE} (median sd {noise.relative_sd['median']:.3g}, {noise.runs} runs) is not what its "
                f"{own.runs} runs show ({own.relative_sd['median']:.3g}): a results document's between-run noise is "
                "learned from its runs, never given")
    return None


def run_samples(rec: Record) -> list[list[float]] | None:
    """The record's time samples run by run: its `run_samples_s`, else its samples as one run (a time without
    samples is one run of one sample); None when it was not timed."""
    runs = rec.extra.get(RUN_SAMPLES)
    if runs is not None and check_runs(rec) is None:
        return [[float(t) for t in r] for r in runs]
    if rec.time_samples_s:
        return [[float(t) for t in rec.time_samples_s]]
    return [[float(rec.time_s)]] if rec.time_s is not None else None


def run_count(rec: Record) -> int:
    """How many runs the record's samples come from (0 when it was not timed)."""
    return len(run_samples(rec) or [])


def run_medians(rec: Record) -> list[float] | None:
    """Each run's median, in run order, for a record of two runs or more (None otherwise): the between-run
    spread shown beside its `time_s`, their mean."""
    runs = run_samples(rec)
    return run_values(runs) if runs and len(runs) >= 2 else None


@dataclass(frozen=True)
class Noise:
    """A record's between-run noise: per statistic, the relative standard deviation of one run's value, with the
    degrees of freedom it was estimated with (runs minus one per A/A group) and how many runs it came from."""

    relative_sd: dict[str, float] = field(default_factory=dict)
    dof: int = 0
    runs: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"runs": self.runs, "dof": self.dof, "relative_sd": dict(self.relative_sd)}

    @classmethod
    def from_dict(cls, data: Any) -> Noise | None:
        """The stored figure; None when it is absent or malformed (then it is learned from the runs, if any)."""
        if not isinstance(data, dict):
            return None
        sds, dof, runs = data.get("relative_sd"), data.get("dof"), data.get("runs")
        if not isinstance(sds, dict) or not isinstance(dof, int) or isinstance(dof, bool) or dof < 1:
            return None
        clean = {k: float(v) for k, v in sds.items()
                 if k in STATISTICS and isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0}
        if set(clean) != set(STATISTICS):
            return None
        return cls(clean, dof, runs if isinstance(runs, int) and not isinstance(runs, bool) else dof + 1)


def learn_noise(groups: Sequence[Sequence[Sequence[float]]]) -> Noise | None:
    """The between-run noise of A/A runs: `groups` of runs (each run a list of samples), the runs of a group
    being the same code. None when no group has two runs."""
    sds: dict[str, float] = {}
    dof = 0
    for name in STATISTICS:
        est = relative_sd([[statistic(run, name) for run in runs] for runs in groups])
        if est is None:
            return None
        sds[name], dof = est
    return Noise(sds, dof, sum(len(runs) for runs in groups))


def pool_noise(parts: Sequence[Noise | None]) -> Noise | None:
    """Noise figures estimated apart (a baseline's and a result's runs; an old baseline's and new runs), pooled
    by their degrees of freedom; None when there is none."""
    known = [n for n in parts if n is not None and n.dof >= 1]
    if not known:
        return None
    sds: dict[str, float] = {}
    dof = 0
    for name in STATISTICS:
        pooled = pool_sd([(n.relative_sd[name], n.dof) for n in known])
        assert pooled is not None
        sds[name], dof = pooled
    return Noise(sds, dof, sum(n.runs for n in known))


def noise_factor(noise: Noise | None, runs_baseline: int, runs_current: int, alpha: float) -> float | None:
    """What multiplies a statistic's relative between-run sd to give the change that noise alone reaches at
    `alpha` (two-sided): the Student t quantile at the noise's degrees of freedom times the standard error of
    a difference of two means of runs, sqrt(1/runs_baseline + 1/runs_current). None when the noise is unknown.
    Few runs give few degrees of freedom and a large t (63.7 at one, 4.6 at four, 3.2 at nine): a noise
    figure from two runs is barely known, and the floor says so rather than trusting it."""
    if noise is None or noise.dof < 1:
        return None
    return t_quantile(1 - alpha / 2, noise.dof) * math.sqrt(1 / runs_baseline + 1 / runs_current)


def noise_of(rec: Record) -> Noise | None:
    """A record's between-run noise: its stored `run_noise` (which may hold A/A history beyond its runs), else
    what its own runs show (two or more), else None (unknown). The check reads a baseline record's so; a results
    record's is `own_noise` (no figure the results give is trusted)."""
    stored = Noise.from_dict(rec.extra.get(RUN_NOISE))
    if stored is not None:
        return stored
    return own_noise(rec)


def own_noise(rec: Record) -> Noise | None:
    """What the record's own runs show of its between-run noise (two runs or more), whatever it stores."""
    runs = run_samples(rec)
    return learn_noise([runs]) if runs and len(runs) >= 2 else None


def with_runs(rec: Record, runs: Sequence[Sequence[float]], noise: Noise | None) -> Record:
    """The record holding `runs` (several: `run_samples_s`, all samples in `time_samples_s`, `time_s` the mean of
    the runs' medians (`core.stats.of_runs`, as check reads it) and the rates from it, `timing.stats` of all the
    samples) and its between-run noise (`run_noise`, dropped when None)."""
    from roofline.core.record import with_time
    from roofline.core.stats import of_runs, summarize

    pooled = [float(t) for run in runs for t in run]
    extra = {k: v for k, v in rec.extra.items() if k not in (RUN_SAMPLES, RUN_NOISE)}
    if len(runs) >= 2:
        extra[RUN_SAMPLES] = [[float(t) for t in run] for run in runs]
    if noise is not None:
        extra[RUN_NOISE] = noise.to_dict()
    timing = rec.timing
    if timing is not None and timing.stats is not None:
        timing = replace(timing, stats=summarize(pooled).to_dict())
    return replace(with_time(rec, of_runs(runs)), time_samples_s=pooled, timing=timing, extra=extra)


def with_noise(rec: Record, noise: Noise) -> Record:
    """The record with its between-run noise stored (`run_noise`), nothing else changed."""
    return replace(rec, extra={**rec.extra, RUN_NOISE: noise.to_dict()})
