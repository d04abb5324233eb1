"""The CI regression check: threshold grammar, Mann–Whitney U (core.stats), every verdict (ci.judge), bad input,
reports (report.check), baselines (ci.baseline).

Samples are synthetic and deterministic: lognormal around 1.0 ms with 2% noise, 50 per record, fixed seeds.
"""

from __future__ import annotations

import copy
import json
import math
import random
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from helpers import DATA, profile_with_counters, rendered, run, write

from roofline.ci.baseline import update_baseline
from roofline.ci.judge import (
    ALPHA,
    BETTER,
    BETTER_NOT_SIGNIFICANT,
    MIN_COMPARED_SHARE,
    MIN_SAMPLES,
    MISSING,
    NEW,
    NOT_COMPARABLE,
    SAME,
    UNJUDGED,
    WORSE,
    WORSE_BUSY,
    WORSE_NOT_SIGNIFICANT,
    FailOn,
    Report,
    Row,
    Rule,
    judge,
    load_for_check,
    parse_fail_on,
    run_check,
    statistic,
)
from roofline.core import stats
from roofline.core.document import Document, dumps, validate_document
from roofline.core.errors import RooflineError, UsageError
from roofline.core.record import Record
from roofline.core.stats import mann_whitney_u
from roofline.report.check import COLUMNS, render_table, to_json, to_junit, to_markdown, write_outputs

GEMM = {"m": 4096, "n": 4096, "k": 4096, "batch": 1, "epilogue": "none"}
RELU = {"numel": 268435456}


def lognormal(n: int = 50, center: float = 1e-3, noise: float = 0.02, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    return [center * rng.lognormvariate(0.0, noise) for _ in range(n)]


def record(samples: list[float], op: str = "gemm", params: dict[str, Any] | None = None, dtype: str = "fp16",
           gpu: str = "h200-sxm", roofline_time_s: float = 0.5e-3, peak_flops: float = 989e12,
           peak_bytes: float = 4.8e12, **extra: Any) -> Record:
    """A schema-v1 timed record; time_s is the median as the runner stores it."""
    samples_sorted = sorted(samples)
    mid = len(samples) // 2
    med = samples_sorted[mid] if len(samples) % 2 else (samples_sorted[mid - 1] + samples_sorted[mid]) / 2
    rec = {"op": op, "variant": None, "params": dict(params if params is not None else GEMM), "dtype": dtype,
           "flops": 1.0e11, "bytes_read": 6.7e7, "bytes_written": 3.3e7, "bytes": 1.0e8,
           "arithmetic_intensity": 1000.0, "gpu": gpu, "roof_source": "datasheet", "peak_flops_per_s": peak_flops,
           "peak_bytes_per_s": peak_bytes, "ridge_point": peak_flops / peak_bytes, "bound": "compute",
           "roofline_time_s": roofline_time_s, "time_s": med, "time_samples_s": list(samples),
           "achieved_flops_per_s": 1e11 / med, "achieved_bytes_per_s": 1e8 / med,
           "roofline_fraction": roofline_time_s / med}
    rec.update(extra)
    return Record.from_dict(rec)


def document(records: list[Record], name: str = "NVIDIA H200", spec_id: str = "h200-sxm",
             driver: str = "560.35.03", torch: str = "2.5.1") -> Document:
    device = {"kind": "gpu", "spec_id": spec_id, "spec_name": name, "name": name, "index": 0,
              "driver_version": driver, "torch_version": torch}
    return Document(device=device, records=records, tool_version="0.1.0", created="2025-01-01T00:00:00+00:00")


def one(results_samples: list[float], baseline_samples: list[float], **kw: Any) -> Row:
    report = judge(document([record(results_samples)]), document([record(baseline_samples)]), **kw)
    assert len(report.rows) == 1
    return report.rows[0]


def scaled(samples: list[float], factor: float) -> list[float]:
    return [s * factor for s in samples]


# ---------------------------------------------------------------- threshold grammar
@pytest.mark.parametrize(("text", "rules"), [
    ("median:5%", (Rule("median", 0.05),)),
    ("median:0.05", (Rule("median", 0.05),)),
    ("p90:10%", (Rule("p90", 0.10),)),
    ("min:3%", (Rule("min", 0.03),)),
    (" mean : 2.5 % ", (Rule("mean", 0.025),)),
    ("median:5%,p90:10%", (Rule("median", 0.05), Rule("p90", 0.10))),
])
def test_fail_on_grammar(text: str, rules: tuple[Rule, ...]) -> None:
    parsed = parse_fail_on(text)
    assert isinstance(parsed, FailOn)
    assert [r.statistic for r in parsed.rules] == [r.statistic for r in rules]
    assert [r.threshold for r in parsed.rules] == pytest.approx([r.threshold for r in rules])
    assert parse_fail_on(str(parsed)) == parsed  # str() writes the canonical form back


def test_fail_on_is_frozen() -> None:
    with pytest.raises(AttributeError):
        parse_fail_on("median:5%").rules = ()  # type: ignore[misc]


@pytest.mark.parametrize("text", ["", "  ", "median", "median:", ":5%", "avg:5%", "p99:1%", "median:5",
                                  "median:-5%", "median:0%", "median:5%%", "median:abc", "median:5%,",
                                  "median:5%,median:3%", "median=5%", "median:2000%"])
def test_fail_on_bad_grammar(text: str) -> None:
    with pytest.raises(UsageError) as exc:
        parse_fail_on(text)
    assert exc.value.exit_code == 2
    assert "\n" not in str(exc.value) and str(exc.value)


def test_plain_number_above_one_is_ambiguous() -> None:
    with pytest.raises(UsageError, match=r"ambiguous: write 5% or 0\.05"):
        parse_fail_on("median:5")


# ---------------------------------------------------------------- Mann–Whitney U, by hand
def test_mwu_separated_samples_by_hand() -> None:
    # x = [1, 2, 3], y = [4, 5]: no x exceeds any y, so U_x = 0 (and U_y = 3*2 - 0 = 6).
    # Exact: U = 0 only when all x come first, 1 ordering of C(5, 2) = 10, so P(U <= 0) = 0.1; two-sided 0.2.
    r = mann_whitney_u([1, 2, 3], [4, 5])
    assert r.u == 0 and r.method == "exact"
    assert r.p_value == pytest.approx(0.2)
    assert mann_whitney_u([1, 2, 3], [4, 5], "less").p_value == pytest.approx(0.1)
    assert mann_whitney_u([1, 2, 3], [4, 5], "greater").p_value == pytest.approx(1.0)
    # reversed: x = [3, 4, 5] over y = [1, 2] wins all 3*2 = 6 pairs.
    assert mann_whitney_u([3, 4, 5], [1, 2]).u == 6


def test_mwu_exact_distribution_by_hand() -> None:
    # n1 = n2 = 2, orderings of xxyy and U_x (pairs x > y): yyxx 4, yxyx 3, yxxy 2, xyyx 2, xyxy 1, xxyy 0.
    assert stats._u_counts(2, 2) == (1, 1, 2, 1, 1)
    assert sum(stats._u_counts(7, 9)) == math.comb(16, 7)


def test_mwu_with_ties_by_hand() -> None:
    # x = [1, 2, 2], y = [2, 3]; pooled 1 2 2 2 3 has mid-ranks 1, 3, 3, 3, 5 -> R_x = 1 + 3 + 3 = 7,
    # U_x = 7 - 3*4/2 = 1. Normal: mean 3*2/2 = 3; one tie group t = 3 -> sum(t^3 - t) = 24;
    # var = 3*2/12 * ((5 + 1) - 24 / (5*4)) = 0.5 * 4.8 = 2.4; z = (max(1, 5) - 3 - 0.5) / sqrt(2.4) = 0.9682;
    # two-sided p = 2 * (1 - Phi(0.9682)) = 0.3329.
    r = mann_whitney_u([1, 2, 2], [2, 3])
    assert r.u == 1 and r.method == "normal"  # ties: the exact table does not apply
    assert r.p_value == pytest.approx(0.3329, abs=1e-4)


def test_mwu_all_equal_has_no_evidence() -> None:
    assert mann_whitney_u([1.0] * 6, [1.0] * 6).p_value == 1.0


def test_min_samples_is_where_significance_becomes_possible() -> None:
    # Fully separated samples give the smallest exact p-value, 2 / C(2n, n):
    # 4 vs 4: 2/70 = 0.0286 > ALPHA, never significant; 5 vs 5: 2/252 = 0.0079 < ALPHA.
    assert mann_whitney_u([5, 6, 7, 8], [1, 2, 3, 4]).p_value == pytest.approx(2 / 70)
    assert mann_whitney_u([6, 7, 8, 9, 10], [1, 2, 3, 4, 5]).p_value == pytest.approx(2 / 252)
    assert 2 / math.comb(2 * (MIN_SAMPLES - 1), MIN_SAMPLES - 1) > ALPHA > 2 / math.comb(2 * MIN_SAMPLES, MIN_SAMPLES)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize(("n1", "n2", "ties"), [(5, 5, False), (7, 12, False), (30, 50, False), (50, 50, False),
                                                 (120, 90, False), (20, 25, True)])
def test_mwu_matches_scipy(alternative: str, n1: int, n2: int, ties: bool) -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = random.Random(n1 * 1000 + n2)
    x = [rng.gauss(0.3, 1) for _ in range(n1)]
    y = [rng.gauss(0.0, 1) for _ in range(n2)]
    if ties:
        x, y = [round(v, 1) for v in x], [round(v, 1) for v in y]
    methods = ["normal"] + ([] if ties or max(n1, n2) > stats.EXACT_MAX_N else ["exact"])
    for method in methods:
        ours = mann_whitney_u(x, y, alternative, method)
        ref = scipy_stats.mannwhitneyu(x, y, alternative=alternative,
                                       method="exact" if method == "exact" else "asymptotic")
        assert ours.u == pytest.approx(float(ref.statistic))
        assert ours.p_value == pytest.approx(float(ref.pvalue), rel=1e-9)


# ---------------------------------------------------------------- verdicts
def test_same_noise_only() -> None:
    row = one(lognormal(seed=2), lognormal(seed=1))
    assert row.verdict == SAME
    assert abs(row.change) < 0.05
    assert row.n_baseline == row.n_current == 50


def test_worse_seven_percent_slower_is_a_regression() -> None:
    report = judge(document([record(scaled(lognormal(seed=2), 1.07))]), document([record(lognormal(seed=1))]))
    row = report.rows[0]
    assert row.verdict == WORSE
    assert row.change == pytest.approx(0.07, abs=0.01)
    assert row.p_value is not None and row.p_value < ALPHA
    assert "slower" in row.reason and row.threshold == "median:5%"
    assert report.exit_code == 1 and not report.passed
    assert report.regressions == (row,)


def test_three_samples_are_unjudged_and_fail_unless_allowed() -> None:
    # A gemm of 3 samples a side (7% slower) beside a relu of 50 that did not move. Before issue 50 the gemm was
    # worse_not_significant and the check passed: a +200% change on 3 samples passed alike.
    relu = record(lognormal(seed=3), op="relu", params=RELU)
    cur = document([record(scaled(lognormal(3), 1.07)), relu])  # the baseline's 3 samples, each 7% longer
    base = document([record(lognormal(3)), relu])
    report = judge(cur, base)
    row = report.rows[0]
    assert (row.op, row.verdict, row.p_value) == ("gemm", UNJUDGED, None)
    assert f"too few samples to judge: 3 baseline, 3 results (a check needs {MIN_SAMPLES} a side)" in row.reason
    assert row.change == pytest.approx(0.07) and (row.n_baseline, row.n_current) == (3, 3)
    assert report.exit_code == 1 and report.regressions == (row,)
    allowed = judge(cur, base, allow_unjudged=True)  # relu compared: 1 of 2, at least MIN_COMPARED_SHARE
    assert allowed.exit_code == 0 and allowed.rows[0].verdict == UNJUDGED and not allowed.refused
    assert any("1 of 2 records the results share with the baseline were compared (1 unjudged" in n
               for n in allowed.notes)


def test_few_samples_on_one_side_only_is_unjudged() -> None:
    row = one(scaled(lognormal(3, seed=2), 1.07), lognormal(50))
    assert row.verdict == UNJUDGED and row.p_value is None


def test_a_check_of_unjudged_records_alone_is_refused() -> None:
    # Nothing compared: 0 of 1 is below MIN_COMPARED_SHARE, exit 2 even with --allow-unjudged.
    report = judge(document([record(lognormal(3, seed=2))]), document([record(lognormal(3))]), allow_unjudged=True)
    assert report.exit_code == 2 and not report.passed and report.summary().startswith("roofline check REFUSED")
    assert report.refused.startswith("0 of 1 records the results share with the baseline were compared (1 "
                                     "unjudged: too few samples to judge)")


def test_worse_not_significant_with_huge_noise() -> None:
    # 60% lognormal noise; the current samples are the baseline's times 1.07, so the median moves exactly 7%,
    # past the 5% threshold, but the rank test cannot tell two such wide distributions apart.
    base = lognormal(noise=0.6, seed=3)
    row = one(scaled(base, 1.07), base)
    assert row.change == pytest.approx(0.07)
    assert row.verdict == WORSE_NOT_SIGNIFICANT
    assert row.p_value is not None and row.p_value >= ALPHA
    assert "not significant" in row.reason


def test_better() -> None:
    row = one(scaled(lognormal(seed=2), 0.92), lognormal(seed=1))
    assert row.verdict == BETTER
    assert row.change == pytest.approx(-0.08, abs=0.01)
    assert "faster" in row.reason


def test_better_not_significant() -> None:
    # as test_worse_not_significant_with_huge_noise, 8% faster: past the threshold, not significant at 60% noise
    base = lognormal(noise=0.6, seed=3)
    row = one(scaled(base, 0.92), base)
    assert row.verdict == BETTER_NOT_SIGNIFICANT and row.p_value is not None and row.p_value >= ALPHA


def test_significant_but_small_change_is_same() -> None:
    # 2% slower with 50 samples at 2% noise: the test sees it, the 5% threshold says it does not matter.
    row = one(scaled(lognormal(seed=2), 1.02), lognormal(seed=1))
    assert row.verdict == SAME


def test_not_comparable_other_gpu() -> None:
    results = document([record(lognormal(seed=2), gpu="h100-sxm")], name="NVIDIA H100 80GB HBM3", spec_id="h100-sxm")
    report = judge(results, document([record(lognormal(seed=1))]))
    row = report.rows[0]
    assert row.verdict == NOT_COMPARABLE
    assert "GPU differs (baseline h200-sxm, results h100-sxm)" in row.reason
    # nothing compared: refused (exit 2), where it passed with exit 0 before issue 50
    assert report.exit_code == 2 and not report.passed
    assert report.refused.startswith("0 of 1 records the results share with the baseline were compared (1 "
                                     "not_comparable: GPU differs (baseline h200-sxm, results h100-sxm)")
    assert any("--metric fraction" in n for n in report.notes)


def test_not_comparable_other_driver() -> None:
    results = document([record(scaled(lognormal(seed=2), 1.5))], driver="570.86.10")
    row = judge(results, document([record(lognormal(seed=1))])).rows[0]
    assert row.verdict == NOT_COMPARABLE
    assert "driver differs (baseline 560.35.03, results 570.86.10)" in row.reason


def test_not_comparable_spec_peak_changed() -> None:
    row = judge(document([record(lognormal(seed=2), peak_flops=990e12)]),
                  document([record(lognormal(seed=1))])).rows[0]
    assert row.verdict == NOT_COMPARABLE and "spec peak FLOP/s differs" in row.reason


def test_peak_requoted_at_the_observed_clock_is_still_comparable() -> None:
    # measure.py keeps the datasheet peak aside when it re-quotes the peak at the observed SM clock.
    cur = record(lognormal(seed=2), peak_flops=900e12, peak_flops_per_s_datasheet=989e12)
    assert judge(document([cur]), document([record(lognormal(seed=1))])).rows[0].verdict == SAME


def test_missing_and_new() -> None:
    base = document([record(lognormal(seed=1)), record(lognormal(seed=3), op="relu", params=RELU)])
    cur = document([record(lognormal(seed=2)), record(lognormal(seed=4), op="softmax", params={"rows": 4096})])
    report = judge(cur, base)
    verdicts = {r.op: r.verdict for r in report.rows}
    assert verdicts == {"gemm": SAME, "relu": MISSING, "softmax": NEW}
    # relu may be the record that crashed: missing fails by default; softmax (new) never fails
    assert report.exit_code == 1 and [r.op for r in report.regressions] == ["relu"]
    allowed = judge(cur, base, allow_missing=True)
    assert allowed.exit_code == 0 and to_json(allowed)["allow_missing"] is True


def test_only_new_records_pass() -> None:
    base = document([record(lognormal(seed=1))])
    cur = document([record(lognormal(seed=2)), record(lognormal(seed=4), op="softmax", params={"rows": 4096})])
    assert judge(cur, base).exit_code == 0


@pytest.mark.parametrize("empty_side", ["results", "baseline"])
def test_a_document_with_no_records_is_refused(tmp_path: Path, empty_side: str) -> None:
    # An empty results file (a run that died before its first record) passed before: "19 new" or "19 missing".
    good = write(tmp_path / "good.json", dumps(document([record(lognormal())])))
    empty = write(tmp_path / "empty.json", dumps(document([])))
    with pytest.raises(UsageError, match="no records") as exc:
        load_for_check(empty)
    assert exc.value.exit_code == 2 and str(empty) in str(exc.value) and "\n" not in str(exc.value)
    res, base = (empty, good) if empty_side == "results" else (good, empty)
    with pytest.raises(UsageError, match="no records"):
        run_check(res, base)
    with pytest.raises(UsageError, match=f"{empty_side}: a results document with no records"):
        judge(*((document([]), document([record(lognormal())])) if empty_side == "results"
                else (document([record(lognormal())]), document([]))))


def test_params_are_matched_canonically() -> None:
    reordered = {k: float(v) if isinstance(v, int) else v for k, v in reversed(GEMM.items())}
    report = judge(document([record(lognormal(seed=2), params=reordered)]), document([record(lognormal(seed=1))]))
    assert [r.verdict for r in report.rows] == [SAME]


def test_the_baseline_records_threshold_overrides_the_default_the_results_does_not() -> None:
    cur, base = scaled(lognormal(seed=2), 1.07), lognormal(seed=1)
    assert one(cur, base).verdict == WORSE
    # the suite entry's threshold, stored in the baseline by `baseline update`: 7% is within 8%
    row = judge(document([record(cur, threshold="median:8%")]),
                document([record(base, threshold="median:8%")])).rows[0]
    assert row.verdict == SAME and row.threshold == "median:8%"
    # the results' alone is not read (it chose median:8% for itself before issue 50): --fail-on's 5% judges
    report = judge(document([record(cur, threshold="median:8%")]), document([record(base)]))
    assert report.rows[0].verdict == WORSE and report.rows[0].threshold == "median:5%"
    assert any(n.startswith("the results' own thresholds (median:8% on 1 record(s)) are not the baseline's: not "
                            "read") for n in report.notes)


def test_bad_record_threshold_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"gemm fp16 m=4096.*bad threshold"):
        judge(document([record(lognormal(), threshold="median:lots")]), document([record(lognormal())]))


def test_several_rules_the_most_severe_wins() -> None:
    # 7% slower everywhere: within median:10%, past min:3% -> the min rule decides.
    row = one(scaled(lognormal(seed=2), 1.07), lognormal(seed=1), rules="median:10%,min:3%")
    assert row.verdict == WORSE and row.statistic == "min" and row.threshold == "min:3%"


def test_other_device_time_vs_fraction() -> None:
    # Baseline on an H100: roofline 0.8 ms, runs in ~1.0 ms -> 80% of its roof.
    # Results on an H200: roofline 0.5 ms, runs in ~0.8 ms -> 62.5% of its roof: faster, yet further from the roof.
    base = document([record(lognormal(seed=1), gpu="h100-sxm", roofline_time_s=0.8e-3, peak_flops=989e12,
                            peak_bytes=3.35e12)], name="NVIDIA H100 80GB HBM3", spec_id="h100-sxm",
                    driver="550.54.15")
    cur = document([record(lognormal(center=0.8e-3, seed=2), roofline_time_s=0.5e-3)])
    by_time = judge(cur, base, metric="time")
    assert [r.verdict for r in by_time.rows] == [NOT_COMPARABLE]
    by_fraction = judge(cur, base, metric="fraction")
    row = by_fraction.rows[0]
    assert row.verdict == WORSE
    assert row.metric == "fraction"
    assert row.baseline_median == pytest.approx(0.8, rel=0.02)
    assert row.current_median == pytest.approx(0.625, rel=0.02)
    assert "roofline fraction" in row.reason and "lower" in row.reason and "GPU differs" in row.reason
    assert any("fraction" in n and "higher is better" in n for n in by_fraction.notes)
    assert "fraction" in to_markdown(by_fraction)


def test_fraction_min_is_the_best_sample() -> None:
    assert statistic([1.0, 2.0, 3.0], "min", higher_is_better=True) == 3.0
    assert statistic([1.0, 2.0, 3.0], "min") == 1.0


def test_a_record_untimed_on_one_side_is_unjudged_on_both_not_comparable() -> None:
    analytic = record(lognormal(seed=5), op="relu", params=RELU, time_s=None, time_samples_s=None)
    cur = document([record(lognormal(seed=2)), analytic])
    base = document([record(lognormal(seed=1)), record(lognormal(seed=3), op="relu", params=RELU)])
    report = judge(cur, base)  # was not_comparable, and passed
    rows = {r.op: r for r in report.rows}
    assert rows["relu"].verdict == UNJUDGED and "the results record was not timed" in rows["relu"].reason
    assert report.exit_code == 1 and report.regressions == (rows["relu"],)
    # an analytic entry on both sides is not comparable, and outside the share a check must compare (1 of 1)
    both = judge(cur, document([base.records[0], analytic]))
    assert [r.verdict for r in both.rows] == [SAME, NOT_COMPARABLE] and both.exit_code == 0
    assert "neither side's record was timed" in both.rows[1].reason


def test_judge_does_not_modify_its_inputs() -> None:
    cur, base = document([record(scaled(lognormal(seed=2), 1.07))]), document([record(lognormal(seed=1))])
    before = copy.deepcopy((cur, base))
    judge(cur, base)
    assert (cur, base) == before


# ---------------------------------------------------------------- bad input -> exit 2
def test_truncated_baseline_is_a_one_line_usage_error(tmp_path: Path) -> None:
    good = dumps(document([record(lognormal())]))
    p = tmp_path / "baseline.json"
    p.write_text(good[: len(good) // 2])
    with pytest.raises(UsageError) as exc:
        load_for_check(p)
    assert exc.value.exit_code == 2
    msg = str(exc.value)
    assert "\n" not in msg and str(p) in msg and "malformed JSON" in msg


@pytest.mark.parametrize(("content", "fragment"), [
    (None, "no such file"),
    ("", "empty file"),
    ('{"schema_version": 9, "records": []}', "newer than this roofline reads"),
    ('{"records": []}', "no integer schema_version"),
    ("[1, 2]", "not a roofline results document"),
])
def test_unusable_files_are_usage_errors(tmp_path: Path, content: str | None, fragment: str) -> None:
    p = tmp_path / "b.json"
    if content is not None:
        p.write_text(content)
    with pytest.raises(UsageError, match=fragment) as exc:
        load_for_check(p)
    assert exc.value.exit_code == 2 and "\n" not in str(exc.value)


def test_analytic_only_document_is_a_usage_error(tmp_path: Path) -> None:
    p = write(tmp_path / "r.json", dumps(document([record(lognormal(), time_s=None, time_samples_s=None)])))
    with pytest.raises(UsageError, match="no timed record"):
        load_for_check(p)


def test_duplicate_records_are_a_usage_error(tmp_path: Path) -> None:
    p = write(tmp_path / "r.json", dumps(document([record(lognormal(seed=1)), record(lognormal(seed=2))])))
    with pytest.raises(UsageError, match="two records for gemm fp16"):
        load_for_check(p)


def test_same_shape_with_and_without_tensor_cores_are_two_records() -> None:
    base = document([record(lognormal(seed=1), tensor_cores=True), record(lognormal(seed=3), tensor_cores=False)])
    cur = document([record(lognormal(seed=2), tensor_cores=True),
                    record(scaled(lognormal(seed=4), 1.07), tensor_cores=False)])
    rows = {r.case: r for r in judge(cur, base).rows}
    assert rows["tensor_cores=True"].verdict == SAME
    assert rows["tensor_cores=False"].verdict == WORSE
    assert rows["tensor_cores=False"].name.endswith("epilogue=none [tensor_cores=False]")


def test_files_sharing_no_record_are_a_usage_error() -> None:
    cur = document([record(lognormal(), op="relu", params=RELU)])
    with pytest.raises(UsageError, match="share no record"):
        judge(cur, document([record(lognormal())]))


def test_an_eager_and_a_compiled_profile_share_their_region() -> None:
    # Real H200 profiles of examples/compiled_mlp.py (docs/results/compiled-models/): eager and
    # torch.compile'd share no op record (Inductor fused them) but both have the region "forward", whose whole
    # kernel time is what compiling changed (2.503 -> 2.187 ms); the check compares it instead of refusing.
    from roofline.core.document import read_document

    where = Path(__file__).parent.parent / "docs" / "results" / "compiled-models"
    compiled, eager = (read_document(where / f"compiled_mlp_{k}.json.gz") for k in ("compiled", "eager"))
    report = judge(compiled, eager)
    region = [r for r in report.rows if r.name.startswith("region")]
    assert len(region) == 1 and region[0].change == pytest.approx(2.187 / 2.503 - 1, abs=1e-3)
    assert {r.verdict for r in report.rows if r not in region} == {"new", "missing"}


@pytest.mark.parametrize(("kw", "fragment"), [({"metric": "speed"}, "--metric"), ({"alpha": 0.0}, "alpha"),
                                              ({"alpha": 1.5}, "alpha"), ({"rules": "median"}, "--fail-on")])
def test_bad_arguments_are_usage_errors(kw: dict[str, Any], fragment: str) -> None:
    doc = document([record(lognormal())])
    with pytest.raises(UsageError, match=fragment):
        judge(doc, doc, **kw)


# ---------------------------------------------------------------- exit codes, end to end
@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    base = document([record(lognormal(seed=1)), record(lognormal(seed=3), op="relu", params=RELU)])
    cur = document([record(scaled(lognormal(seed=2), 1.07)), record(lognormal(seed=4), op="relu", params=RELU)])
    return write(tmp_path / "results.json", dumps(cur)), write(tmp_path / "baseline.json", dumps(base))


def test_run_check_exit_codes(files: tuple[Path, Path], tmp_path: Path) -> None:
    results, baseline = files
    assert run_check(results, baseline).exit_code == 1  # gemm 7% slower
    assert run_check(results, baseline, fail_on="median:10%").exit_code == 0
    assert run_check(baseline, baseline).exit_code == 0
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 1, "records": [')
    with pytest.raises(UsageError) as exc:
        run_check(results, bad)
    assert exc.value.exit_code == 2


def test_check_leaves_the_baseline_byte_for_byte(files: tuple[Path, Path], tmp_path: Path) -> None:
    results, baseline = files
    before, mtime = baseline.read_bytes(), baseline.stat().st_mtime_ns
    report = run_check(results, baseline)
    render_table(report), to_markdown(report), to_junit(report), to_json(report)
    write_outputs(report, markdown=tmp_path / "summary.md", junit=tmp_path / "junit.xml",
                  json_path=tmp_path / "check.json")
    judge(load_for_check(results), load_for_check(baseline), metric="fraction")
    assert baseline.read_bytes() == before
    assert baseline.stat().st_mtime_ns == mtime


# ---------------------------------------------------------------- outputs
def mixed_report() -> Report:
    base = document([record(lognormal(seed=1)), record(lognormal(seed=3), op="relu", params=RELU),
                     record(lognormal(seed=5), op="layernorm", params={"rows": 8, "cols": "a|b"})])
    cur = document([record(scaled(lognormal(seed=2), 1.07)),
                    record(lognormal(seed=4), op="softmax", params={"rows": 4096}),
                    record(lognormal(seed=6), op="layernorm", params={"rows": 8, "cols": "a|b"})])
    return judge(cur, base)


def test_markdown_is_a_well_formed_table() -> None:
    report = mixed_report()
    md = to_markdown(report)
    assert md.startswith("### :x: roofline check FAILED")
    table_lines = [line for line in md.splitlines() if line.startswith("|")]
    assert table_lines
    for line in table_lines:  # every row has the 11 columns; a "|" inside a cell is escaped
        assert line.replace("\\|", "").count("|") == len(COLUMNS) + 1
    assert "a\\|b" in md
    assert "**worse**" in md
    assert md.count("<details>") == md.count("</details>") == 1


def test_markdown_passing() -> None:
    md = to_markdown(judge(document([record(lognormal(seed=2))]), document([record(lognormal(seed=1))])))
    assert md.startswith("### :white_check_mark: roofline check passed")


def test_junit_is_valid_xml_with_one_testcase_per_record() -> None:
    report = mixed_report()
    root = ET.fromstring(to_junit(report))
    assert root.tag == "testsuites" and root.get("failures") == "2"  # gemm worse, relu missing
    suite = root.find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert len(cases) == len(report.rows) == 4
    failed = [c for c in cases if c.find("failure") is not None]
    assert [c.get("classname") for c in failed] == ["roofline.gemm", "roofline.relu"]
    failure = failed[0].find("failure")
    assert failure is not None and "slower" in failure.get("message", "")
    assert suite.get("skipped") == "1"  # softmax new
    assert suite.get("tests") == "4" and suite.get("failures") == "2"


def test_json_report() -> None:
    report = mixed_report()
    doc = json.loads(json.dumps(to_json(report)))
    assert doc["passed"] is False and doc["exit_code"] == 1
    assert doc["counts"] == {WORSE: 1, MISSING: 1, NEW: 1, SAME: 1}
    row = next(r for r in doc["rows"] if r["verdict"] == WORSE)
    for key in ("op", "variant", "dtype", "shape", "baseline_median", "current_median", "change", "p_value",
                "threshold", "verdict", "reason"):
        assert key in row
    assert row["shape"] == "m=4096 n=4096 k=4096 batch=1 epilogue=none"


def test_a_refused_check_says_why_in_every_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Another GPU on every record: nothing compared. Before issue 50: "passed: 2 not_comparable", exit 0.
    h100 = {"gpu": "h100-sxm"}
    cur = document([record(scaled(lognormal(seed=2), 3.0), **h100), record(lognormal(seed=4), op="relu",
                    params=RELU, **h100)], name="NVIDIA H100 80GB HBM3", spec_id="h100-sxm")
    base = document([record(lognormal(seed=1)), record(lognormal(seed=3), op="relu", params=RELU)])
    report = judge(cur, base)
    why = "0 of 2 records the results share with the baseline were compared (2 not_comparable: GPU differs"
    assert report.refused.startswith(why) and report.exit_code == 2 and not report.passed
    assert to_json(report)["refused"] == report.refused and to_json(report)["exit_code"] == 2
    assert f"**Refused** (exit 2): {why}" in to_markdown(report)
    suite = ET.fromstring(to_junit(report)).find("testsuite")
    assert suite is not None and suite.get("errors") == "1" and suite.get("tests") == "3"
    error = suite.find("testcase/error")
    assert error is not None and error.get("message") == report.refused
    # the CLI: the table, the reports, then one line and exit 2
    res, bas = write(tmp_path / "r.json", dumps(cur)), write(tmp_path / "b.json", dumps(base))
    code, out, err = run(capsys, "check", str(res), "--baseline", str(bas), "--json", str(tmp_path / "c.json"))
    assert code == 2 and "REFUSED" in out and err.startswith(f"error: {why}") and len(err.strip().splitlines()) == 1
    assert json.loads((tmp_path / "c.json").read_text())["refused"] == report.refused


def test_a_check_that_compared_at_least_half_stands_and_says_what_it_left() -> None:
    # 2 of 3 compared (MIN_COMPARED_SHARE 50%); the third's spec peak was edited: not comparable, said in a note
    relu, softmax = (record(lognormal(seed=s), op=op, params=p) for s, op, p in
                     ((3, "relu", RELU), (5, "softmax", {"rows": 4096})))
    base = document([record(lognormal(seed=1)), relu, softmax])
    report = judge(document([record(lognormal(seed=2), peak_flops=990e12), relu, softmax]), base)
    assert not report.refused and report.exit_code == 0
    assert any(n.startswith("2 of 3 records the results share with the baseline were compared (1 not_comparable: "
                            "spec peak FLOP/s differs") for n in report.notes)
    assert MIN_COMPARED_SHARE == 0.5


def test_render_table() -> None:
    from rich.console import Console

    table = render_table(mixed_report())
    # the variant and the dtype join the op; the threshold (optional at 80 columns) follows the verdict
    assert [c.header for c in table.columns] == ["op", "shape", "baseline", "current", "change", "p-value",
                                                 "verdict", "threshold", "reason"]
    assert len(table.rows) == 4
    con = Console(record=True, width=250)
    con.print(table)
    text = con.export_text()
    assert "worse" in text and "FAILED" in text
    narrow = Console(record=True, width=80)
    narrow.print(table)
    lines = narrow.export_text().splitlines()
    assert max(map(len, lines)) <= 80 and not any("…" in line for line in lines)


def test_write_outputs_appends_markdown(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    report = mixed_report()
    write_outputs(report, markdown=summary, junit=tmp_path / "j.xml")
    assert summary.read_text().startswith("earlier step\n### :x:")
    ET.parse(tmp_path / "j.xml")



def test_the_markdown_report_makes_its_folder_and_a_failure_names_the_file(tmp_path: Path) -> None:
    """New-user pass (issue 30): `--markdown reports/x.md` failed where `--junit reports/j.xml` made its folder,
    saying "cannot write the check report: No such file or directory" without naming which report."""
    report = mixed_report()
    write_outputs(report, markdown=tmp_path / "reports" / "summary.md", junit=tmp_path / "reports" / "j.xml")
    assert (tmp_path / "reports" / "summary.md").read_text().startswith("### :x:")
    blocked = write(tmp_path / "a-file", "")  # a folder that cannot be made: a file is in its place
    with pytest.raises(RooflineError, match=rf"^cannot write {re.escape(str(blocked / 'x.md'))}: "):
        write_outputs(report, markdown=blocked / "x.md")


def test_an_analytic_document_is_refused_in_words_that_fit_baseline_update(tmp_path: Path) -> None:
    """`baseline update` of an analytic document said "nothing to check" (the check's words)."""
    doc = write(tmp_path / "analytic.json", (DATA / "results_analytic.json").read_text())
    for call in (lambda: update_baseline(doc, tmp_path / "b.json"), lambda: load_for_check(doc)):
        with pytest.raises(UsageError, match=r"no timed record .*: a check and a baseline need timed records$"):
            call()


# ---------------------------------------------------------------- baseline update
def test_update_baseline_creates_then_replaces(tmp_path: Path) -> None:
    first = document([record(lognormal(seed=1)), record(lognormal(seed=3), op="relu", params=RELU)])
    second = document([record(lognormal(seed=2)), record(lognormal(seed=4), op="softmax", params={"rows": 4096})],
                      driver="570.86.10")
    first, second = write(tmp_path / "r1.json", dumps(first)), write(tmp_path / "r2.json", dumps(second))
    baseline = tmp_path / "baselines" / "h200.json"
    created = update_baseline(first, baseline)
    assert created.created and len(created.added) == 2
    assert baseline.read_bytes() == first.read_bytes()
    replaced = update_baseline(second, baseline)
    assert not replaced.created and replaced.kept == 1
    assert [a.split()[0] for a in replaced.added] == ["softmax"]
    assert [r.split()[0] for r in replaced.removed] == ["relu"]
    assert any("driver differs" in d for d in replaced.device_changes)
    text = "\n".join(replaced.lines())
    assert "1 added, 1 removed, 1 kept" in text and "+ softmax" in text and "- relu" in text
    assert baseline.read_bytes() == second.read_bytes()
    assert sorted(p.name for p in baseline.parent.iterdir()) == ["h200.json"]  # no temp file left behind


def test_update_baseline_refuses_another_gpu_without_force(tmp_path: Path) -> None:
    baseline = write(tmp_path / "h200.json", dumps(document([record(lognormal(seed=1))])))
    other = write(tmp_path / "a100.json", dumps(document([record(lognormal(seed=2), gpu="a100-sxm")],
                                                         name="NVIDIA A100-SXM4-80GB", spec_id="a100-sxm")))
    before = baseline.read_bytes()
    with pytest.raises(UsageError, match=r"another GPU.*--force"):
        update_baseline(other, baseline)
    assert baseline.read_bytes() == before
    update_baseline(other, baseline, force=True)
    assert baseline.read_bytes() == other.read_bytes()


def test_update_baseline_with_bad_input_touches_nothing(tmp_path: Path) -> None:
    baseline = write(tmp_path / "h200.json", dumps(document([record(lognormal(seed=1))])))
    before = baseline.read_bytes()
    bad = tmp_path / "r.json"
    bad.write_text('{"schema_version": 1, "rec')
    with pytest.raises(UsageError):
        update_baseline(bad, baseline)
    assert baseline.read_bytes() == before
    corrupted = tmp_path / "old.json"
    corrupted.write_text("{")
    good = write(tmp_path / "good.json", dumps(document([record(lognormal(seed=2))])))
    with pytest.raises(UsageError, match=r"unreadable.*--force"):
        update_baseline(good, corrupted)
    assert corrupted.read_text() == "{"
    update_baseline(good, corrupted, force=True)
    assert corrupted.read_bytes() == good.read_bytes()


def test_check_wide_shows_the_reason_column_it_promises(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # the narrow table ends with "--wide adds: reason"; `check --wide` must exist and show that column
    from helpers import DATA, run

    doc = str(DATA / "results_h200.json")
    code, out, _ = run(capsys, "check", doc, "--baseline", doc)
    assert code == 0 and "--wide adds: reason" in out
    code, out, err = run(capsys, "check", doc, "--baseline", doc, "--wide")
    assert code == 0, err
    assert "reason" in out.splitlines()[1] and "--wide adds" not in out


# ---------------------------------------------------------------- counter rules on a profile
def test_check_prints_counter_rules_in_bytes_not_seconds() -> None:
    base = profile_with_counters()
    cur = copy.deepcopy(base)
    conv1 = next(r for r in cur["records"] if r.get("module") == "conv1")
    conv1["counters"]["dram_bytes"] *= 1.2  # 209,152 -> 250,982.4 B: +20%, past dram_bytes:1%
    report = judge(validate_document(cur, "cur"), validate_document(base, "base"), "dram_bytes:1%")
    text = rendered(render_table(report, wide=True), width=400)
    line = next(x for x in text.splitlines() if "conv1" in x and "convolution" in x)
    # 209,152 B at 4 significant digits: 209.2 kB; 250,982 B: 251 kB. Before: "2.092e+05 s"
    assert "209.2 kB" in line and "251 kB" in line and " s " not in line, line
    assert text.splitlines()[0].strip() == "roofline check (dram_bytes; alpha 0.01)"  # before: "(time; ...)"


def test_check_command_refuses_empty_and_truncated_and_fails_on_missing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from helpers import run

    two = [record(lognormal(seed=1)), record(lognormal(seed=3), op="relu", params=RELU)]
    good = write(tmp_path / "good.json", dumps(document(two)))
    fewer = write(tmp_path / "fewer.json", dumps(document(two[:1])))
    empty = write(tmp_path / "empty.json", dumps(document([])))
    text = dumps(document(two))
    truncated = write(tmp_path / "truncated.json", text[: len(text) // 2])
    for res, base in ((good, empty), (empty, good), (good, truncated), (truncated, good)):
        code, out, err = run(capsys, "check", str(res), "--baseline", str(base))
        bad = empty if empty in (res, base) else truncated
        assert code == 2 and "passed" not in out, (res, base, out)
        assert len(err.strip().splitlines()) == 1 and str(bad) in err and "Traceback" not in err
    code, out, _ = run(capsys, "check", str(fewer), "--baseline", str(good))  # relu dropped from the results
    assert code == 1 and "missing" in out
    code, out, _ = run(capsys, "check", str(fewer), "--baseline", str(good), "--allow-missing")
    assert code == 0 and "1 missing" in out
    code, out, _ = run(capsys, "check", str(good), "--baseline", str(fewer))  # relu new: never fails
    assert code == 0 and "1 new" in out


# what timing_cpu writes in a measurement's notes when other processes took a share of our CPUs
BUSY = "busy machine while timing (other processes used 46% of 2 CPUs): the time may be slow"


@pytest.mark.parametrize("busy_side", ["results", "baseline"])
def test_worse_on_a_busy_machine_is_said_and_fails_unless_busy_ok(busy_side: str) -> None:
    # 7% slower, past median:5% and significant (test_worse_seven_percent_slower_is_a_regression), but one side
    # was timed while other processes used 46% of the CPUs: not a plain regression.
    cur = record(scaled(lognormal(seed=2), 1.07), notes=[BUSY] if busy_side == "results" else [])
    base = record(lognormal(seed=1), notes=[BUSY] if busy_side == "baseline" else [])
    report = judge(document([cur]), document([base]))
    row = report.rows[0]
    assert row.verdict == WORSE_BUSY and row.busy == (busy_side,)
    assert f"the {busy_side} timed on a busy machine (other processes used 46% of 2 CPUs)" in row.reason
    assert report.exit_code == 1 and report.regressions == (row,)
    assert any(n.startswith(f"busy machine: 1 of 1 {busy_side} records") for n in report.notes)
    doc = to_json(report)
    assert doc["rows"][0]["verdict"] == "worse_busy_machine" and doc["rows"][0]["busy_machine"] == [busy_side]
    assert "busy machine: 1 of 1" in to_markdown(report)
    assert "worse, busy" in rendered(render_table(report), width=200)
    ok = judge(document([cur]), document([base]), busy="ok")
    assert ok.rows[0].verdict == WORSE_BUSY and ok.exit_code == 0 and "reported, not failing" in " ".join(ok.notes)
    junit = ET.fromstring(to_junit(ok))
    assert junit.get("failures") == "0" and junit.find("testsuite/testcase/skipped") is not None


def test_busy_note_on_an_unchanged_record_stays_same_and_quiet_worse_stays_worse() -> None:
    same = judge(document([record(lognormal(seed=2), notes=[BUSY])]), document([record(lognormal(seed=1))]))
    assert same.rows[0].verdict == SAME and same.rows[0].busy == ("results",) and same.exit_code == 0
    assert any("busy machine" in n for n in same.notes)
    quiet = judge(document([record(scaled(lognormal(seed=2), 1.07))]), document([record(lognormal(seed=1))]))
    assert quiet.rows[0].verdict == WORSE and quiet.rows[0].busy == ()
    assert not any("busy machine" in n for n in quiet.notes)
    with pytest.raises(UsageError, match="--busy must be one of fail, ok"):
        judge(document([record(lognormal(seed=2))]), document([record(lognormal(seed=1))]), busy="maybe")


def test_a_cpu_document_against_a_gpu_one_names_both_devices() -> None:
    """A CPU document has no spec id: the difference names it by its name or kind, never '?'."""
    from roofline.ci.judge import device_differences
    from roofline.core.document import Document

    gpu = Document(device={"kind": "gpu", "spec_id": "h200-sxm", "name": "NVIDIA H200"}, records=[])
    cpu = Document(device={"kind": "cpu"}, records=[])
    assert device_differences(cpu, gpu) == ["GPU differs (baseline h200-sxm, results cpu)"]
