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

Verdicts: better, better_not_significant, same, worse_not_significant, worse, worse_busy_machine, not_comparable,
missing, new (the
names, `Row` and `Report` are in `ci.verdicts`; counter rules, one value a side, are judged by `ci.counters`).

Whole-model profiles (`roofline profile` documents): records match by op, module, region and input shapes
(`Record.key()`), each judged on its per-call samples (an op called fewer than MIN_SAMPLES times per side
cannot be tested, as any record). Each region adds a row of kind "region" judged the same way on the
region's per-entry wall times (a script that runs its region N times gives N samples); a region that ran
once on either side is compared on its kernel time per entry against the threshold, a single-sample
comparison with no p-value, so it can pass or warn but never fail. A profile that marks no region is one
region, "(whole run)", compared on its total kernel time.
Bad input (unreadable or corrupted files, a newer schema, a document with no records, files that share no record)
raises UsageError (exit 2). A record of the baseline missing from the results fails (it may be the one that
crashed) unless the user allows it (`allow_missing`, `--allow-missing`); a new record never fails.
Judging writes nothing: the report's formats are in `report.check`, and only `ci.baseline.update_baseline` (the
user's `roofline baseline update`) writes a baseline.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from typing import Any

from roofline.ci.counters import judge_counters, require_counters, spread_notes
from roofline.ci.regions import RegionRun, profile_regions
from roofline.ci.rules import COUNTERS, DEFAULT_FAIL_ON, FailOn, parse_fail_on
from roofline.ci.rules import STATISTICS as STATISTICS  # re-exported: callers take the rules from ci.judge
from roofline.ci.rules import Rule as Rule
from roofline.ci.runs import Noise, check_runs, noise_factor, noise_of, pool_noise, run_samples
from roofline.ci.verdicts import (
    BETTER,
    BETTER_NOT_SIGNIFICANT,
    BUSY_CHOICES,
    BUSY_FAIL,
    MISSING,
    NEW,
    NOT_COMPARABLE,
    REGION,
    SAME,
    SEVERITY,
    WORSE,
    WORSE_BUSY,
    WORSE_NOT_SIGNIFICANT,
    Report,
    Row,
    where_text,
)
from roofline.ci.verdicts import VERDICTS as VERDICTS  # re-exported: callers take the verdicts from ci.judge
from roofline.core.document import Document, read_document
from roofline.core.errors import RooflineError, UsageError
from roofline.core.format import percent
from roofline.core.record import BUSY_NOTE, Key, Record
from roofline.core.stats import mann_whitney_u, median, statistic

# Significance level of the two-sided Mann–Whitney U test. A suite holds tens of records and CI runs on
# every PR: at 0.01 a noise-only record is flagged as significant about once in a hundred checks, and the
# threshold must be crossed as well, so a false failure needs two unlikely things at once.
ALPHA = 0.01
# Below this many samples per side the test is not run: with 4 against 4 the smallest two-sided exact
# p-value is 2/C(8,4) = 0.029 > ALPHA, so significance could never be shown; 5 against 5 gives 2/252 = 0.0079.
MIN_SAMPLES = 5
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



# ---------------------------------------------------------------- loading
def load_for_check(path: str | os.PathLike[str]) -> Document:
    """Read a results document or baseline for `check`; anything unusable is a one-line UsageError (exit 2)."""
    try:
        doc = read_document(path)
    except UsageError:
        raise
    except RooflineError as exc:
        raise UsageError(str(exc)) from None
    _require_timed(doc, str(path))
    for i, rec in enumerate(doc.records):
        problem = check_runs(rec)
        if problem:
            raise UsageError(f"{path}: record {i} ({rec.op}): {problem}")
    records_by_key(doc, str(path))
    return doc


def _require_timed(doc: Document, where: str) -> None:
    """A side of the check must hold timed records: a document with none (a run that crashed before its first
    record, a truncated write) would otherwise pass the gate, every record of the other side new or missing."""
    if not doc.records:
        raise UsageError(f"{where}: a results document with no records (did the run fail?): a check and a "
                         "baseline need timed records")
    if not doc.timed:  # `baseline update` reads its inputs here too: the words fit both commands
        raise UsageError(f"{where}: no timed record (analytic only: was it run with --no-time?): a check and a "
                         "baseline need timed records")


def record_name(rec: Record, case: str = "") -> str:
    """'gemm fp16 m=4096 n=4096 k=4096', with the case that tells two such records apart: ' [tensor_cores=False]';
    a profile record's with where it ran: ' in step: fc1'."""
    where = f" in {where_text(rec.module, rec.region)}" if rec.count is not None else ""
    return f"{rec.label} {rec.shape}{where}" + (f" [{case}]" if case else "")


def _profile_cases(recs: list[Record]) -> list[str]:
    """Cases telling apart profile records that share a key (one op, module and inputs; e.g. two reductions
    over other dims): their output shapes, then input dtypes, then their order in the program."""
    cases = [f"out={r.output_shapes}" for r in recs]
    cases = [c if cases.count(c) == 1 else f"{c} in={r.input_dtypes}" for c, r in zip(cases, recs, strict=True)]
    seen: dict[str, int] = {}
    out = []
    for c in cases:
        seen[c] = seen.get(c, 0) + 1
        out.append(c if cases.count(c) == 1 else f"{c} #{seen[c]}")
    return out


def records_by_key(doc: Document, where: str) -> dict[Key, Record]:
    """Records by `Record.key()`. Records sharing a key are told apart by their tensor_cores flag (profile
    records: by `_profile_cases`), else UsageError."""
    groups: dict[Key, list[Record]] = {}
    for rec in doc.records:
        groups.setdefault(rec.key(), []).append(rec)
    out: dict[Key, Record] = {}
    for key, recs in groups.items():
        if len(recs) > 1 and all(r.count is not None for r in recs):
            for rec, case in zip(recs, _profile_cases(recs), strict=True):
                out[rec.key(case)] = rec
            continue
        flags = [r.tensor_cores for r in recs]
        if len(recs) > 1 and len(set(flags)) < len(flags):
            raise UsageError(f"{where}: two records for {record_name(recs[0])}: records must be unique by operator, "
                             "variant, shape and dtype (and tensor-core use)")
        for rec in recs:
            out[key if len(recs) == 1 else rec.key(f"tensor_cores={rec.tensor_cores}")] = rec
    return out


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
    """A record's own `threshold` (from its suite entry; the results' first) overrides the default rules."""
    for rec in (cur, base):
        if rec is not None and rec.threshold:
            try:
                return parse_fail_on(str(rec.threshold))
            except UsageError as exc:
                raise UsageError(f"{record_name(rec)}: bad threshold: {exc}") from None
    return default


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
    if cs is None or bs is None:
        rec, side = (cur, "results") if cs is None else (base, "baseline")
        why = "was not timed" if rec.time_s is None else "has no roofline time"
        if metric == "energy":
            why = "has no energy samples (measure it with --energy)"
        return Row(**common, verdict=NOT_COMPARABLE, reason=f"the {side} record {why}")
    # Both sides' A/A evidence: each side's runs differ only by noise, so their spreads pool (a t-test's
    # pooled variance); a baseline's stored figure may also hold history beyond its own runs.
    # run noise is of time; energy's is the measured between-window noise (ENERGY_WINDOW_NOISE)
    noise = pool_noise([noise_of(base), noise_of(cur)]) if metric != "energy" else ENERGY_WINDOW_NOISE
    return _judge_samples(common, cs, bs, rules, alpha, metric, across, noise=noise)


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
          metric: str = "time", *, allow_missing: bool = False, busy: str = BUSY_FAIL) -> Report:
    """Judge every record of `results` against `baseline` (both schema-v1 documents, e.g. from load_for_check).

    metric="time": raw time samples, lower is better; records from another GPU, driver or spec peak are
    not_comparable. metric="fraction": each sample's fraction of its own roofline, higher is better; the
    user asked for it to compare across devices, so device differences are noted, not refused.
    A baseline record missing from the results fails the check unless `allow_missing`; a worse record timed on
    a busy machine is worse_busy_machine, failing unless busy="ok".
    Pure: neither document is modified. Raises UsageError for bad arguments, a side with no records or files
    sharing no record.
    """
    fail_on = parse_fail_on(rules) if isinstance(rules, str) else rules
    if metric not in METRICS:
        raise UsageError(f"--metric must be one of {', '.join(METRICS)}, got {metric!r}")
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise UsageError(f"alpha must be between 0 and 1, got {alpha!r}")
    if busy not in BUSY_CHOICES:
        raise UsageError(f"--busy must be one of {', '.join(BUSY_CHOICES)}, got {busy!r}")
    _require_timed(results, "results")
    _require_timed(baseline, "baseline")
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
    for key, cur in cur_idx.items():
        base = base_idx.get(key)
        rec_rules = _rules_for(cur, base, fail_on)
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
    for key, base in base_idx.items():
        if key not in cur_idx:
            rows.append(Row(**_identity(base, key, metric, _rules_for(None, base, fail_on)), verdict=MISSING,
                            baseline_median=_median_or_none(_samples(base, metric)),
                            n_baseline=len(_samples(base, metric) or []),
                            reason="in the baseline, not in the results: dropped from the suite, or it failed to run"))
    notes += _busy_notes(cur_idx.values(), base_idx.values(), rows, busy)
    notes += _noise_notes(rows)
    return Report(tuple(rows), fail_on, float(alpha), metric, tuple(notes), allow_missing, busy)


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
    compared = [r for r in rows if not r.profile and r.runs_baseline and r.runs_current]
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
              allow_missing: bool = False, busy: str = BUSY_FAIL) -> Report:
    """`roofline check` in one call: parse the rules first (cheap usage errors), load both files, judge."""
    rules = parse_fail_on(fail_on) if isinstance(fail_on, str) else fail_on
    return judge(load_for_check(results_path), load_for_check(baseline_path), rules, alpha, metric,
                 allow_missing=allow_missing, busy=busy)
