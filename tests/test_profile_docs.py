"""Whole-model profile documents in `roofline plot` and `roofline check`.

The document is real: `roofline profile` on the CPU of tests/scripts/mlp_steps.py with 6 blocks (fc1 ->
relu -> fc2, batch 8: 18 records), warmed up outside the region, then the region "step" entered 6 times,
so every record has 6 per-call samples and the region 6 per-entry wall times. Slower runs are derived from
it by scaling its samples (a second real run on a shared 2-core CI machine differs by noise the gate must
not fail on, so it cannot be the injected change); each derivation says how it guarantees its outcome.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, profile_with_counters, run

from roofline.ci.judge import (
    ALPHA,
    BETTER,
    MIN_SAMPLES,
    MISSING,
    REGION,
    SAME,
    WORSE,
    WORSE_NOT_SIGNIFICANT,
    Report,
    Row,
    judge,
    records_by_key,
)
from roofline.ci.regions import WHOLE_RUN
from roofline.core.document import Document, read_document, write_document
from roofline.core.stats import median
from roofline.report.chart import build_figure, chart_model, is_numbered, point_numbers
from roofline.report.chart.model import PROFILE_LABELLED, PROFILE_MIN_PT, marker_pt, time_shares
from roofline.report.check import render_table, to_json, to_junit, to_markdown
from roofline.report.style import MARKER_PT
from roofline.report.terminal import UNLABELLED_CHAR, render_terminal

SCRIPT = ROOT / "tests" / "scripts" / "mlp_steps.py"
LAYERS, STEPS = 6, 6
RECORDS = 3 * LAYERS  # fc1, relu, fc2 per block


@pytest.fixture(scope="module")
def steps_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from roofline.capture.script import profile_script

    prof = profile_script(SCRIPT, ["--layers", str(LAYERS), "--steps", str(STEPS)], device="cpu")
    return prof.save(tmp_path_factory.mktemp("profile") / "steps.json")


@pytest.fixture
def steps(steps_path: Path) -> Document:
    return read_document(steps_path)


def _region(doc: Document, name: str = "step") -> dict[str, Any]:
    return doc.extra["profile"]["regions"][name]


def derived(doc: Document, factor: Callable[[int, int], float], walls: float | None = None) -> Document:
    """A copy of `doc` whose record j's call k took factor(j, k) times as long (the region's and the run's
    kernel time summed again), and whose region entries each took `walls` times as long (unchanged when
    None)."""
    out = copy.deepcopy(doc)
    recs = []
    for j, rec in enumerate(out.records):
        samples = [s * factor(j, k) for k, s in enumerate(rec.time_samples_s or [])]
        recs.append(dataclasses.replace(rec, time_samples_s=samples, time_s=sum(samples) / len(samples)))
    out.records = recs
    kernel = sum(sum(r.time_samples_s or []) for r in recs)  # every record is in the region "step"
    out.extra["profile"].update(kernel_time_s=kernel, attributed_time_s=kernel)
    _region(out)["time_s"] = kernel
    if walls is not None:
        step = _region(out)
        step["entry_wall_s"] = [w * walls for w in step["entry_wall_s"]]
    return out


def separating(samples: list[float]) -> float:
    """A factor that puts every scaled sample above every original one (max / min, and 5% more): the
    rank test then sees no overlap, its smallest p-value (6 vs 6: 2 / C(12, 6) = 0.0022 < ALPHA)."""
    return max(1.2, 1.05 * max(samples) / min(samples))


def region_row(report: Report, name: str = "step") -> Row:
    (row,) = [r for r in report.rows if r.kind == REGION and r.region == name]
    return row


# ---------------------------------------------------------------- the document
def test_the_profile_records_every_entry_of_the_region(steps: Document) -> None:
    step = _region(steps)
    assert step["entered"] == STEPS and len(step["entry_wall_s"]) == STEPS
    assert math.isclose(sum(step["entry_wall_s"]), step["wall_s"])  # wall_s is the entries' sum
    assert len(steps.records) == RECORDS
    assert all(r.count == STEPS and len(r.time_samples_s or []) == STEPS for r in steps.records)


# ---------------------------------------------------------------- plot
def test_a_point_per_op_with_its_share_of_the_time(steps: Document) -> None:
    chart = chart_model([steps])
    assert chart.profile and len(chart.points) == RECORDS and not chart.skipped
    for p in chart.points:  # share = time_s x count over the sum; time_s x count = the sum of its samples
        rec = steps.records[p.record]
        total = sum(sum(r.time_samples_s or []) for r in steps.records)
        assert p.share == pytest.approx(sum(rec.time_samples_s or []) / total)
    assert sum(p.share or 0 for p in chart.points) == pytest.approx(1.0)
    assert {p.label for p in chart.points if p.record == 0} == {"aten::addmm fused fp32 in 0.fc1"}


def test_marker_areas_follow_the_shares(steps: Document) -> None:
    fig = build_figure([steps])
    chart = chart_model([steps])
    sizes = {p.gid: line.get_markersize() for p in chart.points for line in fig.axes[0].get_lines()
             if line.get_gid() == f"point:{p.gid}"}
    assert len(sizes) == RECORDS
    by_share = sorted(chart.points, key=lambda p: p.share or 0)
    assert [sizes[p.gid] for p in by_share] == sorted(sizes.values())  # ordered by share
    big = [p for p in by_share if sizes[p.gid] > PROFILE_MIN_PT]
    assert len(big) >= 2
    a, b = big[0], big[-1]  # area (size squared) proportional to share
    assert (sizes[b.gid] / sizes[a.gid]) ** 2 == pytest.approx((b.share or 0) / (a.share or 1))
    assert all(sizes[p.gid] == max(PROFILE_MIN_PT, marker_pt(p)) for p in chart.points)


def test_only_the_largest_shares_are_numbered(steps: Document) -> None:
    chart = chart_model([steps])
    numbers = point_numbers(chart)
    top = sorted(chart.points, key=lambda p: -(p.share or 0))[:PROFILE_LABELLED]
    assert numbers == {p.gid: n for n, p in enumerate(top, 1)}  # 1 = the largest share
    fig = build_figure([steps])
    texts = {t.get_gid(): t.get_text() for t in fig.texts + fig.axes[0].texts if t.get_gid()}
    labels = {g: t for g, t in texts.items() if g.startswith("label:point:")}
    assert labels == {f"label:point:{p.gid}": str(n) for n, p in enumerate(top, 1)}
    shares = {g: t for g, t in texts.items() if g.startswith("table:share:")}
    assert shares == {f"table:share:{p.gid}": f"{p.share:.1%}" for p in top}
    rest = RECORDS - PROFILE_LABELLED
    held = sum(p.share or 0 for p in chart.points if p.gid not in numbers)
    assert texts["note:unlabelled"] == f"{rest} smaller ops not numbered ({held:.1%} of the time)"
    heads = [line.get_gid() for line in fig.axes[0].get_lines() if (line.get_gid() or "").startswith("headroom:")]
    assert heads and all(g.replace("headroom:", "") in numbers for g in heads)  # headroom on numbered ops only


def test_plot_cli_writes_the_profile_chart_as_svg(capsys: pytest.CaptureFixture[str], steps_path: Path,
                                                  tmp_path: Path) -> None:
    out = tmp_path / "profile.svg"
    code, _, err = run(capsys, "plot", str(steps_path), "-o", str(out))
    assert code == 0, err
    ids = [e.get("id") or "" for e in ET.parse(out).iter() if e.get("id")]
    assert sum(i.startswith("point:0:") for i in ids) == RECORDS
    assert sum(i.startswith("label:point:") for i in ids) == PROFILE_LABELLED
    assert sum(i.startswith("table:share:") for i in ids) == PROFILE_LABELLED
    assert "note:unlabelled" in ids and "note:skipped" not in ids


def test_terminal_chart_letters_the_top_ops(steps: Document) -> None:
    text = render_terminal([steps], width=160)  # wide enough for every legend column (the bound is the last)
    chart = chart_model([steps])
    top = sorted(chart.points, key=lambda p: -(p.share or 0))[:PROFILE_LABELLED]
    rows = [line.split() for line in text.splitlines() if line.endswith("memory-bound")]
    assert [r[0] for r in rows] == list("ABCDEFGH")  # one legend row per numbered op, A the largest
    assert [f"{r[r.index('time') - 2]}" for r in rows] == [f"{p.share:.1%}" for p in top]
    rest = RECORDS - PROFILE_LABELLED
    assert f"{UNLABELLED_CHAR}: {rest} smaller ops not numbered" in text


def test_ops_without_a_formula_are_listed_not_drawn(steps: Document) -> None:
    no_formula = dict(flops=None, bytes_read=None, bytes_written=None, bytes=None, arithmetic_intensity=None,
                      bound=None, attainable_flops_per_s=None, roofline_time_s=None, achieved_flops_per_s=None)
    steps.records[1] = dataclasses.replace(steps.records[1], **no_formula)
    chart = chart_model([steps])
    assert len(chart.points) == RECORDS - 1
    assert chart.skipped == ("aten::relu fp32 in 0: no FLOP formula",)
    # Its time still counts in the total the others' shares are of.
    assert sum(p.share or 0 for p in chart.points) == pytest.approx(1 - time_shares(steps)[1])


def test_an_analytic_profile_shares_roofline_time(steps: Document) -> None:
    untimed = dict(time_s=None, time_samples_s=None, achieved_flops_per_s=None, achieved_bytes_per_s=None,
                   roofline_fraction=None, timing=None)
    steps.records = [dataclasses.replace(r, **untimed) for r in steps.records]
    shares = time_shares(steps)
    total = sum((r.roofline_time_s or 0) * (r.count or 1) for r in steps.records)
    assert shares == [pytest.approx((r.roofline_time_s or 0) * (r.count or 1) / total) for r in steps.records]
    assert all(not p.timed for p in chart_model([steps]).points)


def test_a_plain_document_draws_as_before() -> None:
    plain = read_document(ROOT / "tests" / "data" / "results_h200.json")
    chart = chart_model([plain])
    assert not chart.profile and not is_numbered(chart)  # 6 records: labelled by name, as before
    assert all(p.share is None and marker_pt(p) == MARKER_PT for p in chart.points)


# ---------------------------------------------------------------- check
def test_a_profile_against_itself_passes(steps: Document) -> None:
    report = judge(steps, steps)
    assert report.passed and report.exit_code == 0
    assert {r.verdict for r in report.rows} == {SAME} and len(report.rows) == RECORDS + 1
    row = region_row(report)
    assert (row.kind, row.basis, row.n_baseline, row.n_current) == (REGION, "wall time per entry", STEPS, STEPS)
    assert report.rows[0] is row  # the whole region comes first
    ops = [r for r in report.rows if r.kind != REGION]
    assert all(r.n_current == STEPS and r.module is not None for r in ops)
    assert {r.where for r in ops if r.op == "aten::relu"} == {f"step: {k}" for k in range(LAYERS)}


def test_noise_within_the_threshold_passes(steps: Document) -> None:
    # +-2% alternating by call and record: every median moves by at most 2%, under the 5% threshold.
    noisy = derived(steps, lambda j, k: 1.02 if (j + k) % 2 else 0.98, walls=1.02)
    report = judge(noisy, steps)
    assert report.passed, [r.reason for r in report.rows if r.verdict != SAME]


def test_one_slower_op_fails_the_gate(steps: Document) -> None:
    slow_at = 3  # block 1's fc1
    f = separating(steps.records[slow_at].time_samples_s or [])
    report = judge(derived(steps, lambda j, k: f if j == slow_at else 1.0), steps)
    assert not report.passed and report.exit_code == 1
    (worse,) = report.regressions
    assert worse.verdict == WORSE and worse.where == "step: 1.fc1" and worse.p_value is not None
    assert worse.p_value < ALPHA and worse.change == pytest.approx(f - 1)


def test_a_slower_region_fails_the_gate(steps: Document) -> None:
    walls = _region(steps)["entry_wall_s"]
    f = separating(walls)
    report = judge(derived(steps, lambda j, k: 1.0, walls=f), steps)
    row = region_row(report)
    assert row.verdict == WORSE and row in report.regressions and not report.passed
    assert row.change == pytest.approx(f - 1) and row.p_value is not None and row.p_value < ALPHA
    faster = judge(steps, derived(steps, lambda j, k: 1.0, walls=f))
    assert region_row(faster).verdict == BETTER and faster.passed


def _once(doc: Document) -> Document:
    """The document as if its region had run once: one entry, its kernel time that of all six."""
    out = copy.deepcopy(doc)
    step = _region(out)
    step.update(entered=1, entry_wall_s=[step["wall_s"]])
    return out


def test_a_region_that_ran_once_is_a_single_sample_comparison(steps: Document) -> None:
    base = _once(steps)
    kernel = _region(base)["time_s"]
    slower = _once(derived(steps, lambda j, k: 1.2))  # every call 20% slower: kernel time 20% more
    report = judge(slower, base)
    row = region_row(report)
    assert row.basis == "kernel time" and (row.n_baseline, row.n_current) == (1, 1)
    assert row.baseline_value == pytest.approx(kernel) and row.change == pytest.approx(0.2)
    assert row.verdict == WORSE_NOT_SIGNIFICANT and row.p_value is None
    assert row.reason == ("kernel time 20.0% slower, past 5.0%, but one sample per side (the baseline ran it once "
                          "and the results ran it once) has no significance test: run the step in "
                          f"`roofline.region` at least {MIN_SAMPLES} times to gate it")
    assert row not in report.regressions  # no p-value, no failure
    assert region_row(judge(_once(derived(steps, lambda j, k: 1.01)), base)).verdict == SAME


def test_a_document_without_entry_walls_compares_kernel_time_per_entry(steps: Document) -> None:
    old = copy.deepcopy(steps)
    del _region(old)["entry_wall_s"]  # a profile made before the entries were recorded
    row = region_row(judge(old, steps))
    assert row.basis == "kernel time per entry" and row.n_current == 1 and row.verdict == SAME
    assert row.current_value == pytest.approx(_region(steps)["time_s"] / STEPS)


def test_a_profile_without_regions_is_one_whole_run(steps: Document) -> None:
    whole = copy.deepcopy(steps)
    whole.extra["profile"]["regions"] = {}
    row = region_row(judge(whole, whole), WHOLE_RUN)
    assert row.basis == "kernel time" and row.verdict == SAME
    assert row.current_value == pytest.approx(whole.extra["profile"]["kernel_time_s"])


def test_a_region_only_in_the_baseline_is_missing(steps: Document) -> None:
    base = copy.deepcopy(steps)
    base.extra["profile"]["regions"]["decode"] = dict(_region(steps))
    report = judge(steps, base)
    # a region the results lack fails, as a missing record does, unless the user allows it
    assert region_row(report, "decode").verdict == MISSING and not report.passed
    assert judge(steps, base, allow_missing=True).passed


def test_fraction_of_the_roofline_per_region(steps: Document) -> None:
    row = region_row(judge(steps, steps, metric="fraction"))
    roof = sum((r.roofline_time_s or 0) * (r.count or 1) for r in steps.records) / STEPS  # per entry
    assert row.verdict == SAME and row.metric == "fraction"
    assert row.current_value == pytest.approx(median([roof / w for w in _region(steps)["entry_wall_s"]]))


def test_records_sharing_a_key_are_told_apart_by_their_outputs(steps: Document) -> None:
    a = steps.records[1]  # two reductions of one input in one module: same op, module and inputs
    steps.records = [a, dataclasses.replace(a, output_shapes=[[1]]), dataclasses.replace(a)]
    keys = records_by_key(steps, "results")
    assert len(keys) == 3
    # Output shapes tell the first apart; input dtypes do not tell the other two apart: program order does.
    assert [k[4] for k in keys] == ["out=[[8, 256]] in=['fp32'] #1", "out=[[1]]", "out=[[8, 256]] in=['fp32'] #2"]


def test_reports_say_which_rows_are_regions(steps: Document) -> None:
    report = judge(derived(steps, lambda j, k: 1.0, walls=separating(_region(steps)["entry_wall_s"])), steps)
    assert [c.header for c in render_table(report).columns][:2] == ["op", "where"]
    md = to_markdown(report)
    assert "| op | where |" in md and "Rows with op `region` judge a whole region" in md
    assert "| region | step (whole region) |" in md
    cases = ET.fromstring(to_junit(report)).iter("testcase")
    failed = [c for c in cases if c.find("failure") is not None]
    assert [(c.get("classname"), c.get("name")) for c in failed] == [("roofline.region",
                                                                      "region step (wall time per entry)")]
    rows = to_json(report)["rows"]
    assert rows[0]["kind"] == "region" and rows[0]["region"] == "step" and rows[0]["verdict"] == WORSE
    assert {r["kind"] for r in rows[1:]} == {"record"} and all(r["module"] is not None for r in rows[1:])
    assert "1 of the rows is a whole region" in report.summary()


def test_check_cli_on_profile_documents(capsys: pytest.CaptureFixture[str], steps: Document, steps_path: Path,
                                        tmp_path: Path) -> None:
    slow = write_document(derived(steps, lambda j, k: 1.0, walls=separating(_region(steps)["entry_wall_s"])),
                          tmp_path / "slow.json")
    code, out, err = run(capsys, "check", str(steps_path), "--baseline", str(steps_path))
    assert code == 0 and "roofline check passed" in out, err
    code, out, err = run(capsys, "check", str(slow), "--baseline", str(steps_path), "--json",
                         str(tmp_path / "check.json"))
    assert code == 1 and "step (whole" in out, err
    rows = json.loads((tmp_path / "check.json").read_text())["rows"]
    assert [(r["kind"], r["verdict"]) for r in rows if r["verdict"] != SAME] == [("region", WORSE)]
    assert MIN_SAMPLES <= STEPS  # the samples per side the rank test needs, or nothing could fail


def test_the_root_module_has_one_name_in_every_view() -> None:
    from roofline.ci.judge import where_text
    from roofline.core.document import validate_document
    from roofline.report.html import report_html
    from roofline.report.profile import ROOT as ROOT_MODULE

    # ops the root module runs itself: the profile views said "(root)", check and the HTML report "(top)"
    assert ROOT_MODULE == "(root)" and where_text("", "forward") == "forward: (root)"
    assert where_text(None, None) == "(root)"
    doc = profile_with_counters()
    doc["records"][0]["module"] = ""  # conv1's op, as if the root module ran it
    page = report_html([validate_document(doc, "cnn")])
    assert "(top)" not in page and "forward: (root)" in page
