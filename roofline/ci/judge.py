"""Compare a results document against a baseline for CI: a threshold, the between-run noise and a significance
test, per record.

A record regresses (`worse`, exit status 1) only when the relative change of the chosen statistic is
1. past its threshold (what matters), AND
2. past its between-run noise, when that is known (a Student t-test on the runs' values at ALPHA: the run,
   not the sample, is the unit that repeats; see `ci.runs`), AND
3. significant on the raw samples (two-sided Mann–Whitney U at ALPHA), as asv decides.
A change past the threshold that the runs or samples cannot confirm is `worse_not_significant`: reported, never
failing. With one run on each side and no stored noise figure, the between-run noise is unknown: condition 2
is skipped (the rule of a one-run baseline) and the report says so.

A record timed on a busy machine (either side; its notes say so: `core.record.BUSY_NOTE`) that comes out worse
is `worse_busy_machine`, not a plain `worse`: it fails the check unless `busy="ok"` (`--busy ok`), and the
report's notes say how many records of each side were timed on a busy machine.

Verdicts: better, better_not_significant, same, worse_not_significant, worse, worse_busy_machine, unjudged,
not_comparable, missing, new (the names, `Row` and `Report` are in `ci.verdicts`; counter rules, one value a
side, are judged by `ci.counters`).

The gate never passes on what it did not compare:
- a record of a suite with fewer than MIN_SAMPLES samples on a side (or timed on one side only) is `unjudged`:
  it fails unless the user allows it (`allow_unjudged`, `--allow-unjudged`);
- when fewer than MIN_COMPARED_SHARE of the records both documents hold were compared (not comparable:
  another device, driver, GPU, roof or spec peak; unjudged), the report is refused (`Report.refused`, exit 2);
- the rules are `--fail-on`'s, or a baseline record's own `threshold` (its suite entry's, stored by `baseline
  update`); a threshold in the results is never read, and the results' noise is what their runs show.

Whole-model profiles (`roofline profile` documents): records match by op, module, region and input shapes
(`Record.key()`), each judged on its per-call samples (an op called fewer than MIN_SAMPLES times per side
cannot be tested: it is judged on the threshold alone, never failing, as its region's row gates it). Each
region adds a row of kind "region" judged the same way on the region's per-entry wall times (a script that
runs its region N times gives N samples); a region that ran once on either side is compared on its kernel
time per entry against the threshold, a single-sample comparison with no p-value, so it can pass or warn but
never fail. A profile that marks no region is one region, "(whole run)", compared on its total kernel time.
Bad input (unreadable or corrupted files, a newer schema, a document with no records, numbers that are no
measurement, files that share no record: `ci.inputs`) raises UsageError (exit 2). A record of the baseline
missing from the results fails (it may be the one that crashed) unless the user allows it (`allow_missing`,
`--allow-missing`); a new record never fails.
Judging writes nothing: the report's formats are in `report.check`, and only `ci.baseline.update_baseline` (the
user's `roofline baseline update`) writes a baseline.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from typing import Any

from roofline.ci.counters import judge_counters, require_counters, spread_notes
from roofline.ci.inputs import MIN_SAMPLES as MIN_SAMPLES  # re-exported: callers take it from ci.judge
from roofline.ci.inputs import judge_args, measurement_problem, record_rules, records_by_key, require_timed, rules_arg
from roofline.ci.inputs import load_for_check as load_for_check
from roofline.ci.inputs import record_name as record_name
from roofline.ci.regions import RegionRun, profile_regions
from roofline.ci.rules import COUNTERS, DEFAULT_FAIL_ON, FailOn
from roofline.ci.rules import STATISTICS as STATISTICS  # re-exported: callers take the rules from ci.judge
from roofline.ci.rules import Rule as Rule
from roofline.ci.rules import parse_fail_on as parse_fail_on  # re-exported: callers parse rules from ci.judge
from roofline.ci.runs import Noise, noise_factor, noise_of, own_noise, pool_noise, run_samples
from roofline.ci.verdicts import (
    BETTER,
    BETTER_NOT_SIGNIFICANT,
    BUSY_CHOICES,
    BUSY_FAIL,
    MIN_COMPARED_SHARE,
    MISSING,
    NEW,
    NOT_COMPARABLE,
    REGION,
    SAME,
    SEVERITY,
    UNJUDGED,
    WORSE,
    WORSE_BUSY,
    WORSE_NOT_SIGNIFICANT,
    Report,
    Row,
)
from roofline.ci.verdicts import VERDICTS as VERDICTS  # re-exported: callers take the verdicts from ci.judge
from roofline.ci.verdicts import where_text as where_text
from roofline.core import validate
from roofline.core.document import Document
from roofline.core.errors import UsageError
from roofline.core.format import percent
from roofline.core.record import BUSY_NOTE, Key, Record
from roofline.core.stats import mann_whitney_u, median, statistic

# Significance level of the two-sided Mann–Whitney U test. A suite holds tens of records and CI runs on
# every PR: at 0.01 a noise-only record is flagged as significant about once in a hundred checks, and the
# threshold must be crossed as well, so a false failure needs two unlikely things at once. (MIN_SAMPLES, the
# samples a side needs for the test to reach it, is in `ci.inputs`.)
ALPHA = 0.01
# Peaks that differ by less than this relative amount are the same spec value (float round trips).
PEAK_RTOL = 1e-6

# time and fraction: the timed samples; energy: the joules per call of each counter update of a record's energy
# window (`--energy`; `core.energy.energy_fields` samples_j), lower is better, judged as time is.
METRICS = ("time", "fraction", "energy")
# The between-window noise of J per call (a record's energy is one window, so one run): the median coefficient of
# variation over five windows of ten kernels, as scripts/energy_accuracy.py measures it on an H200, taken at the
# high end of what repeated runs give (1.8%; single windows reach several percent while the board warms), with the
# 40 degrees of freedom of 10 kernels x (5 - 1) windows. One window a side: unchanged code moves up to
# t(40) x sqrt(2) x 1.8% = 6.9% at alpha 0.01, past which a change must be to fail.
ENERGY_WINDOW_CV = 0.018
ENERGY_WINDOW_NOISE = Noise({s: ENERGY_WINDOW_CV for s in STATISTICS}, dof=40, runs=5)


# ---------------------------------------------------------------- comparison
def device_differences(res_doc: Document, base_doc: Document) -> list[str]:
    """What makes two documents' machines differ: device name, driver (one phrase each, baseline first)."""
    rd, bd = res_doc.device or {}, base_doc.device or {}

    def differs(key: str) -> bool:
        return rd.get(key) != bd.get(key) and (rd.get(key) is not None or bd.get(key) is not None)

    def named(d: dict[str, Any], key: str) -> str:
        """The device by `key`, else by name or kind (a CPU document has no spec id): 'h200-sxm', 'cpu'."""
        return str(d.get(key) or d.get("name") or d.get("kind") or "unknown")

    out = []
    if differs("spec_id"):  # the same phrase as a record's GPU difference, so that it is said once
        out.append(f"GPU differs (baseline {named(bd, 'spec_id')}, results {named(rd, 'spec_id')})")
    elif differs("name"):
        out.append(f"device differs (baseline {named(bd, 'name')}, results {named(rd, 'name')})")
    if differs("driver_version"):
        out.append(f"driver differs (baseline {bd.get('driver_version') or 'none'}, "
                   f"results {rd.get('driver_version') or 'none'})")
    return out


def _spec_peaks(rec: Record) -> tuple[float | None, float | None]:
    """The spec's peaks for this record, before any re-quoting at the observed SM clock."""
    flops = rec.peak_flops_per_s_datasheet if rec.peak_flops_per_s_datasheet is not None else rec.peak_flops_per_s
    return flops, rec.peak_bytes_per_s


def record_differences(cur: Record, base: Record) -> list[str]:
    """What makes two records' times incomparable: another GPU, another roof, an edited spec peak."""
    out = []
    if cur.gpu != base.gpu:
        out.append(f"GPU differs (baseline {base.gpu}, results {cur.gpu})")
        return out  # other peaks follow from another GPU
    rs, bs = cur.roof_source or "datasheet", base.roof_source or "datasheet"
    if rs != bs:
        out.append(f"roof differs (baseline {bs}, results {rs})")
    elif rs == "datasheet":
        for what, c, b in zip(("peak FLOP/s", "peak bytes/s"), _spec_peaks(cur), _spec_peaks(base), strict=True):
            if c is not None and b is not None and not math.isclose(c, b, rel_tol=PEAK_RTOL):
                out.append(f"spec {what} differs (baseline {b:.4g}, results {c:.4g})")
    return out


def _runs(rec: Record, metric: str) -> list[list[float]] | None:
    """Raw samples run by run (one run unless the document holds several) in the metric's unit; None when the
    record was not timed or has no roofline fraction."""
    if metric == "energy":
        samples = (rec.energy or {}).get("samples_j")
        return [[float(x) for x in samples]] if samples else None
    runs = run_samples(rec)
    if runs is None or metric == "time":
        return runs
    roof = rec.roofline_time_s
    if not roof:
        return None
    return [[roof / t for t in run] for run in runs]  # fraction of the roofline per sample, as add_time computes it


def _samples(rec: Record, metric: str) -> list[float] | None:
    """All the record's samples (every run's) in the metric's unit."""
    runs = _runs(rec, metric)
    return None if runs is None else [x for run in runs for x in run]


def _rules_for(cur: Record | None, base: Record | None, default: FailOn) -> FailOn:
    """The rules of a record: the baseline record's own `threshold` (its suite entry's, stored by `baseline
    update`), else the default (`--fail-on`). The results' threshold is never read: the document under judgement
    does not choose its rule (one that does not parse is refused all the same)."""
    if cur is not None:
        record_rules(cur)
    own = record_rules(base) if base is not None else None
    return own if own is not None else default


def _identity(rec: Record, key: Key, metric: str, rules: FailOn) -> dict[str, Any]:
    out = {"op": str(rec.op), "variant": rec.variant, "dtype": str(rec.dtype), "params": dict(rec.params or {}),
           "case": key[4], "metric": metric, "threshold": str(rules)}
    if rec.count is not None:
        out.update(module=rec.module or "", region=rec.region)
    return out


def _judge_record(cur: Record, base: Record, key: Key, rules: FailOn, alpha: float, metric: str,
                  across: list[str]) -> Row:
    """A record judged by its time rules (samples) and its counter rules (one value per side): the most severe
    verdict stands."""
    timed = _judge_timed(cur, base, key, rules.timing, alpha, metric, across) if rules.timing.rules else None
    if not rules.counters.rules:
        assert timed is not None
        return timed
    counted = judge_counters(cur, base, _identity(cur, key, metric, rules.counters), rules.counters)
    if timed is None:
        return counted
    if counted.verdict == NOT_COMPARABLE or SEVERITY.get(counted.verdict, 0) <= SEVERITY.get(timed.verdict, 0):
        return replace(timed, reason=f"{timed.reason}; {counted.reason}")
    # the counter verdict stands; the row keeps the time's figures too (medians, samples, runs, p-value)
    return replace(timed, verdict=counted.verdict, statistic=counted.statistic, threshold=counted.threshold,
                   baseline_value=counted.baseline_value, current_value=counted.current_value,
                   change=counted.change, reason=f"{counted.reason}; {timed.reason}")


def _judge_timed(cur: Record, base: Record, key: Key, rules: FailOn, alpha: float, metric: str,
                 across: list[str]) -> Row:
    common = _identity(cur, key, metric, rules)
    cs, bs = _runs(cur, metric), _runs(base, metric)
    if cs is None or bs is None:  # (neither side timed: judge's not_comparable)
        rec, side = (cur, "results") if cs is None else (base, "baseline")
        if not cur.timed and not base.timed:  # an analytic entry of the suite: judge leaves it out of the share
            return Row(**common, verdict=NOT_COMPARABLE, reason="neither side's record was timed")
        if not rec.timed:  # the other side was: the record is there, its measurement is not (as if it crashed)
            return Row(**common, verdict=UNJUDGED, reason=f"the {side} record was not timed, the other side's "
                       "was: nothing to judge it on")
        why = "has no energy samples (measure it with --energy)" if metric == "energy" else "has no roofline time"
        return Row(**common, verdict=NOT_COMPARABLE, reason=f"the {side} record {why}")
    n_base, n_cur = sum(map(len, bs)), sum(map(len, cs))
    if cur.count is None and base.count is None and min(n_base, n_cur) < MIN_SAMPLES:
        return _unjudged(common, cs, bs, rules, metric)
    # Both sides' A/A evidence: each side's runs differ only by noise, so their spreads pool (a t-test's
    # pooled variance); a baseline's stored figure may also hold history beyond its own runs, the results'
    # noise is what its runs show (a figure the results store is not taken: `ci.runs.check_noise`).
    # run noise is of time; energy's is the measured between-window noise (ENERGY_WINDOW_NOISE)
    noise = pool_noise([noise_of(base), own_noise(cur)]) if metric != "energy" else ENERGY_WINDOW_NOISE
    return _judge_samples(common, cs, bs, rules, alpha, metric, across, noise=noise)


def _unjudged(common: dict[str, Any], cs_runs: list[list[float]], bs_runs: list[list[float]], rules: FailOn,
              metric: str) -> Row:
    """A suite's record with fewer than MIN_SAMPLES samples on a side: no test can judge it, whatever its change
    (shown, with the first rule's statistic)."""
    cs, bs = [x for run in cs_runs for x in run], [x for run in bs_runs for x in run]
    stat = rules.rules[0].statistic
    b, c = (_center(runs, stat, metric == "fraction") for runs in (bs_runs, cs_runs))
    return Row(**common, verdict=UNJUDGED, statistic=stat, baseline_median=median(bs), current_median=median(cs),
               baseline_value=b, current_value=c, change=(c - b) / b if b else None, n_baseline=len(bs),
               n_current=len(cs), runs_baseline=len(bs_runs), runs_current=len(cs_runs),
               reason=f"too few samples to judge: {len(bs)} baseline, {len(cs)} results (a check needs "
                      f"{MIN_SAMPLES} a side); time it with more repetitions (--allow-unjudged reports it without "
                      "failing)")


def _center(runs: list[list[float]], name: str, higher_is_better: bool) -> float:
    """A side's value of a statistic: the mean over its runs of each run's statistic (one run: the statistic)."""
    values = [statistic(run, name, higher_is_better) for run in runs]
    return values[0] if len(values) == 1 else sum(values) / len(values)


def _judge_samples(common: dict[str, Any], cs_runs: list[list[float]], bs_runs: list[list[float]], rules: FailOn,
                   alpha: float, metric: str, across: list[str], single: tuple[str, str] | None = None,
                   noise: Noise | None = None) -> Row:
    """Judge current runs `cs_runs` against baseline runs `bs_runs` (each a list of samples) by each rule; the
    most severe verdict stands. `noise`: the record's between-run noise (None: unknown). `single` (a region
    that ran once): the name of the one value compared, and why it cannot be tested."""
    higher_is_better = metric == "fraction"
    cs, bs = [x for run in cs_runs for x in run], [x for run in bs_runs for x in run]
    kc, kb = len(cs_runs), len(bs_runs)
    test = mann_whitney_u(cs, bs) if min(len(cs), len(bs)) >= MIN_SAMPLES else None
    # The test must point the same way as the change: U of the current samples above n1 n2 / 2 means "larger".
    larger = test is not None and test.u > len(cs) * len(bs) / 2
    significant = test is not None and test.p_value < alpha
    factor = noise_factor(noise, kb, kc, alpha)
    stat_word = {"fraction": "roofline fraction ", "energy": "J/call "}.get(metric, "")
    runs_word = f"{kb} vs {kc} runs"
    best: tuple[int, Row] | None = None
    for rule in rules.rules:
        b = _center(bs_runs, rule.statistic, higher_is_better)
        c = _center(cs_runs, rule.statistic, higher_is_better)
        change = (c - b) / b if b else math.inf
        worse_by = -change if higher_is_better else change  # > 0: worse
        sd = noise.relative_sd[rule.statistic] if noise is not None and factor is not None else None
        floor = factor * sd if factor is not None and sd is not None else None
        if metric == "fraction":
            direction = "higher" if change > 0 else "lower"
        elif metric == "energy":
            direction = "more energy" if change > 0 else "less energy"
        else:
            direction = "slower" if change > 0 else "faster"
        what = f"{stat_word}{single[0] if single else rule.statistic}"
        moved = f"{what} {percent(abs(change))} {direction}"
        if abs(worse_by) <= rule.threshold:
            verdict, reason = SAME, f"{what} {change * 100:+.1f}%, within {percent(rule.threshold)}"
        else:
            gets_worse = worse_by > 0
            agrees = larger == (gets_worse != higher_is_better)
            if test is None:
                verdict = WORSE_NOT_SIGNIFICANT if gets_worse else BETTER_NOT_SIGNIFICANT
                why = single[1] if single else (f"too few samples to test ({len(bs)} baseline, {len(cs)} current; "
                                                f"need {MIN_SAMPLES} per side): rerun with more repetitions")
                reason = f"{moved}, past {percent(rule.threshold)}, but {why}"
            elif not (significant and agrees):
                verdict = WORSE_NOT_SIGNIFICANT if gets_worse else BETTER_NOT_SIGNIFICANT
                reason = (f"{moved}, past {percent(rule.threshold)}, but not significant (p={test.p_value:.2g} "
                          f">= {alpha:g}): within the noise, rerun to confirm")
            elif floor is not None and sd is not None and noise is not None and abs(worse_by) <= floor:
                verdict = WORSE_NOT_SIGNIFICANT if gets_worse else BETTER_NOT_SIGNIFICANT
                reason = (f"{moved}, past {percent(rule.threshold)}, but within the between-run noise: runs of "
                          f"unchanged code reach {percent(floor)} here ({rule.statistic} sd {percent(sd)} between "
                          f"runs, {noise.dof} dof; {runs_word}): more runs narrow it (run --repeat)")
            else:
                verdict = WORSE if gets_worse else BETTER
                between = (f"past the between-run noise {percent(floor)}, {runs_word}" if floor is not None
                           else "between-run noise unknown: one run per side")
                reason = f"{moved} (p={test.p_value:.2g} < {alpha:g}, {len(bs)} vs {len(cs)} samples; {between})"
        row = Row(**{**common, "threshold": str(rule)}, verdict=verdict, reason=reason, statistic=rule.statistic,
                  baseline_median=median(bs), current_median=median(cs), baseline_value=b, current_value=c,
                  change=change, p_value=test.p_value if test else None, p_method=test.method if test else None,
                  u_statistic=test.u if test else None, n_baseline=len(bs), n_current=len(cs), runs_baseline=kb,
                  runs_current=kc, run_noise=sd, noise_dof=noise.dof if sd is not None and noise else 0,
                  noise_floor=floor)
        if best is None or SEVERITY[verdict] > best[0]:
            best = (SEVERITY[verdict], row)
    assert best is not None
    row = best[1]
    if across:
        row = replace(row, reason=f"{row.reason}; across: {'; '.join(across)}")
    return row


# ---------------------------------------------------------------- whole regions of a profile
def _region_row(cur: RegionRun, base: RegionRun, rules: FailOn, alpha: float, metric: str,
                across: list[str]) -> Row:
    """A whole region's row: per-entry wall times when both sides entered it at least twice, else its
    kernel time per entry as a single-sample comparison (no p-value: it can warn, never fail)."""
    common = _region_identity(cur.name, metric, rules)
    walls = cur.entry_wall_s and base.entry_wall_s and min(len(cur.entry_wall_s), len(base.entry_wall_s)) >= 2
    if walls:
        assert cur.entry_wall_s is not None and base.entry_wall_s is not None
        cs, bs = list(cur.entry_wall_s), list(base.entry_wall_s)
        common["basis"], single = "wall time per entry", None
    else:
        common["basis"] = "kernel time" if cur.entered == base.entered == 1 else "kernel time per entry"
        if cur.time_s is None or base.time_s is None:
            side = "results" if cur.time_s is None else "baseline"
            return Row(**common, verdict=NOT_COMPARABLE, reason=f"the {side} region has no kernel time")
        cs, bs = [cur.time_s / cur.entered], [base.time_s / base.entered]
        why = [f"the {side} {'ran it once' if run.entered < 2 else 'has no per-entry wall times'}"
               for side, run in (("baseline", base), ("results", cur)) if run.entered < 2 or not run.entry_wall_s]
        single = (common["basis"], f"one sample per side ({' and '.join(why)}) has no significance test: run the "
                  f"step in `roofline.region` at least {MIN_SAMPLES} times to gate it")
    if metric == "fraction":
        if not cur.roofline_time_s or not base.roofline_time_s:
            return Row(**common, verdict=NOT_COMPARABLE, reason="the region has no roofline time (no op with a "
                       "FLOP formula)")
        cs = [cur.roofline_time_s / t for t in cs]
        bs = [base.roofline_time_s / t for t in bs]
    return _judge_samples(common, [cs], [bs], rules, alpha, metric, across, single)


def _region_identity(name: str, metric: str, rules: FailOn) -> dict[str, Any]:
    return {"op": REGION, "variant": None, "dtype": "", "params": {}, "metric": metric, "threshold": str(rules),
            "kind": REGION, "region": name}


def _region_rows(cur_regions: dict[str, RegionRun], base_regions: dict[str, RegionRun], rules: FailOn,
                 alpha: float, metric: str, diffs: list[str]) -> list[Row]:
    """A row per region of either document (profiles only), the results' first."""
    rows: list[Row] = []
    for name, cur in cur_regions.items():
        common = _region_identity(name, metric, rules)
        base = base_regions.get(name)
        if base is None:
            rows.append(Row(**common, verdict=NEW, reason="a region not in the baseline"))
        elif diffs and metric == "time":
            rows.append(Row(**common, verdict=NOT_COMPARABLE, reason="; ".join(diffs)))
        else:
            rows.append(_region_row(cur, base, rules, alpha, metric, diffs if metric == "fraction" else []))
    for name in (n for n in base_regions if n not in cur_regions):
        rows.append(Row(**_region_identity(name, metric, rules), verdict=MISSING,
                        reason="a region of the baseline the results do not have (renamed, or not entered)"))
    return rows


def judge(results: Document, baseline: Document, rules: FailOn | str = DEFAULT_FAIL_ON, alpha: float = ALPHA,
          metric: str = "time", *, allow_missing: bool = False, busy: str = BUSY_FAIL,
          allow_unjudged: bool = False) -> Report:
    """Judge every record of `results` against `baseline` (both schema-v1 documents, e.g. from load_for_check).

    metric="time": raw time samples, lower is better; records from another GPU, driver or spec peak are
    not_comparable. metric="fraction": each sample's fraction of its own roofline, higher is better; the
    user asked for it to compare across devices, so device differences are noted, not refused.
    A baseline record missing from the results fails the check unless `allow_missing`; a worse record timed on
    a busy machine is worse_busy_machine, failing unless busy="ok"; a suite's record with fewer than
    MIN_SAMPLES samples on a side (or timed on one side only) is unjudged, failing unless `allow_unjudged`.
    Rules: `rules`, or a baseline record's own threshold; never the results'. When fewer than MIN_COMPARED_SHARE
    of the records both documents hold were compared, the report is refused (`Report.refused`, exit 2).
    Pure: neither document is modified. Raises UsageError for bad arguments, a record whose numbers are no
    measurement (`ci.inputs.measurement_problem`), a side with no records or files sharing no record.
    """
    fail_on = judge_args(results, baseline, rules, allow_missing=allow_missing, allow_unjudged=allow_unjudged)
    if metric not in METRICS:
        raise UsageError(f"--metric must be one of {', '.join(METRICS)}, got {metric!r}")
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise UsageError(f"alpha must be between 0 and 1, got {alpha!r}")
    if busy not in BUSY_CHOICES:
        raise UsageError(f"--busy must be one of {', '.join(BUSY_CHOICES)}, got {busy!r}")
    for doc, where in ((results, "results"), (baseline, "baseline")):
        require_timed(doc, where)
        for i, rec in enumerate(doc.records):  # what the reader refuses, for documents built in memory
            if (problem := measurement_problem(rec)) is not None:
                raise UsageError(f"{where}: record {i} ({rec.op}): {problem}")
    if metric == "energy":  # every row not comparable would pass: a gate never passes on nothing
        for doc, where in ((results, "results"), (baseline, "baseline")):
            if not any((r.energy or {}).get("samples_j") for r in doc.records):
                raise UsageError(f"{where}: no record has energy samples (measure them with --energy): nothing "
                                 "to check")
    require_counters(fail_on, results, baseline)
    cur_idx, base_idx = records_by_key(results, "results"), records_by_key(baseline, "baseline")
    cur_regions, base_regions = profile_regions(results), profile_regions(baseline)
    if cur_idx and base_idx and not cur_idx.keys() & base_idx.keys() and not cur_regions.keys() & base_regions.keys():
        raise UsageError("the results and the baseline share no record (same operator, variant, shape and dtype): "
                         "is this the baseline of this suite?")
    dev_diffs = device_differences(results, baseline)
    notes: list[str] = []
    rd, bd = results.device or {}, baseline.device or {}
    if metric == "fraction":
        notes.append("comparing the fraction of each device's roofline (higher is better), not time")
    if metric == "energy":
        notes.append("comparing joules per call of the --energy windows (lower is better), not time; their "
                     f"between-window noise taken as {ENERGY_WINDOW_CV:.1%} (CV measured on the H200)")
    if dev_diffs:
        if metric == "time":
            notes.append(f"{'; '.join(dev_diffs)}: times are not comparable; --metric fraction compares "
                         "fractions of each device's roofline instead")
        else:
            notes.append(f"across devices: {'; '.join(dev_diffs)}")
    notes += spread_notes(fail_on)
    for version, what in (("torch_version", "torch"), ("cuda_version", "CUDA")):
        if rd.get(version) and bd.get(version) and rd[version] != bd[version]:
            notes.append(f"{what} differs (baseline {bd[version]}, results {rd[version]}): a change may come from it")

    rows = (_region_rows(cur_regions, base_regions, fail_on.timing, float(alpha), metric, dev_diffs)
            if fail_on.timing.rules and metric != "energy" else [])
    analytic: list[Row] = []  # rows of entries timed on neither side: outside the share a check must compare
    ignored: dict[str, int] = {}  # the results' own thresholds, not the baseline's: not read (_rules_for)
    for key, cur in cur_idx.items():
        base = base_idx.get(key)
        rec_rules = _rules_for(cur, base, fail_on)
        if cur.threshold and (base is None or cur.threshold != base.threshold):
            ignored[str(cur.threshold)] = ignored.get(str(cur.threshold), 0) + 1
        if base is None:
            rows.append(Row(**_identity(cur, key, metric, rec_rules), verdict=NEW,
                            current_median=_median_or_none(_samples(cur, metric)),
                            n_current=len(_samples(cur, metric) or []),
                            reason="not in the baseline: `roofline baseline update` adds it"))
            continue
        diffs = dev_diffs + [d for d in record_differences(cur, base) if d not in dev_diffs]
        if diffs and metric in ("time", "energy"):
            rows.append(Row(**_identity(cur, key, metric, rec_rules), verdict=NOT_COMPARABLE,
                            baseline_median=_median_or_none(_samples(base, metric)),
                            current_median=_median_or_none(_samples(cur, metric)),
                            reason="; ".join(diffs) + " (--metric fraction compares across devices)"))
            continue
        row = _judge_record(cur, base, key, rec_rules, alpha, metric, diffs if metric == "fraction" else [])
        rows.append(_busy_row(row, cur, base))
        if not cur.timed and not base.timed and row.verdict == NOT_COMPARABLE:
            analytic.append(row)
    for key, base in base_idx.items():
        if key not in cur_idx:
            rows.append(Row(**_identity(base, key, metric, _rules_for(None, base, fail_on)), verdict=MISSING,
                            baseline_median=_median_or_none(_samples(base, metric)),
                            n_baseline=len(_samples(base, metric) or []),
                            reason="in the baseline, not in the results: dropped from the suite, or it failed to run"))
    if ignored:
        notes.append(f"the results' own thresholds ({', '.join(f'{t} on {n}' for t, n in ignored.items())} "
                     "record(s)) are not the baseline's: not read; thresholds come from --fail-on and the baseline "
                     "(`roofline baseline update` stores a suite's)")
    notes += _busy_notes(cur_idx.values(), base_idx.values(), rows, busy)
    notes += _noise_notes(rows)
    refused, compared_note = _compared(rows, analytic)
    notes += [compared_note] if compared_note else []
    return Report(tuple(rows), fail_on, float(alpha), metric, tuple(notes), allow_missing, busy, allow_unjudged,
                  refused)


def _compared(rows: list[Row], analytic: list[Row]) -> tuple[str, str]:
    """Why the check is refused (fewer than MIN_COMPARED_SHARE of the rows both documents hold compared: not
    comparable or unjudged), or ""; and a note on the rows left uncompared when it is not."""
    skip = {id(r) for r in analytic}
    held = [r for r in rows if r.verdict not in (NEW, MISSING) and id(r) not in skip]
    left = [r for r in held if r.verdict in (NOT_COMPARABLE, UNJUDGED)]
    compared = len(held) - len(left)
    if not left:
        return "", ""
    why = []
    for verdict in (NOT_COMPARABLE, UNJUDGED):
        # an unjudged row's reason before its figures: 'too few samples to judge', 'the results record was not
        # timed, the other side's was'
        reasons = list(dict.fromkeys(r.reason.split(":")[0] if verdict == UNJUDGED else r.reason
                                     for r in left if r.verdict == verdict))
        if reasons:
            more = f"; {len(reasons) - 2} other reasons" if len(reasons) > 2 else ""
            why.append(f"{sum(r.verdict == verdict for r in left)} {verdict}: {'; '.join(reasons[:2])}{more}")
    said = f"{compared} of {len(held)} records the results share with the baseline were compared ({'; '.join(why)})"
    if compared and compared >= MIN_COMPARED_SHARE * len(held):
        return "", said
    return (f"{said}: a check must compare at least {MIN_COMPARED_SHARE:.0%} of them, or its pass would speak for "
            "what it did not compare"), ""


def busy_reason(rec: Record) -> str | None:
    """What made the machine busy while the record was timed ('other processes used 46% of 2 CPUs'), from its
    busy-machine note; None when it was timed on a quiet machine (or the note is not there)."""
    for note in rec.notes:
        if note.startswith(BUSY_NOTE):
            inner = note[len(BUSY_NOTE):].strip()
            return inner[1:inner.rfind(")")] if inner.startswith("(") and ")" in inner else "busy"
    return None


def _busy_row(row: Row, cur: Record, base: Record) -> Row:
    """The row with the sides timed on a busy machine; a worse time becomes worse_busy_machine, its reason
    naming the side and what kept the machine busy (a counter rule's worse verdict counts bytes, not time)."""
    why = [(side, r) for side, rec in (("baseline", base), ("results", cur)) if (r := busy_reason(rec))]
    if not why:
        return row
    row = replace(row, busy=tuple(side for side, _ in why))
    if row.verdict != WORSE or row.statistic in COUNTERS:
        return row
    said = "; ".join(f"the {side} timed on a busy machine ({r})" for side, r in why)
    return replace(row, verdict=WORSE_BUSY, reason=f"{row.reason}; {said}: the slowdown may be the machine's, "
                   "rerun on a quiet machine to tell")


def _busy_notes(cur: Any, base: Any, rows: list[Row], busy: str) -> list[str]:
    """The report's note on busy machines: how many records of each side were timed on one, and what a worse
    verdict on them does."""
    counts = [(side, sum(busy_reason(r) is not None for r in recs), len(recs))
              for side, recs in (("results", list(cur)), ("baseline", list(base)))]
    if not any(n for _, n, _ in counts):
        return []
    flagged = sum(r.verdict == WORSE_BUSY for r in rows)
    does = ("fail the check (--busy ok reports them only)" if busy == BUSY_FAIL
            else "are reported, not failing (--busy ok)")
    return [f"busy machine: {' and '.join(f'{n} of {total} {side} records' for side, n, total in counts if n)} "
            f"were timed on a busy machine (their notes say so); {flagged} worse verdict(s) among them are "
            f"worse_busy_machine and {does}: rerun on a quiet machine to tell a regression from the load"]


def _span(values: list[int]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def _noise_notes(rows: list[Row]) -> list[str]:
    """What the report says about between-run noise: for how many compared records it was known (and from how
    many runs), and for how many it was not (their verdicts then rest on the threshold and the samples)."""
    # A profile is one program run by nature (its rows say so when they fail): the notes are about suites.
    compared = [r for r in rows if not r.profile and r.runs_baseline and r.runs_current and r.verdict != UNJUDGED]
    known = [r for r in compared if r.noise_floor is not None]
    unknown = len(compared) - len(known)
    out = []
    if known:
        out.append(f"between-run noise known for {len(known)} of {len(compared)} compared records (baseline "
                   f"{_span([r.runs_baseline for r in known])} runs, results {_span([r.runs_current for r in known])}"
                   "): a change fails only past the threshold, past what runs of unchanged code reach (a t-test on "
                   "the runs) and significant on the samples")
    if unknown:
        out.append(f"between-run noise unknown for {unknown} of {len(compared)} compared records (one run on each "
                   "side): their verdicts rest on the threshold and the samples alone, and a shift between two runs "
                   "of unchanged code can fail them; a baseline of several runs (`roofline run SUITE --repeat 5`, or "
                   "`roofline baseline update A.json B.json ...`) gives each record its noise")
    return out


def _median_or_none(samples: list[float] | None) -> float | None:
    return median(samples) if samples else None


def run_check(results_path: str | os.PathLike[str], baseline_path: str | os.PathLike[str],
              fail_on: FailOn | str = DEFAULT_FAIL_ON, metric: str = "time", alpha: float = ALPHA, *,
              allow_missing: bool = False, busy: str = BUSY_FAIL, allow_unjudged: bool = False) -> Report:
    """`roofline check` in one call: parse the rules first (cheap usage errors), load both files, judge. A
    refused report (too little compared) is returned, its `exit_code` 2; unusable files raise UsageError."""
    rules = rules_arg(fail_on, "fail_on")
    for what, path in (("results_path", results_path), ("baseline_path", baseline_path)):
        validate.path_arg("run_check", what, path)
    return judge(load_for_check(results_path, as_results=True), load_for_check(baseline_path), rules, alpha, metric,
                 allow_missing=allow_missing, busy=busy, allow_unjudged=allow_unjudged)
