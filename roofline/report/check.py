"""The check report's outputs: a terminal table (rich), markdown for a PR comment, JUnit XML and JSON.

Each renders a `judge.Report` and computes nothing: the verdicts, values and reasons are the report's.
A report on profile documents has a "where" column after "op": a record's region and module, or "NAME
(whole region)" on a region's row (its op column says "region", its shape column what was compared).
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any

from roofline.ci.judge import (
    BETTER,
    BETTER_NOT_SIGNIFICANT,
    MIN_SAMPLES,
    MISSING,
    NEW,
    NOT_COMPARABLE,
    REGION,
    SAME,
    UNJUDGED,
    VERDICTS,
    WORSE,
    WORSE_BUSY,
    Report,
    Row,
)
from roofline.ci.rules import COUNTERS
from roofline.core.errors import RooflineError
from roofline.core.files import atomic_write, locked, refuse_existing
from roofline.core.format import duration, joules, si

# Significant figures of a time in the report: a 5% threshold needs the third and fourth digit to show why a
# change was (or was not) past it.
TIME_DIGITS = 4
# what the baseline and current columns hold, per --metric (the title names it)
METRIC_WORDS = {"time": "time", "fraction": "fraction of roofline", "energy": "J per call"}

COLUMNS = ("op", "variant", "dtype", "shape", "baseline", "current", "change", "p-value", "threshold", "verdict",
           "reason")
PROFILE_COLUMNS = (*COLUMNS[:1], "where", *COLUMNS[1:])


def _value(x: float | None, metric: str, statistic: str = "median") -> str:
    """A judged value in its unit: a counter rule's bytes or FLOPs (`dram_bytes`), else the metric's."""
    if x is None:
        return "-"
    if statistic in COUNTERS:
        return si(x, "FLOP" if statistic == "counter_flops" else "B", digits=TIME_DIGITS)
    if metric == "energy":
        return joules(x, digits=TIME_DIGITS)
    return f"{x:.1%}" if metric == "fraction" else duration(x, digits=TIME_DIGITS)


def columns(report: Report) -> tuple[str, ...]:
    """The report's columns: COLUMNS, or PROFILE_COLUMNS for a report on profile documents."""
    return PROFILE_COLUMNS if report.profile else COLUMNS


def cells(row: Row, cols: tuple[str, ...] = COLUMNS) -> list[str]:
    """One cell per column; baseline and current hold the judged statistic (the median when none was)."""
    base = row.baseline_value if row.baseline_value is not None else row.baseline_median
    cur = row.current_value if row.current_value is not None else row.current_median
    out = [row.op, row.variant or "-", row.dtype if row.kind != REGION else "-", row.shape,
           _value(base, row.metric, row.statistic), _value(cur, row.metric, row.statistic),
           "-" if row.change is None else f"{row.change * 100:+.1f}%",
           "-" if row.p_value is None else f"{row.p_value:.2g}", row.threshold or "-", row.verdict, row.reason]
    return [out[0], row.where or "-", *out[1:]] if "where" in cols else out


# ---------------------------------------------------------------- terminal
# The terminal table's columns (report.text.FitTable): what fits 80 columns always shows; the threshold
# (shared by most rows, so said once in the caption when left out), the reason (printed under the table for
# the rows that need one) and the full variant column come with --wide or a wider console.
def _terminal_columns(profile: bool) -> list[Any]:
    from roofline.report.text import WIDE, Column

    # a suite's op cell holds its dtype too ("rmsnorm bf16": two words that wrap, one column fewer at 80)
    cols = [Column("op", left=True, wrap=True, want=12)]
    if profile:  # where it ran tells a profile's rows apart better than their dtype and shapes
        cols.append(Column("where", left=True, wrap=True, want=14))
        cols.append(Column("dtype", left=True, drop=1))
    cols += [Column("shape", left=True, wrap=True, want=16, drop=1 if profile else 0),
             Column("baseline"), Column("current"), Column("change"), Column("p-value"),
             Column("verdict", left=True, wrap=True), Column("threshold", left=True, drop=2, quiet=True),
             Column("reason", left=True, wrap=True, drop=WIDE)]
    return cols


def render_table(report: Report, wide: bool = False) -> Any:
    """The terminal table (a report.text.FitTable: readable at 80 columns); `baseline`/`current` hold the
    judged statistic named in `threshold`."""
    from roofline.report.text import FitTable

    # what the baseline and current columns hold: the metric, and the counters a counter rule compares
    unit = ", ".join(([METRIC_WORDS.get(report.metric, report.metric)]
                      if report.rules.timing.rules else []) + [r.statistic for r in report.rules.counters.rules])
    from roofline.report.text import compact_params

    cols = columns(report)
    # as `run` shows them: sizes and the parameters off their operator's default (a conv2d row was 11 lines)
    shapes = compact_params([(row.op, row.params) for row in report.rows])
    rows = []
    for row, shape in zip(report.rows, shapes, strict=True):
        c = dict(zip(cols, cells(row, cols), strict=True))
        if not wide and row.kind != REGION:
            c["shape"] = shape + (f" [{row.case}]" if row.case else "")
        op = (c["op"] if c["variant"] == "-" else f"{c['op']} {c['variant']}").removeprefix("aten::")
        # the verdict's words wrap in the narrow view (`better not significant`); --json keeps the identifier
        verdict = c["verdict"] if wide else c["verdict"].replace("_", " ").replace("worse busy", "worse, busy")
        first = [op, c["where"], c["dtype"]] if report.profile else [f"{op} {c['dtype']}"]
        rows.append([*first, c["shape"], c["baseline"], c["current"], c["change"], c["p-value"], verdict,
                     c["threshold"], c["reason"]])
    # every rule in force: the check's own, and any a suite entry set for its record
    rules = dict.fromkeys([str(r) for r in report.rules.rules] +
                          [part for row in report.rows if row.threshold for part in row.threshold.split(",")])
    caption = [report.summary(), f"threshold: {', '.join(rules)}", *(f"note: {n}" for n in report.notes)]
    if not wide:
        caption.append("shape: sizes, and parameters off their operator's default (--wide: every one)")
    caption += [f"{r.name}: {r.verdict}: {r.reason}" for r in report.rows
                if r.reason and r.verdict not in (SAME, BETTER, BETTER_NOT_SIGNIFICANT)]
    return FitTable(_terminal_columns(report.profile), rows, title=f"roofline check ({unit}; alpha {report.alpha:g})",
                    caption=caption, wide=wide)


# ---------------------------------------------------------------- markdown
# What a name or a reason from a document must not do in a markdown page: open HTML (`<img onerror=...>`: the page
# holds it as markup), an entity, a link or an image (`[x](javascript:...)`), code, or a table cell's end. HTML's
# three as entities, the others escaped by a backslash (CommonMark's escapes), a line break as a space. (Emphasis
# is left: `not_comparable` reads as it is, and a `*` shows no markup a reader could not see.)
_MD_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": " ", "\n": " ",
                             **{ch: f"\\{ch}" for ch in "\\`[]|"}})


def _md_cell(text: str) -> str:
    """`text` as markdown shows it, character for character: nothing in it is read as markup (_MD_ESCAPES)."""
    return str(text).translate(_MD_ESCAPES)


def _md_table(rows: Sequence[Row], cols: tuple[str, ...]) -> list[str]:
    verdict = cols.index("verdict")
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in rows:
        row_cells = cells(row, cols)
        if row.verdict in (WORSE, WORSE_BUSY):
            row_cells[verdict] = f"**{row_cells[verdict]}**"
        lines.append("| " + " | ".join(_md_cell(c) if i != verdict else c for i, c in enumerate(row_cells)) + " |")
    return lines


def to_markdown(report: Report) -> str:
    """A PR comment or $GITHUB_STEP_SUMMARY section: status, notes, the rows that changed, then every row."""
    icon = ":x:" if not report.passed else ":white_check_mark:"
    lines = [f"### {icon} {_md_cell(report.summary())}", ""]
    if report.refused:
        lines += [f"**Refused** (exit 2): {_md_cell(report.refused)}", ""]
    unit = {"fraction": "fraction of each device's roofline (higher is better)",
            "energy": "joules per call (lower is better)"}.get(report.metric, "time")
    if report.rules.timing.rules:
        lines.append(f"Compared {unit}; a record fails only when its change is past the threshold **and** past "
                     "the between-run noise, where the documents hold several runs (a t-test on the runs) **and** "
                     f"significant on the samples (two-sided Mann–Whitney U, p < {report.alpha:g}).")
    if report.rules.counters.rules:
        lines.append(f"Compared Nsight Compute counters ({report.rules.counters}): one profiled call a side, so a "
                     "change past the threshold fails with no significance test.")
    lines.append("")
    if any(r.kind == REGION for r in report.rows):
        lines += [f"Rows with op `{REGION}` judge a whole region of the profile on its wall time per entry (a "
                  "slower region fails like any row), or, when it ran once, on its kernel time as a single sample "
                  "(no significance test: it can warn, never fail).", ""]
    lines += [f"- {_md_cell(n)}" for n in report.notes]
    if report.notes:
        lines.append("")
    cols = columns(report)
    notable = [r for r in report.rows if r.verdict != SAME]
    if notable:
        lines += _md_table(sorted(notable, key=lambda r: VERDICTS.index(r.verdict)), cols)
        lines.append("")
    lines += ["<details><summary>all records</summary>", "", *_md_table(report.rows, cols), "", "</details>", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- JUnit
def to_junit(report: Report) -> str:
    """JUnit XML: one testcase per record; a regression is a <failure>, records not compared are <skipped>; a
    refused check adds a testcase with an <error> saying why."""
    suite = ET.Element("testsuite", name="roofline check", tests=str(len(report.rows) + bool(report.refused)))
    failures = skipped = 0
    if report.refused:
        case = ET.SubElement(suite, "testcase", classname="roofline.check", name="records compared")
        ET.SubElement(case, "error", message=report.refused, type="refused")
    cols = columns(report)
    for row in report.rows:
        case = ET.SubElement(suite, "testcase", classname=f"roofline.{row.op}", name=row.name)
        detail = " ".join(f"{c}={v}" for c, v in zip(cols, cells(row, cols), strict=True))
        if row.verdict in report.failing_verdicts:
            failures += 1
            ET.SubElement(case, "failure", message=row.reason, type=row.verdict).text = detail
        elif row.verdict in (NOT_COMPARABLE, MISSING, NEW, WORSE_BUSY, UNJUDGED):
            skipped += 1
            ET.SubElement(case, "skipped", message=f"{row.verdict}: {row.reason}")
        else:
            ET.SubElement(case, "system-out").text = detail
    suite.set("failures", str(failures))
    suite.set("errors", str(int(bool(report.refused))))
    suite.set("skipped", str(skipped))
    root = ET.Element("testsuites", name="roofline", tests=suite.get("tests", "0"), failures=str(failures))
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


# ---------------------------------------------------------------- JSON
def to_json(report: Report) -> dict[str, Any]:
    """The report as plain data (json.dumps-able); field names are a public interface, like the results'."""
    return {"schema": "roofline-check", "schema_version": 1, "passed": report.passed, "exit_code": report.exit_code,
            "metric": report.metric, "alpha": report.alpha, "fail_on": str(report.rules),
            "allow_missing": report.allow_missing, "busy": report.busy, "min_samples": MIN_SAMPLES,
            "allow_unjudged": report.allow_unjudged, "refused": report.refused or None, "notes": list(report.notes),
            "counts": report.counts(), "summary": report.summary(), "rows": [r.to_dict() for r in report.rows]}


# ---------------------------------------------------------------- files
def write_outputs(report: Report, *, markdown: str | os.PathLike[str] | None = None,
                  junit: str | os.PathLike[str] | None = None, json_path: str | os.PathLike[str] | None = None) -> None:
    """Write the requested report files. Markdown is appended (GitHub's $GITHUB_STEP_SUMMARY convention), under
    its folder's lock (two checks appending to one summary do not interleave); JUnit and JSON files are replaced
    atomically. Only a regular file is appended to or replaced (a symbolic link, a FIFO, a device is refused).
    Errors are one-line RooflineErrors."""
    if markdown is not None:
        text = to_markdown(report).encode("utf-8")
        with locked(markdown, make_parents=True):  # its folder made, as the JUnit and JSON reports' are
            refuse_existing(markdown, force=True)
            try:  # O_NOFOLLOW: a symbolic link put there since is refused too
                fd = os.open(markdown, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o666)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(text)
            except OSError as exc:  # which of the reports, and why
                raise RooflineError(f"cannot write {markdown}: {exc.strerror or exc}") from None
    if junit is not None:
        atomic_write(junit, to_junit(report), make_parents=True)
    if json_path is not None:
        atomic_write(json_path, json.dumps(to_json(report), indent=2) + "\n", make_parents=True)
