"""Compare a results document against a baseline for CI: a threshold *and* a significance test, per record.

A record regresses (`worse`, exit status 1) only when the relative change of the chosen statistic is past its
threshold AND the raw samples differ significantly (two-sided Mann–Whitney U at ALPHA), as asv decides.
A change past the threshold that the samples cannot confirm is `worse_not_significant`: reported, never failing.

Verdicts: better, better_not_significant, same, worse_not_significant, worse, not_comparable, missing, new.
Bad input (unreadable or corrupted files, a newer schema, files that share no record) raises UsageError (exit 2).
Nothing here writes the baseline except `update_baseline`, and only when the user runs that command.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline.core.document import read_document
from roofline.core.errors import RooflineError, UsageError
from roofline.core.stats import median, quantile

if TYPE_CHECKING:
    from rich.table import Table

# Significance level of the two-sided Mann–Whitney U test. A suite holds tens of records and CI runs on
# every PR: at 0.01 a noise-only record is flagged as significant about once in a hundred checks, and the
# threshold must be crossed as well, so a false failure needs two unlikely things at once.
ALPHA = 0.01
# Below this many samples per side the test is not run: with 4 against 4 the smallest two-sided exact
# p-value is 2/C(8,4) = 0.029 > ALPHA, so significance could never be shown; 5 against 5 gives 2/252 = 0.0079.
MIN_SAMPLES = 5
# Exact U distribution (no ties) up to this many samples per side; beyond, the normal approximation with
# continuity correction is accurate to well under ALPHA's resolution, and the exact table costs O(n^3).
EXACT_MAX_N = 50
# Peaks that differ by less than this relative amount are the same spec value (float round trips).
PEAK_RTOL = 1e-6

DEFAULT_FAIL_ON = "median:5%"
STATISTICS = ("median", "mean", "min", "p90")
METRICS = ("time", "fraction")

BETTER = "better"
BETTER_NOT_SIGNIFICANT = "better_not_significant"
SAME = "same"
WORSE_NOT_SIGNIFICANT = "worse_not_significant"
WORSE = "worse"
NOT_COMPARABLE = "not_comparable"
MISSING = "missing"
NEW = "new"
VERDICTS = (WORSE, WORSE_NOT_SIGNIFICANT, NOT_COMPARABLE, MISSING, NEW, BETTER, BETTER_NOT_SIGNIFICANT, SAME)
# When several rules judge one record, the most severe verdict stands.
_SEVERITY = {SAME: 0, BETTER_NOT_SIGNIFICANT: 1, BETTER: 2, WORSE_NOT_SIGNIFICANT: 3, WORSE: 4}


# ---------------------------------------------------------------- threshold grammar
@dataclass(frozen=True)
class Rule:
    """One failure rule: the relative change of `statistic` beyond which a record has changed (0.05 = 5%)."""

    statistic: str
    threshold: float

    def __str__(self) -> str:
        return f"{self.statistic}:{self.threshold * 100:g}%"


@dataclass(frozen=True)
class FailOn:
    """The parsed `--fail-on` value: one or more rules, each statistic at most once."""

    rules: tuple[Rule, ...]

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.rules)


_RULE_RE = re.compile(r"^\s*([a-z0-9]+)\s*:\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(%?)\s*$")


def parse_fail_on(text: str) -> FailOn:
    """Parse `median:5%`, `median:0.05`, `p90:10%,min:3%`; bad grammar raises a one-line UsageError."""
    if not isinstance(text, str) or not text.strip():
        raise UsageError("--fail-on is empty: expected STAT:PCT%, e.g. median:5%")
    rules: list[Rule] = []
    for part in text.split(","):
        m = _RULE_RE.match(part)
        if m is None:
            raise UsageError(f"--fail-on {part.strip()!r}: expected STAT:PCT% or STAT:FRACTION "
                             f"(STAT one of {', '.join(STATISTICS)}), e.g. median:5% or median:0.05")
        stat, number, pct = m.group(1), float(m.group(2)), m.group(3) == "%"
        if stat not in STATISTICS:
            raise UsageError(f"--fail-on {part.strip()!r}: unknown statistic {stat!r} (use {', '.join(STATISTICS)})")
        if not pct and number >= 1:
            raise UsageError(f"--fail-on {part.strip()!r} is ambiguous: write {number:g}% or {number / 100:g}")
        threshold = number / 100 if pct else number
        if not 0 < threshold < 10:
            raise UsageError(f"--fail-on {part.strip()!r}: the threshold must be above 0 and below 1000%")
        if any(r.statistic == stat for r in rules):
            raise UsageError(f"--fail-on {text.strip()!r}: {stat} appears twice")
        rules.append(Rule(stat, threshold))
    return FailOn(tuple(rules))


# ---------------------------------------------------------------- Mann–Whitney U
@dataclass(frozen=True)
class MannWhitney:
    """U is x's statistic: pairs (xi, yj) with xi > yj, ties counting one half. p-value for `alternative`."""

    u: float
    p_value: float
    method: str  # "exact" or "normal"
    n_x: int
    n_y: int


@lru_cache(maxsize=128)
def _u_counts(n1: int, n2: int) -> tuple[int, ...]:
    """How many orderings give U = 0..n1*n2 without ties: the Gaussian binomial [n1+n2 choose n1]_q's coefficients.

    Built as prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i); each partial product is itself a polynomial.
    """
    m, n = sorted((n1, n2))
    poly = [1]
    for i in range(1, m + 1):
        new = [*poly, *([0] * (n + i))]
        for k, c in enumerate(poly):
            new[k + n + i] -= c
        for k in range(i, len(new)):  # divide by (1 - q^i)
            new[k] += new[k - i]
        poly = new[: i * n + 1]
    return tuple(poly)


def _ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Mid-ranks (1-based) of `values`, and the sizes of tie groups larger than one."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    ties: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def mann_whitney_u(x: Sequence[float], y: Sequence[float], alternative: str = "two-sided",
                   method: str = "auto") -> MannWhitney:
    """Mann–Whitney U test of x against y (no scipy). `alternative`: two-sided, greater (x stochastically
    larger) or less. `method`: auto (exact without ties up to EXACT_MAX_N per side, else normal), exact, normal.

    Normal: z = (U - n1 n2 / 2 - 0.5) / sigma with continuity correction and the tie-corrected variance
    sigma^2 = n1 n2 / 12 * ((n + 1) - sum(t^3 - t) / (n (n - 1))), as scipy.stats.mannwhitneyu's asymptotic method.
    """
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("both samples need at least one value")
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"unknown alternative {alternative!r}")
    ranks, ties = _ranks([*x, *y])
    u1 = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    u2 = n1 * n2 - u1
    if method == "auto":
        method = "exact" if not ties and max(n1, n2) <= EXACT_MAX_N else "normal"
    if method == "exact":
        if ties:
            raise ValueError("the exact distribution assumes no ties")
        counts, total = _u_counts(n1, n2), math.comb(n1 + n2, n1)

        def sf(u: float) -> float:  # P(U >= u)
            return sum(counts[math.ceil(u):]) / total

        if alternative == "greater":
            p = sf(u1)
        elif alternative == "less":
            p = sf(u2)
        else:
            p = 2 * sf(max(u1, u2))
    elif method == "normal":
        n = n1 + n2
        tie_term = sum(t**3 - t for t in ties) / (n * (n - 1)) if n > 1 else 0.0
        var = n1 * n2 / 12 * ((n + 1) - tie_term)
        if var <= 0:  # every value equal: no evidence of any difference
            return MannWhitney(u1, 1.0, "normal", n1, n2)
        u = {"greater": u1, "less": u2}.get(alternative, max(u1, u2))
        z = (u - n1 * n2 / 2 - 0.5) / math.sqrt(var)
        p = 0.5 * math.erfc(z / math.sqrt(2)) * (2 if alternative == "two-sided" else 1)
    else:
        raise ValueError(f"unknown method {method!r}")
    return MannWhitney(u1, min(1.0, p), method, n1, n2)


# ---------------------------------------------------------------- loading
def load_for_check(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a results document or baseline for `check`; anything unusable is a one-line UsageError (exit 2)."""
    try:
        doc = read_document(path)
    except UsageError:
        raise
    except RooflineError as exc:
        raise UsageError(str(exc)) from None
    _require_timed(doc, str(path))
    _index(doc, str(path))
    return doc


def _require_timed(doc: dict[str, Any], where: str) -> None:
    if doc["records"] and not any(r.get("time_s") is not None for r in doc["records"]):
        raise UsageError(f"{where}: no timed record (analytic only, run with --no-time?): nothing to check")


def canonical_params(params: Any) -> str:
    """Params as a stable string: sorted keys, integral floats written as ints (4096.0 == 4096)."""
    def norm(v: Any) -> Any:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, dict):
            return {str(k): norm(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [norm(x) for x in v]
        return v
    return json.dumps(norm(params or {}), sort_keys=True, separators=(",", ":"), default=str)


Key = tuple[str, Any, str, str, str]


def record_key(rec: dict[str, Any], case: str = "") -> Key:
    """How a result is matched to its baseline: operator, variant, canonical params, dtype (and `case`, set
    only to tell apart two records that share those four, e.g. one suite entry with tensor cores, one without)."""
    return (str(rec.get("op")), rec.get("variant"), canonical_params(rec.get("params")), str(rec.get("dtype")), case)


def shape_text(params: Any) -> str:
    return " ".join(f"{k}={v}" for k, v in (params or {}).items()) or "-"


def _label(rec: dict[str, Any], case: str = "") -> str:
    variant = f"[{rec['variant']}]" if rec.get("variant") else ""
    return f"{rec.get('op')}{variant} {rec.get('dtype')} {shape_text(rec.get('params'))}" + \
        (f" [{case}]" if case else "")


def _index(doc: dict[str, Any], where: str) -> dict[Key, dict[str, Any]]:
    """Records by key. Records sharing a key are told apart by their tensor_cores flag, else UsageError."""
    groups: dict[Key, list[dict[str, Any]]] = {}
    for rec in doc.get("records", []):
        groups.setdefault(record_key(rec), []).append(rec)
    out: dict[Key, dict[str, Any]] = {}
    for key, recs in groups.items():
        flags = [r.get("tensor_cores") for r in recs]
        if len(recs) > 1 and len(set(flags)) < len(flags):
            raise UsageError(f"{where}: two records for {_label(recs[0])}: records must be unique by operator, "
                             "variant, shape and dtype (and tensor-core use)")
        for rec in recs:
            out[key if len(recs) == 1 else record_key(rec, f"tensor_cores={rec.get('tensor_cores')}")] = rec
    return out


# ---------------------------------------------------------------- comparison
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

    @property
    def shape(self) -> str:
        return shape_text(self.params) + (f" [{self.case}]" if self.case else "")

    @property
    def name(self) -> str:
        variant = f"[{self.variant}]" if self.variant else ""
        return f"{self.op}{variant} {self.dtype} {self.shape}"

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "variant": self.variant, "dtype": self.dtype, "params": self.params,
                "shape": self.shape, "verdict": self.verdict, "reason": self.reason, "metric": self.metric,
                "statistic": self.statistic, "threshold": self.threshold, "baseline_median": self.baseline_median,
                "current_median": self.current_median, "baseline_value": self.baseline_value,
                "current_value": self.current_value, "change": self.change, "p_value": self.p_value,
                "p_method": self.p_method, "u_statistic": self.u_statistic, "n_baseline": self.n_baseline,
                "n_current": self.n_current, "case": self.case}


@dataclass(frozen=True)
class Report:
    """Every record's verdict, and how they were reached. Rendering lives in render_table/to_markdown/..."""

    rows: tuple[Row, ...]
    rules: FailOn
    alpha: float
    metric: str
    notes: tuple[str, ...] = ()
    fail_on_missing: bool = False

    @property
    def regressions(self) -> tuple[Row, ...]:
        failing = {WORSE, MISSING} if self.fail_on_missing else {WORSE}
        return tuple(r for r in self.rows if r.verdict in failing)

    @property
    def passed(self) -> bool:
        return not self.regressions

    @property
    def exit_code(self) -> int:
        """0 when nothing regressed, 1 on a regression (bad input never gets here: it raised UsageError)."""
        return 0 if self.passed else 1

    def counts(self) -> dict[str, int]:
        return {v: n for v in VERDICTS if (n := sum(r.verdict == v for r in self.rows))}

    def summary(self) -> str:
        counts = ", ".join(f"{n} {v}" for v, n in self.counts().items()) or "no records"
        status = "FAILED" if not self.passed else "passed"
        return f"roofline check {status}: {counts} ({self.metric}, {self.rules}, alpha {self.alpha:g})"


def _device_differences(res_doc: dict[str, Any], base_doc: dict[str, Any]) -> list[str]:
    """What makes two documents' machines differ: device name, driver (one phrase each, baseline first)."""
    rd, bd = res_doc.get("device") or {}, base_doc.get("device") or {}

    def differs(key: str) -> bool:
        return rd.get(key) != bd.get(key) and (rd.get(key) is not None or bd.get(key) is not None)

    out = []
    if differs("spec_id"):  # the same phrase as a record's GPU difference, so that it is said once
        out.append(f"GPU differs (baseline {bd.get('spec_id') or '?'}, results {rd.get('spec_id') or '?'})")
    elif differs("name"):
        out.append(f"device differs (baseline {bd.get('name') or '?'}, results {rd.get('name') or '?'})")
    if differs("driver_version"):
        out.append(f"driver differs (baseline {bd.get('driver_version') or '?'}, "
                   f"results {rd.get('driver_version') or '?'})")
    return out


def _spec_peaks(rec: dict[str, Any]) -> tuple[float | None, float | None]:
    """The spec's peaks for this record, before any re-quoting at the observed SM clock."""
    return rec.get("peak_flops_per_s_datasheet", rec.get("peak_flops_per_s")), rec.get("peak_bytes_per_s")


def _record_differences(cur: dict[str, Any], base: dict[str, Any]) -> list[str]:
    out = []
    if cur.get("gpu") != base.get("gpu"):
        out.append(f"GPU differs (baseline {base.get('gpu')}, results {cur.get('gpu')})")
        return out  # other peaks follow from another GPU
    rs, bs = cur.get("roof_source", "datasheet"), base.get("roof_source", "datasheet")
    if rs != bs:
        out.append(f"roof differs (baseline {bs}, results {rs})")
    elif rs == "datasheet":
        for what, c, b in zip(("peak FLOP/s", "peak bytes/s"), _spec_peaks(cur), _spec_peaks(base), strict=True):
            if c is not None and b is not None and not math.isclose(c, b, rel_tol=PEAK_RTOL):
                out.append(f"spec {what} differs (baseline {b:.4g}, results {c:.4g})")
    return out


def _samples(rec: dict[str, Any], metric: str) -> list[float] | None:
    """Raw samples in the metric's unit; None when the record was not timed or has no roofline fraction."""
    times = rec.get("time_samples_s") or ([rec["time_s"]] if rec.get("time_s") is not None else None)
    if not times:
        return None
    if metric == "time":
        return [float(t) for t in times]
    roof = rec.get("roofline_time_s")
    if not roof:
        return None
    return [roof / t for t in times]  # fraction of the roofline per sample, as add_time computes it


def statistic(samples: Sequence[float], name: str, higher_is_better: bool = False) -> float:
    """`min` is the best sample and `p90` the slow tail, whichever way the metric points."""
    if name == "median":
        return median(samples)
    if name == "mean":
        return sum(samples) / len(samples)
    if name == "min":
        return max(samples) if higher_is_better else min(samples)
    if name == "p90":
        return quantile(samples, 0.1 if higher_is_better else 0.9)
    raise ValueError(f"unknown statistic {name!r}")


def _rules_for(cur: dict[str, Any] | None, base: dict[str, Any] | None, default: FailOn) -> FailOn:
    """A record's own `threshold` (from its suite entry; the results' first) overrides the default rules."""
    for rec in (cur, base):
        text = (rec or {}).get("threshold")
        if text:
            try:
                return parse_fail_on(str(text))
            except UsageError as exc:
                raise UsageError(f"{_label(rec or {})}: bad threshold: {exc}") from None
    return default


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def _identity(rec: dict[str, Any], key: Key, metric: str, rules: FailOn) -> dict[str, Any]:
    return {"op": str(rec.get("op")), "variant": rec.get("variant"), "dtype": str(rec.get("dtype")),
            "params": dict(rec.get("params") or {}), "case": key[4], "metric": metric, "threshold": str(rules)}


def _judge(cur: dict[str, Any], base: dict[str, Any], key: Key, rules: FailOn, alpha: float, metric: str,
           across: list[str]) -> Row:
    common = _identity(cur, key, metric, rules)
    cs, bs = _samples(cur, metric), _samples(base, metric)
    if cs is None or bs is None:
        rec, side = (cur, "results") if cs is None else (base, "baseline")
        why = "was not timed" if rec.get("time_s") is None else "has no roofline time"
        return Row(**common, verdict=NOT_COMPARABLE, reason=f"the {side} record {why}")
    higher_is_better = metric == "fraction"
    test = mann_whitney_u(cs, bs) if min(len(cs), len(bs)) >= MIN_SAMPLES else None
    # The test must point the same way as the change: U of the current samples above n1 n2 / 2 means "larger".
    larger = test is not None and test.u > len(cs) * len(bs) / 2
    significant = test is not None and test.p_value < alpha
    stat_word = "roofline fraction " if metric == "fraction" else ""
    best: tuple[int, Row] | None = None
    for rule in rules.rules:
        b = statistic(bs, rule.statistic, higher_is_better)
        c = statistic(cs, rule.statistic, higher_is_better)
        change = (c - b) / b if b else math.inf
        worse_by = -change if higher_is_better else change  # > 0: worse
        if metric == "fraction":
            direction = "higher" if change > 0 else "lower"
        else:
            direction = "slower" if change > 0 else "faster"
        moved = f"{stat_word}{rule.statistic} {_pct(abs(change))} {direction}"
        if abs(worse_by) <= rule.threshold:
            verdict, reason = SAME, f"{stat_word}{rule.statistic} {change * 100:+.1f}%, within {_pct(rule.threshold)}"
        else:
            gets_worse = worse_by > 0
            agrees = larger == (gets_worse != higher_is_better)
            if test is None:
                verdict = WORSE_NOT_SIGNIFICANT if gets_worse else BETTER_NOT_SIGNIFICANT
                reason = (f"{moved}, past {_pct(rule.threshold)}, but too few samples to test ({len(bs)} baseline, "
                          f"{len(cs)} current; need {MIN_SAMPLES} per side): rerun with more repetitions")
            elif significant and agrees:
                verdict = WORSE if gets_worse else BETTER
                reason = f"{moved} (p={test.p_value:.2g} < {alpha:g}, {len(bs)} vs {len(cs)} samples)"
            else:
                verdict = WORSE_NOT_SIGNIFICANT if gets_worse else BETTER_NOT_SIGNIFICANT
                reason = (f"{moved}, past {_pct(rule.threshold)}, but not significant (p={test.p_value:.2g} "
                          f">= {alpha:g}): within the noise, rerun to confirm")
        row = Row(**{**common, "threshold": str(rule)}, verdict=verdict, reason=reason, statistic=rule.statistic,
                  baseline_median=median(bs), current_median=median(cs), baseline_value=b, current_value=c,
                  change=change, p_value=test.p_value if test else None, p_method=test.method if test else None,
                  u_statistic=test.u if test else None, n_baseline=len(bs), n_current=len(cs))
        if best is None or _SEVERITY[verdict] > best[0]:
            best = (_SEVERITY[verdict], row)
    assert best is not None
    row = best[1]
    if across:
        row = replace(row, reason=f"{row.reason}; across: {'; '.join(across)}")
    return row


def compare(results: dict[str, Any], baseline: dict[str, Any], rules: FailOn | str = DEFAULT_FAIL_ON,
            alpha: float = ALPHA, metric: str = "time", *, fail_on_missing: bool = False) -> Report:
    """Judge every record of `results` against `baseline` (both schema-v1 documents, e.g. from load_for_check).

    metric="time": raw time samples, lower is better; records from another GPU, driver or spec peak are
    not_comparable. metric="fraction": each sample's fraction of its own roofline, higher is better; the
    user asked for it to compare across devices, so device differences are noted, not refused.
    Pure: neither document is modified. Raises UsageError for bad arguments or files sharing no record.
    """
    fail_on = parse_fail_on(rules) if isinstance(rules, str) else rules
    if metric not in METRICS:
        raise UsageError(f"--metric must be one of {', '.join(METRICS)}, got {metric!r}")
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise UsageError(f"alpha must be between 0 and 1, got {alpha!r}")
    _require_timed(results, "results")
    _require_timed(baseline, "baseline")
    cur_idx, base_idx = _index(results, "results"), _index(baseline, "baseline")
    if cur_idx and base_idx and not cur_idx.keys() & base_idx.keys():
        raise UsageError("the results and the baseline share no record (same operator, variant, shape and dtype): "
                         "is this the baseline of this suite?")
    dev_diffs = _device_differences(results, baseline)
    notes: list[str] = []
    rd, bd = results.get("device") or {}, baseline.get("device") or {}
    if metric == "fraction":
        notes.append("comparing the fraction of each device's roofline (higher is better), not time")
    if dev_diffs:
        if metric == "time":
            notes.append(f"{'; '.join(dev_diffs)}: times are not comparable; --metric fraction compares "
                         "fractions of each device's roofline instead")
        else:
            notes.append(f"across devices: {'; '.join(dev_diffs)}")
    for key, what in (("torch_version", "torch"), ("cuda_version", "CUDA")):
        if rd.get(key) and bd.get(key) and rd[key] != bd[key]:
            notes.append(f"{what} differs (baseline {bd[key]}, results {rd[key]}): a change may come from it")

    rows: list[Row] = []
    for key, cur in cur_idx.items():
        base = base_idx.get(key)
        rec_rules = _rules_for(cur, base, fail_on)
        if base is None:
            rows.append(Row(**_identity(cur, key, metric, rec_rules), verdict=NEW,
                            current_median=_median_or_none(_samples(cur, metric)),
                            n_current=len(_samples(cur, metric) or []),
                            reason="not in the baseline: `roofline baseline update` adds it"))
            continue
        diffs = dev_diffs + [d for d in _record_differences(cur, base) if d not in dev_diffs]
        if diffs and metric == "time":
            rows.append(Row(**_identity(cur, key, metric, rec_rules), verdict=NOT_COMPARABLE,
                            baseline_median=_median_or_none(_samples(base, metric)),
                            current_median=_median_or_none(_samples(cur, metric)),
                            reason="; ".join(diffs) + " (--metric fraction compares across devices)"))
            continue
        rows.append(_judge(cur, base, key, rec_rules, alpha, metric, diffs if metric == "fraction" else []))
    for key, base in base_idx.items():
        if key not in cur_idx:
            rows.append(Row(**_identity(base, key, metric, _rules_for(None, base, fail_on)), verdict=MISSING,
                            baseline_median=_median_or_none(_samples(base, metric)),
                            n_baseline=len(_samples(base, metric) or []),
                            reason="in the baseline, not in the results: dropped from the suite, or it failed to run"))
    return Report(tuple(rows), fail_on, float(alpha), metric, tuple(notes), fail_on_missing)


def _median_or_none(samples: list[float] | None) -> float | None:
    return median(samples) if samples else None


def run_check(results_path: str | os.PathLike[str], baseline_path: str | os.PathLike[str],
              fail_on: FailOn | str = DEFAULT_FAIL_ON, metric: str = "time", alpha: float = ALPHA, *,
              fail_on_missing: bool = False) -> Report:
    """`roofline check` in one call: parse the rules first (cheap usage errors), load both files, compare."""
    rules = parse_fail_on(fail_on) if isinstance(fail_on, str) else fail_on
    return compare(load_for_check(results_path), load_for_check(baseline_path), rules, alpha, metric,
                   fail_on_missing=fail_on_missing)


# ---------------------------------------------------------------- rendering
def _duration(s: float) -> str:
    if s >= 1:
        return f"{s:.4g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.4g} ms"
    return f"{s * 1e6:.4g} µs"


def _value(x: float | None, metric: str) -> str:
    if x is None:
        return "-"
    return f"{x:.1%}" if metric == "fraction" else _duration(x)


def _cells(row: Row) -> list[str]:
    """op, variant, dtype, shape, baseline, current, change, p-value, threshold, verdict, reason."""
    return [row.op, row.variant or "-", row.dtype, row.shape, _value(row.baseline_value if row.baseline_value
            is not None else row.baseline_median, row.metric), _value(row.current_value if row.current_value
            is not None else row.current_median, row.metric), "-" if row.change is None else
            f"{row.change * 100:+.1f}%", "-" if row.p_value is None else f"{row.p_value:.2g}", row.threshold or "-",
            row.verdict, row.reason]


COLUMNS = ("op", "variant", "dtype", "shape", "baseline", "current", "change", "p-value", "threshold", "verdict",
           "reason")
_STYLE = {WORSE: "bold red", WORSE_NOT_SIGNIFICANT: "yellow", BETTER: "green", BETTER_NOT_SIGNIFICANT: "green",
          NOT_COMPARABLE: "magenta", MISSING: "magenta", NEW: "cyan", SAME: ""}


def render_table(report: Report) -> Table:
    """The terminal table (rich); `baseline`/`current` hold the judged statistic named in `threshold`."""
    from rich.table import Table

    unit = "fraction of roofline" if report.metric == "fraction" else "time"
    t = Table(title=f"roofline check ({unit}; alpha {report.alpha:g})", caption=report.summary())
    for c in COLUMNS:
        t.add_column(c, justify="right" if c in ("baseline", "current", "change", "p-value") else "left",
                     overflow="fold")
    for row in report.rows:
        cells = _cells(row)
        style = _STYLE.get(row.verdict, "")
        cells[9] = f"[{style}]{row.verdict}[/]" if style else row.verdict
        t.add_row(*cells)
    return t


def _md_cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _md_table(rows: Sequence[Row]) -> list[str]:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    for row in rows:
        cells = _cells(row)
        if row.verdict == WORSE:
            cells[9] = f"**{cells[9]}**"
        lines.append("| " + " | ".join(_md_cell(c) if i != 9 else c for i, c in enumerate(cells)) + " |")
    return lines


def to_markdown(report: Report) -> str:
    """A PR comment or $GITHUB_STEP_SUMMARY section: status, notes, the rows that changed, then every row."""
    icon = ":x:" if not report.passed else ":white_check_mark:"
    lines = [f"### {icon} {_md_cell(report.summary())}", ""]
    unit = "fraction of each device's roofline (higher is better)" if report.metric == "fraction" else "time"
    lines.append(f"Compared {unit}; a record fails only when its change is past the threshold **and** "
                 f"significant (two-sided Mann–Whitney U, p < {report.alpha:g}).")
    lines.append("")
    lines += [f"- {_md_cell(n)}" for n in report.notes]
    if report.notes:
        lines.append("")
    notable = [r for r in report.rows if r.verdict != SAME]
    if notable:
        lines += _md_table(sorted(notable, key=lambda r: VERDICTS.index(r.verdict)))
        lines.append("")
    lines += ["<details><summary>all records</summary>", "", *_md_table(report.rows), "", "</details>", ""]
    return "\n".join(lines)


def to_junit(report: Report) -> str:
    """JUnit XML: one testcase per record; a regression is a <failure>, unjudged records are <skipped>."""
    suite = ET.Element("testsuite", name="roofline check", tests=str(len(report.rows)))
    failures = skipped = 0
    for row in report.rows:
        case = ET.SubElement(suite, "testcase", classname=f"roofline.{row.op}", name=row.name)
        detail = " ".join(f"{c}={v}" for c, v in zip(COLUMNS, _cells(row), strict=True))
        if row.verdict == WORSE or (row.verdict == MISSING and report.fail_on_missing):
            failures += 1
            ET.SubElement(case, "failure", message=row.reason, type=row.verdict).text = detail
        elif row.verdict in (NOT_COMPARABLE, MISSING, NEW):
            skipped += 1
            ET.SubElement(case, "skipped", message=f"{row.verdict}: {row.reason}")
        else:
            ET.SubElement(case, "system-out").text = detail
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    root = ET.Element("testsuites", name="roofline", tests=str(len(report.rows)), failures=str(failures))
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def to_json(report: Report) -> dict[str, Any]:
    """The report as plain data (json.dumps-able); field names are a public interface, like the results'."""
    return {"schema": "roofline-check", "schema_version": 1, "passed": report.passed, "exit_code": report.exit_code,
            "metric": report.metric, "alpha": report.alpha, "fail_on": str(report.rules),
            "fail_on_missing": report.fail_on_missing, "min_samples": MIN_SAMPLES, "notes": list(report.notes),
            "counts": report.counts(), "summary": report.summary(), "rows": [r.to_dict() for r in report.rows]}


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_outputs(report: Report, *, markdown: str | os.PathLike[str] | None = None,
                  junit: str | os.PathLike[str] | None = None, json_path: str | os.PathLike[str] | None = None) -> None:
    """Write the requested report files. Markdown is appended (GitHub's $GITHUB_STEP_SUMMARY convention);
    JUnit and JSON files are replaced atomically."""
    try:
        if markdown is not None:
            with open(markdown, "a", encoding="utf-8") as fh:
                fh.write(to_markdown(report))
        if junit is not None:
            _atomic_write(Path(junit), to_junit(report))
        if json_path is not None:
            _atomic_write(Path(json_path), json.dumps(to_json(report), indent=2) + "\n")
    except OSError as exc:
        raise RooflineError(f"cannot write the check report: {exc.strerror or exc}") from None


# ---------------------------------------------------------------- baselines
@dataclass(frozen=True)
class BaselineUpdate:
    """What `update_baseline` did, for the CLI to print (`lines()`)."""

    path: Path
    created: bool
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    kept: int = 0
    device_changes: tuple[str, ...] = field(default=())

    def lines(self) -> list[str]:
        if self.created:
            return [f"baseline {self.path} created with {len(self.added)} record(s)"]
        out = [f"baseline {self.path} replaced: {len(self.added)} added, {len(self.removed)} removed, "
               f"{self.kept} kept (with new samples)"]
        out += [f"  + {k}" for k in self.added] + [f"  - {k}" for k in self.removed]
        out += [f"  device: {d}" for d in self.device_changes]
        return out


def update_baseline(results_path: str | os.PathLike[str], baseline_path: str | os.PathLike[str], *,
                    force: bool = False) -> BaselineUpdate:
    """Make `results_path` the baseline: running `roofline baseline update` is the user asking for it.

    - The results must be a valid, timed results document (else UsageError; the baseline is untouched).
    - No baseline yet: it is created (and its folder). A baseline there: it is replaced by the results file's
      exact bytes, written to a temp file beside it and moved into place with os.replace (never half-written).
    - Refused without `force`: replacing a baseline recorded on another GPU (spec or device name), so a run on
      the wrong machine cannot silently re-point baselines/h200.json; and replacing an unreadable baseline.
    The returned BaselineUpdate lists the records added and removed. `check` never writes a baseline.
    """
    res_path, base_path = Path(results_path), Path(baseline_path)
    results = load_for_check(res_path)
    text = res_path.read_text(encoding="utf-8")
    cur_labels = {k: _label(r, k[4]) for k, r in _index(results, str(res_path)).items()}
    if not base_path.exists():
        _write_baseline(base_path, text)
        return BaselineUpdate(base_path, True, added=tuple(cur_labels.values()))
    try:
        old = load_for_check(base_path)
    except UsageError as exc:
        if not force:
            raise UsageError(f"the existing baseline is unreadable ({exc}): pass --force to replace it") from None
        _write_baseline(base_path, text)
        return BaselineUpdate(base_path, False, added=tuple(cur_labels.values()),
                              device_changes=("the old baseline was unreadable",))
    diffs = _device_differences(results, old)
    other_gpu = [d for d in diffs if not d.startswith("driver")]
    if other_gpu and not force:
        raise UsageError(f"{base_path} was recorded on another GPU ({'; '.join(other_gpu)}): pass --force to "
                         "replace it, or write a baseline per GPU")
    old_labels = {k: _label(r, k[4]) for k, r in _index(old, str(base_path)).items()}
    _write_baseline(base_path, text)
    return BaselineUpdate(base_path, False, added=tuple(v for k, v in cur_labels.items() if k not in old_labels),
                          removed=tuple(v for k, v in old_labels.items() if k not in cur_labels),
                          kept=len(cur_labels.keys() & old_labels.keys()), device_changes=tuple(diffs))


def _write_baseline(path: Path, text: str) -> None:
    try:
        _atomic_write(path, text)
    except OSError as exc:
        raise RooflineError(f"cannot write the baseline {path}: {exc.strerror or exc}") from None
