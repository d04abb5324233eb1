"""One self-contained HTML report of results documents: `roofline report` and `roofline check --html`.

The page opens offline: its one stylesheet and one script (html_assets/, read when the page is built) and
all its data are inline; nothing is fetched. What it shows comes from the same places as the other views,
so the numbers agree with them: the roofs, points, axis ranges and point numbers from the chart model
(`report.chart.model`, as the PNG chart), the texts from `core.format`, a profile's what-if and roll-ups
from its view model (`analysis.profile_view`, as the terminal views), a check's verdicts from `ci.judge`
(cells as in `report.check`).

Python decides every number and text; the script only places them (chart, hover details, the records table)
and sorts and filters tables. Records go into one JSON block, each once: a 300-op profile makes about 280 KB.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline._version import __version__
from roofline.analysis.profile_view import ProfileView, profile_view
from roofline.core.counters import excess_basis
from roofline.core.document import Document, now_iso
from roofline.core.files import atomic_write, refuse_existing
from roofline.core.format import count, duration, joules, number, percent, si
from roofline.core.model import pipe_label
from roofline.core.record import ROOT_MODULE, Record
from roofline.report.chart.model import (
    Chart,
    Point,
    chart_model,
    device_name,
    is_profile,
    marker_pt,
    point_numbers,
    skipped_text,
    time_shares,
    unlabelled_note,
)
from roofline.report.rows import counter_rows
from roofline.report.style import BOUND_COLOURS, DOC_COLOURS, DOC_MARKERS, OTHER_BOUND_COLOUR

if TYPE_CHECKING:
    from roofline.ci.judge import Report

ASSETS = Path(__file__).with_name("html_assets")
# Roll-up tables list this many groups (by time); the rest are counted in a note under the table.
ROLLUP_ROWS = 30
# Significant digits kept for the numbers the script places and sorts by: sub-pixel on the chart, and more
# than any cell shows.
DATA_DIGITS = 6

Cell = str | tuple[float | None, str] | tuple[float | None, str, str]


# ---------------------------------------------------------------- small helpers
def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _r(x: float | None) -> float | None:
    """A number for the data block: DATA_DIGITS significant digits, None for nothing or not finite."""
    if x is None or not math.isfinite(x):
        return None
    return float(f"{x:.{DATA_DIGITS}g}")


def _signed_duration(x: float | None) -> str:
    """A duration that may be negative (an op measured faster than its roof): '-3.2 µs'."""
    if x is None:
        return "-"
    return ("-" if x < 0 else "") + duration(abs(x))


def _facts(pairs: Sequence[tuple[str, str]]) -> str:
    """A definition list of (name, text) pairs; pairs with an empty text are left out."""
    rows = "".join(f"<dt>{_esc(k)}</dt><dd>{_esc(v)}</dd>" for k, v in pairs if v)
    return f'<dl class="facts">{rows}</dl>'


# Where a wrapping cell may break besides its spaces: after a dot, slash or comma before a name (a module
# path between its components, never inside a name or a number: report.js's BREAK_AFTER).
BREAK_AFTER = re.compile(r"(?<=[./,])(?=[A-Za-z_{(])")


def _breakable(text: str) -> str:
    """`text` escaped, with <wbr> where it may break (BREAK_AFTER)."""
    return "<wbr>".join(_esc(part) for part in BREAK_AFTER.split(text))


def _table(cols: Sequence[tuple[str, bool]], rows: Sequence[Sequence[Cell]], table_id: str = "",
           short: bool = True, filter: bool = False, wrap: Sequence[str] = ()) -> str:
    """A sortable table: cols are (header, numeric); a cell is its text, or (sort value, text[, css class]).
    A `short` table shows all its rows (else it scrolls); a `filter` table gets a filter box; the columns named
    in `wrap` wrap their text (long shapes and reasons), the others keep it on one line."""
    head = "".join(f'<th class="num">{_esc(h)}</th>' if num else f"<th>{_esc(h)}</th>" for h, num in cols)
    body = []
    for row in rows:
        cells = []
        for (name, num), cell in zip(cols, row, strict=True):
            cls = ["num"] if num else ["wrap"] if name in wrap else []
            value: float | None = None
            if isinstance(cell, tuple):
                value, text = cell[0], cell[1]
                cls += [cell[2]] if len(cell) > 2 else []
            else:
                text = cell
            attrs = (f' class="{" ".join(cls)}"' if cls else "") + (f' data-v="{_r(value)}"' if value is not None
                                                                      else "")
            cells.append(f"<td{attrs}>{_breakable(text) if 'wrap' in cls else _esc(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    ident = f' id="{table_id}"' if table_id else ""
    classes = "data sortable" + (" filter" if filter else "")
    return (f'<div class="tablewrap{" short" if short else ""}"><table class="{classes}"{ident}><thead><tr>{head}'
            f'</tr></thead><tbody>{"".join(body)}</tbody></table></div>')


def _section(ident: str, title: str, body: str) -> str:
    return f'<section id="{ident}"><h2>{_esc(title)}</h2>{body}</section>'


# ---------------------------------------------------------------- the data block: chart and records
def _chart_data(chart: Chart, numbers: Mapping[str, int]) -> dict[str, Any]:
    notes = []
    if chart.skipped:
        notes.append(f"not drawn ({len(chart.skipped)}, listed in the table): " + skipped_text(chart.skipped))
    if (note := unlabelled_note(chart, dict(numbers))) is not None:
        notes.append(note + ": hover them, or find them in the table below")
    roofs = [{"d": r.doc, "src": r.source, "kind": r.kind, "key": r.key, "text": r.text, "v": _r(r.value),
              "ridge": _r(r.ridge), "xstart": _r(r.x_start), "xend": _r(r.x_end)} for r in chart.roofs]
    return {"title": chart.title, "series": list(chart.series), "sources": list(chart.sources),
            "x": [_r(v) for v in chart.x_range], "y": [_r(v) for v in chart.y_range], "profile": chart.profile,
            "roofs": roofs, "notes": notes, "markers": list(DOC_MARKERS),
            "colours": {"bounds": dict(BOUND_COLOURS), "other": OTHER_BOUND_COLOUR, "docs": list(DOC_COLOURS)}}


def _headroom_s(rec: Record) -> float | None:
    """The time an op would save at its roof, over all its calls: (time - roofline time) x count."""
    if rec.time_s is None or rec.roofline_time_s is None:
        return None
    return (rec.time_s - rec.roofline_time_s) * (rec.count or 1)


def _where(rec: Record) -> str:
    return (f"{rec.region}: " if rec.region else "") + (rec.module or ROOT_MODULE) if rec.count is not None else ""


# The hover details of a point, in this order; a record's are its texts for these names, null where it has none
# (the names are written once in the data block, not once per record).
TIP_NAMES = ("document", "shape", "dtype", "module", "time", "share of time", "roofline time", "% of roof",
             "headroom", "bound", "intensity", "achieved", "attainable", "SM clock", "counters", "verdict",
             "not drawn")


def _tip(rec: Record, point: Point | None, share: float | None, series: str | None, why: str | None
         ) -> list[str | None]:
    """The hover details of one record: a text (or None) per name of TIP_NAMES."""
    calls = rec.count or 1
    tip: dict[str, str] = {"document": series or "", "shape": rec.shape, "module": _where(rec),
                           "dtype": rec.dtype + (f" on {rec.compute_pipe_label}" if rec.compute_pipe_label else ""),
                           "share of time": percent(share) if share is not None else "",
                           "roofline time": duration(rec.roofline_time_s) if rec.roofline_time_s is not None else "",
                           "bound": f"{rec.bound}-bound" if rec.bound else "", "verdict": rec.verdict or "",
                           "not drawn": why or ""}
    if rec.time_s is not None:
        total = f" per call x {count(calls)} calls = {duration(rec.time_s * calls)}" if calls > 1 else ""
        tip.update({"time": duration(rec.time_s) + total, "% of roof": percent(rec.roofline_fraction),
                    "headroom": _signed_duration(_headroom_s(rec))})
    if point is not None:
        tip["intensity"] = f"{number(point.ai)} FLOP/byte"
        tip["achieved" if point.timed else "attainable"] = (f"{si(point.flops_per_s, 'FLOP/s')} of "
                                                            f"{si(point.roof_flops_per_s, 'FLOP/s')}")
    if rec.sm_clock_mhz is not None:
        tip["SM clock"] = f"{rec.sm_clock_mhz:.0f} MHz"
    if rec.counters is not None:  # what Nsight Compute counted (`--counters`), as the record view says it
        tip["counters"] = "; ".join(f"{name}: {text}" for name, text in counter_rows(rec))
    return [tip.get(name) or None for name in TIP_NAMES]


def _records_data(docs: Sequence[Document], chart: Chart, numbers: Mapping[str, int]
                  ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each record once: its point (if drawn), hover details and advice, and its row of the records table."""
    points = {p.gid: p for p in chart.points}
    # chart_model skips records in document order, one entry each: the k-th record not drawn is the k-th entry.
    skipped = iter(chart.skipped)
    several = len(docs) > 1
    profile = any(is_profile(d) for d in docs)
    verdicts = any(r.verdict for d in docs for r in d.records)
    cols: list[dict[str, Any]] = [{"h": "#", "num": True, "tip": "the point's number on the chart"}]
    cols += [{"h": "document"}] if several else []
    # the text columns wrap (a module path at its dots) so that the table fits a 1400 px window: unwrapped,
    # the operator, shape and module columns made a profile's table 1,558 px wide, scrolled sideways
    cols += [{"h": "operator", "wrap": True}, {"h": "shape", "wrap": True}]
    cols += [{"h": "module", "wrap": True}, {"h": "calls", "num": True}] if profile else []
    cols += [{"h": "time", "num": True, "tip": "median per call"}]
    cols += [{"h": "total", "num": True, "tip": "time x calls"}] if profile else []
    cols += [{"h": "share", "num": True, "tip": "of the document's time"},
             {"h": "roofline time", "num": True, "tip": "per call, at the roof"},
             {"h": "headroom", "num": True, "tip": "(time - roofline time) x calls: what reaching the roof saves"},
             {"h": "% of roof", "num": True}, {"h": "bound"}]
    counted = [r.counters for d in docs for r in d.records if r.counters is not None]
    cols += [{"h": "bytes × min", "num": True, "tip": f"Nsight Compute's {excess_basis(counted)} bytes / the "
              "model's minimum"}] if counted else []
    energy = any(r.energy for d in docs for r in d.records)
    cols += [{"h": "J/call", "num": True, "tip": "energy per call (--energy: the NVML counter, or a profile's share)"},
             {"h": "FLOP/J", "num": True}] if energy else []
    cols += [{"h": "verdict", "wrap": True}] if verdicts else []
    records: list[dict[str, Any]] = []
    rows: list[list[Any]] = []
    for i, doc in enumerate(docs):
        shares = time_shares(doc)
        for j, rec in enumerate(doc.records):
            gid = f"{i}:{j}"
            point, n = points.get(gid), numbers.get(gid)
            name = point.label if point else rec.label + (f" in {rec.module}" if rec.module else "")
            why = next(skipped, "").rsplit(": ", 1)[-1] if point is None else None
            p = None
            if point is not None:
                p = [_r(point.ai), _r(point.flops_per_s), _r(point.roof_flops_per_s), int(point.timed),
                     round(marker_pt(point), 2), int(point.has_headroom)]
            advice = [str(a.get("message")) for a in rec.advice or [] if isinstance(a, Mapping) and a.get("message")]
            records.append({"d": i, "n": n, "label": name, "bound": str(rec.bound or "unknown"), "p": p,
                            "tip": _tip(rec, point, shares[j], chart.series[i] if several else None, why),
                            "advice": advice})
            total = rec.time_s * (rec.count or 1) if rec.time_s is not None else None
            head = _headroom_s(rec)
            row: list[Any] = [len(records) - 1, [n, str(n) if n is not None else ""]]
            row += [chart.series[i]] if several else []
            row += [rec.label, rec.shape]
            row += [_where(rec), [rec.count, count(rec.count) if rec.count is not None else "-"]] if profile else []
            row += [[_r(rec.time_s), duration(rec.time_s)]]
            row += [[_r(total), duration(total)]] if profile else []
            row += [[_r(shares[j]), percent(shares[j])], [_r(rec.roofline_time_s), duration(rec.roofline_time_s)],
                    [_r(head), _signed_duration(head)], [_r(rec.roofline_fraction), percent(rec.roofline_fraction)],
                    str(rec.bound or "-")]
            if counted:
                x = rec.counters.excess_traffic if rec.counters is not None else None
                row += [[_r(x), f"{x:.2f}" if x is not None else "-"]]
            if energy:
                ej, fj = (rec.energy or {}).get("energy_j"), (rec.energy or {}).get("flops_per_j")
                row += [[_r(ej), joules(ej)], [_r(fj), si(fj, "FLOP/J") if fj else "-"]]
            row += [rec.verdict or ""] if verdicts else []
            rows.append(row)
    if profile:  # a profile's table opens on its largest shares, as its chart numbers them
        share = [c["h"] for c in cols].index("share") + 1  # a row starts with its record's index
        rows.sort(key=lambda row: -(row[share][0] or 0.0))
    return records, {"cols": cols, "rows": rows}


# ---------------------------------------------------------------- the machine, clocks and throttling
def _span(values: Sequence[float], unit: str) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:.0f} {unit}" if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f} {unit}"


def _state(state: Mapping[str, Any]) -> str:
    """The device's state read after the run: 'SM 1980 MHz (max 1980), memory 3201 MHz, 134 W of 700 W, 33 °C'."""
    def med(key: str) -> float | None:
        v = state.get(key)
        return v.get("median") if isinstance(v, Mapping) else None

    parts = []
    if (sm := med("sm_mhz")) is not None:
        parts.append(f"SM {sm:.0f} MHz" + (f" (max {state['max_sm_mhz']:.0f})" if state.get("max_sm_mhz") else ""))
    if (mem := med("mem_mhz")) is not None:
        parts.append(f"memory {mem:.0f} MHz")
    if (pw := med("power_w")) is not None:
        parts.append(f"{pw:.0f} W" + (f" of {state['power_limit_w']:.0f} W" if state.get("power_limit_w") else ""))
    if (tc := med("temperature_c")) is not None:
        parts.append(f"{tc:.0f} °C")
    return ", ".join(parts)


def _clock_facts(doc: Document) -> list[tuple[str, str]]:
    device = doc.device or {}
    after = device.get("state_after")
    state: Mapping[str, Any] = after if isinstance(after, Mapping) else {}
    timed = [r for r in doc.records if r.timed]
    clocks = [r.clocks for r in timed if r.clocks is not None]
    sm = [c.sm_median_mhz for c in clocks if c.sm_median_mhz is not None]
    sources = sorted({c.sm_mhz_source for c in clocks if c.sm_mhz_source})
    reasons = sorted({x for c in clocks for x in c.limited_by or []} | set(state.get("limited_by") or []))
    throttled = sum(bool(c.limited_by) for c in clocks)
    requoted = sum(r.peak_flops_per_s_datasheet is not None for r in doc.records)
    facts = [("after the run", _state(state))]
    if sm:
        facts.append(("SM clock while timed", f"{_span(sm, 'MHz')} (median per record, {len(sm)} records"
                      + (f"; {', '.join(sources)}" if sources else "") + ")"))
    if clocks or state:
        facts.append(("throttling", f"{throttled} of {len(clocks)} records limited by {', '.join(reasons)}"
                      if reasons else "no throttle reason reported"))
    if requoted:
        facts.append(("re-quoted peaks", f"{requoted} record{'s' if requoted > 1 else ''}: the compute peak "
                      "re-quoted at the observed SM clock (their % of roof is against it)"))
    return facts


def _command(doc: Document) -> str:
    cmd = doc.extra.get("command", doc.device.get("command") if doc.device else None)
    if isinstance(cmd, list):
        return " ".join(str(x) for x in cmd)
    return str(cmd) if cmd else "not recorded in the document"


def _ceilings_table(device: Mapping[str, Any]) -> str:
    rows: list[list[Cell]] = []
    for field in ("ceilings", "measured_ceilings"):
        block = device.get(field)
        if not isinstance(block, Mapping):
            continue
        source = "measured" if field == "measured_ceilings" else str(block.get("source") or "datasheet")
        for key, v in (block.get("compute_flops_per_s") or {}).items():
            if isinstance(v, (int, float)):
                rows.append([source, pipe_label(str(key)), (v, si(v, "FLOP/s"))])
        for key, v in (block.get("memory_bytes_per_s") or {}).items():
            if isinstance(v, (int, float)):
                rows.append([source, str(key).upper(), (v, si(v, "B/s"))])
    return _table([("source", False), ("roof", False), ("peak", True)], rows) if rows else ""


def _machine_card(doc: Document, name: str, path: str | None) -> str:
    d = doc.device or {}
    mem = d.get("memory_total_bytes")
    facts = [("file", path or ""), ("device", device_name(doc)),
             ("spec", " ".join(str(x) for x in (d.get("spec_name"), f"({d['spec_id']})" if d.get("spec_id") else "")
                               if x)),
             ("kind", str(d.get("kind") or "")), ("memory", si(mem, "B") if isinstance(mem, (int, float)) else ""),
             ("driver", str(d.get("driver_version") or "")), ("CUDA", str(d.get("cuda_version") or "")),
             ("torch", str(d.get("torch_version") or "")), ("timed on", str(d.get("time_device") or "")),
             ("suite", str(doc.extra.get("suite") or d.get("suite") or "")), ("created", doc.created),
             ("tool version", f"roofline {doc.tool_version}" if doc.tool_version else "unknown"),
             ("command line", _command(doc)), *_clock_facts(doc)]
    return (f'<div class="card"><h3>{_esc(name)}</h3><div class="cols"><div>{_facts(facts)}</div>'
            f'<div><h3>ceilings</h3>{_ceilings_table(d)}</div></div></div>')


# ---------------------------------------------------------------- a profile: summary, what-if, roll-ups
def _profile_summary(view: ProfileView) -> str:
    summary = view.summary

    def t(key: str) -> str:
        v = summary.get(key)
        return duration(float(v)) if isinstance(v, (int, float)) else ""

    skipped = summary.get("skipped_ops")
    found = summary.get("regions")
    regions: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    facts = [("model", str(summary.get("name") or "")), ("mode", str(summary.get("mode") or "")),
             ("timing", str(summary.get("timing_method") or "")), ("wall time", t("wall_s")),
             ("wall time, plain call", t("wall_uninstrumented_s")), ("kernel time", t("kernel_time_s")),
             ("roofline time", t("roofline_time_s")), ("GPU busy", t("gpu_busy_s")), ("GPU idle", t("gpu_idle_s")),
             ("op calls", count(summary["calls"]) if isinstance(summary.get("calls"), int) else ""),
             ("records", str(summary.get("records") or "")),
             ("coverage", percent(summary["coverage"]) if isinstance(summary.get("coverage"), (int, float)) else ""),
             ("FLOPs", si(summary["flops"], "FLOP") if isinstance(summary.get("flops"), (int, float)) else ""),
             ("bytes", si(summary["bytes"], "B") if isinstance(summary.get("bytes"), (int, float)) else ""),
             ("not timed (views)", ", ".join(f"{k} x{v}" for k, v in skipped.items())
              if isinstance(skipped, Mapping) else ""),
             ("regions", ", ".join(f"{k} ({duration(v.get('time_s'))} kernel time, entered {v.get('entered')}x)"
                                   for k, v in regions.items() if isinstance(v, Mapping)))]
    notes = "".join(f'<p class="note">{_esc(n)}</p>' for n in summary.get("notes") or [])
    return _facts(facts) + notes


def _whatif(view: ProfileView) -> str:
    w = view.whatif
    parts = ["<h3>what if</h3>"]
    if w.amdahl is not None:
        a = w.amdahl
        names = {"memory": "memory-bound ops at the memory roof", "compute": "compute-bound ops at the compute roof",
                 "both": "every op at its roof"}
        rows: list[list[Cell]] = [[names[s.name], (s.time_s, duration(s.time_s)), (s.saved_s, duration(s.saved_s)),
                                   (s.share, percent(s.share)), (s.records, str(s.records))]
                                  for s in (a.memory, a.compute, a.both)]
        parts.append(f"<p>The records' total, {_esc(duration(a.total_s))}, if …</p>")
        parts.append(_table([("scenario", False), ("time", True), ("saved", True), ("share", True),
                             ("ops faster", True)], rows))
        if a.unmodelled_s:
            parts.append(f'<p class="note">{_esc(duration(a.unmodelled_s))} of ops without a formula keep their '
                         "measured time.</p>")
    if w.fusions:
        rows = [[f.label, f.title, f.module or ROOT_MODULE, (f.occurrences, count(f.occurrences)),
                 (f.bytes_saved, si(f.bytes_saved, "B")), (f.saved_s, duration(f.saved_s)), (f.share, percent(f.share))]
                for f in w.fusions]
        parts.append("<p>Fusions the dataflow allows, by time saved:</p>")
        parts.append(_table([("fusion", False), ("ops", False), ("module", False), ("occurrences", True),
                             ("bytes saved", True), ("time saved", True), ("share", True)], rows, "fusions",
                            short=len(rows) <= ROLLUP_ROWS, filter=len(rows) > ROLLUP_ROWS, wrap=("module",)))
    if w.idle is not None:
        parts.append(f"<p>{_esc(w.idle.message)}</p>")
    parts += [f'<p class="note">{_esc(n)}</p>' for n in w.notes]
    return "".join(parts)


def _rollups(view: ProfileView) -> str:
    parts = []
    for by, title in (("module", "by module (a layer's repeats as one row: layers.{0..15})"), ("op", "by op type")):
        lines = view.rollups[by]
        rows: list[list[Cell]] = [[x.key or ROOT_MODULE, (x.time_s, duration(x.time_s)), (x.share, percent(x.share)),
                                   (x.calls, count(x.calls)), (x.roofline_s, duration(x.roofline_s)),
                                   (x.headroom_s, _signed_duration(x.headroom_s))] for x in lines[:ROLLUP_ROWS]]
        parts.append(f"<h3>{_esc(title)}</h3>")
        parts.append(_table([(by, False), ("time", True), ("share", True), ("calls", True), ("roofline time", True),
                             ("headroom", True)], rows, f"rollup-{by}", filter=len(rows) > 10, wrap=("module",)))
        if len(lines) > ROLLUP_ROWS:
            rest = lines[ROLLUP_ROWS:]
            parts.append(f'<p class="note">{len(rest)} more, {_esc(percent(sum(x.share or 0.0 for x in rest)))} of the '
                         "time.</p>")
    return "".join(parts)


def _profile_section(doc: Document, name: str) -> str:
    view = profile_view(doc)  # its module roll-up at full depth
    return f"<h3>{_esc(name)}</h3>" + _profile_summary(view) + _whatif(view) + _rollups(view)


# ---------------------------------------------------------------- a check's verdicts
def _check_section(report: Report) -> str:
    from roofline.report.check import cells, columns

    cols = columns(report)
    numeric = {"baseline", "current", "change", "p-value"}
    rows: list[list[Cell]] = []
    for row in report.rows:
        row_cells = cells(row, cols)
        base = row.baseline_value if row.baseline_value is not None else row.baseline_median
        cur = row.current_value if row.current_value is not None else row.current_median
        values = {"baseline": base, "current": cur, "change": row.change, "p-value": row.p_value}
        rows.append([(values[c], text) if c in numeric else (None, text, f"v-{row.verdict}") if c == "verdict"
                     else text for c, text in zip(cols, row_cells, strict=True)])
    status = "pass" if report.passed else "fail"
    unit = "fraction of each device's roofline (higher is better)" if report.metric == "fraction" else "time"
    body = [f'<p><span class="status {status}">{_esc(report.summary())}</span></p>',
            f"<p>Compared {_esc(unit)}; a record fails only when its change is past the threshold, past the "
            f"between-run noise when the documents hold several runs, <b>and</b> significant (two-sided "
            f"Mann–Whitney U, p &lt; {report.alpha:g}).</p>",
            *(f'<p class="note">{_esc(n)}</p>' for n in report.notes),
            _table([(c, c in numeric) for c in cols], rows, "verdicts", short=False, filter=True,
                   wrap=("shape", "reason"))]
    return _section("check", "check against the baseline", "".join(body))


# ---------------------------------------------------------------- the page
def _asset(name: str) -> str:
    return (ASSETS / name).read_text(encoding="utf-8")


def _script_json(data: Any) -> str:
    """JSON safe inside a <script> element: no '</script>' or '<!--' can end or open anything early."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def report_html(docs: Sequence[Document], *, paths: Sequence[str | os.PathLike[str]] | None = None,
                labels: Sequence[str] | None = None, title: str | None = None, check: Report | None = None,
                command: str | None = None) -> str:
    """The whole page, one string: chart, records, (a check's verdicts), profiles, machines."""
    chart = chart_model(docs, labels, "both", title, fit_levels=False)
    numbers = point_numbers(chart)  # every point of a suite (the PNG names up to 8), a profile's top shares
    records, table = _records_data(docs, chart, numbers)
    data = {"chart": _chart_data(chart, numbers), "records": records, "table": table, "tipNames": TIP_NAMES}
    names = [str(p) for p in paths] if paths is not None else [None] * len(docs)
    made = f"made by roofline {__version__} on {now_iso()[:16].replace('T', ' ')} UTC"
    nav = ['<a href="#roofline">chart</a>', '<a href="#records-section">records</a>']
    sections = []
    if check is not None:
        sections.append(_check_section(check))
        nav.insert(0, '<a href="#check">check</a>')
    profiles = [(d, n) for d, n in zip(docs, chart.series, strict=True) if is_profile(d)]
    if profiles:
        sections.append(_section("profile", "profile", "".join(_profile_section(d, n) for d, n in profiles)))
        nav.append('<a href="#profile">profile</a>')
    cards = "".join(_machine_card(d, n, p) for d, n, p in zip(docs, chart.series, names, strict=True))
    sections.append(_section("machine", "machine, clocks and tool", f'<div class="cards">{cards}</div>'))
    nav.append('<a href="#machine">machine</a>')
    n_records = sum(len(d.records) for d in docs)
    sub = f"{n_records} records from {len(docs)} document{'s' if len(docs) > 1 else ''} · {made}"
    chart_html = ('<section id="roofline"><h2>roofline</h2><div class="toolbar" id="chart-tools"></div>'
                  '<div class="chartbox" id="chart"></div><div class="legend" id="chart-legend"></div>'
                  '<div id="chart-notes"></div></section>')
    records_html = ('<section id="records-section"><h2>records</h2><p class="note">Click a header to sort; hover a '
                    'row to find its point on the chart.</p><div class="tablewrap" id="records"></div></section>')
    if check is not None:  # the verdicts first: they are what a CI reader opened the page for
        body = sections[0] + chart_html + records_html + "".join(sections[1:])
    else:
        body = chart_html + records_html + "".join(sections)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_esc(chart.title)}</title><style>{_asset('report.css')}</style></head><body><main>"
            f"<h1>{_esc(chart.title)}</h1><p class=\"sub\">{_esc(sub)}</p>"
            + (f'<p class="sub">command: <code>{_esc(command)}</code></p>' if command else "")
            + f"<nav>{''.join(nav)}</nav>{body}"
            "<noscript><p>The chart and the records table need JavaScript (inline; nothing is fetched).</p></noscript>"
            f'</main><script type="application/json" id="roofline-data">{_script_json(data)}</script>'
            f"<script>{_asset('report.js')}</script></body></html>\n")


def write_report(text: str, path: str | os.PathLike[str], force: bool = False) -> Path:
    """Write a page; an existing file is kept unless `force` (the user asked, or a CI artifact): without it the page
    is created exclusively (`atomic_write`), so two writers racing to one name never both say it is written."""
    return atomic_write(refuse_existing(path, force), text, exclusive=not force)


def check_report_html(report: Report, results: Document, baseline: Document, *,
                      paths: Sequence[str | os.PathLike[str]] | None = None, command: str | None = None) -> str:
    """The page of `roofline check --html`: the verdicts, then the baseline and the results on one chart."""
    return report_html([baseline, results], paths=paths, labels=["baseline", "results"], check=report,
                       command=command)


__all__ = ["ASSETS", "ROLLUP_ROWS", "check_report_html", "report_html", "write_report"]
