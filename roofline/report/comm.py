"""Views of a collectives document (`roofline collectives`): the table, and the chart model of busbw against
message size (one line per collective, the link ceiling(s) as horizontal lines, each fit's latency knee).

A collectives document is told apart by its top-level `collectives` block (who took part) or by records
carrying a `collective` entry (`is_collectives`; a profile's collectives records leave it a profile). Nothing
here imports matplotlib.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from roofline.core.document import Document
from roofline.core.format import duration, number, percent, si, table_scale
from roofline.core.record import Record
from roofline.report.text import Column, FitTable

KIND = "collectives"


def is_collectives(doc: Document) -> bool:
    """A `roofline collectives` document; a profile whose records include collectives is a profile."""
    if "profile" in doc.extra:
        return False
    return KIND in doc.extra or any(r.collective is not None for r in doc.records)


def _size(nbytes: float) -> str:
    """1024 -> '1 KiB', 4294967296 -> '4 GiB', 1020 -> '1020 B' (sizes are powers of two, or near them)."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if nbytes >= scale:
            v = nbytes / scale
            return f"{v:.0f} {unit}" if abs(v - round(v)) < 1e-9 else f"{v:.3g} {unit}"
    return f"{nbytes:.0f} B"


def collectives_table(doc: Document, wide: bool = False) -> FitTable:
    """One row per (collective, size): time, algbw, busbw, busbw against the link, the fit's error there."""
    c = doc.extra.get("collectives", {})
    # one unit for both rates, read 1-999 in it: CPU ranks over gloo move MB/s, which read 0.000585 GB/s
    scale, unit = table_scale([(r.collective or {}).get(k) for r in doc.records
                               for k in ("algbw_bytes_per_s", "busbw_bytes_per_s")], "B/s")
    cols = [Column("collective", left=True), Column("size"), Column("time"),
            Column("±\nIQR/2", drop=2, note="± IQR/2: half the interquartile range of the samples, % of the median"),
            Column(f"algbw\n{unit}", note="algbw: size / time"),
            Column(f"busbw\n{unit}", note="busbw: algbw x the collective's factor (nccl-tests), one direction"),
            Column("% of\nlink", drop=1, note="% of link: busbw / the spec's NVLink bandwidth per direction"),
            Column("fit\nerror", drop=1, note="fit error: |alpha-beta model - measured| / measured")]
    rows = []
    for r in doc.records:
        k = r.collective or {}
        stats = (r.timing.stats if r.timing else None) or {}
        link = k.get("link_bytes_per_s_one_way")
        bus = k.get("busbw_bytes_per_s")
        rows.append([r.op, _size(r.params.get("bytes", 0)), duration(r.time_s),
                     f"{stats['relative_iqr'] * 50:.1f}%" if "relative_iqr" in stats else "-",
                     number((k.get("algbw_bytes_per_s") or 0) / scale), number((bus or 0) / scale),
                     percent(bus / link, 0) if bus and link else "-", percent(k.get("fit_relative_error"))])
    ranks = c.get("world_size") or (doc.records[0].params.get("ranks") if doc.records else "?")
    title = f"collectives over {ranks} rank(s) ({c.get('backend', '?')}, {c.get('dtype', '?')}) on " \
            f"{doc.device.get('name') or '?'}"
    return FitTable(cols, rows, title=title, caption=fit_lines(doc.records), wide=wide)


def fit_lines(records: Sequence[Record]) -> list[str]:
    """Per collective: the best busbw, the link, and the fitted alpha, bandwidth 1/beta and knee."""
    lines = []
    seen: set[str] = set()
    for r in records:
        k = r.collective or {}
        if r.op in seen or not k:
            continue
        seen.add(r.op)
        link = k.get("link_bytes_per_s_one_way")
        text = f"{r.op}: best busbw {si(k.get('best_busbw_bytes_per_s'), 'B/s')}"
        if link:
            text += f" (link {si(link, 'B/s')} per direction)"
        if "beta_s_per_byte" in k:
            beta, knee = k["beta_s_per_byte"], k.get("knee_bytes")
            text += (f"; alpha-beta fit: alpha {duration(k.get('alpha_s'))}, 1/beta "
                     f"{si(1 / beta, 'B/s') if beta > 0 else '- (time falls with size)'}, knee "
                     f"{_size(knee) if knee else '-'}, worst error {percent(k.get('fit_worst_relative_error'))}")
        lines.append(text)
    return lines


@dataclass(frozen=True)
class Line:
    """One collective's busbw against size, with its fit's knee (None when there is none)."""

    op: str
    label: str
    sizes: tuple[float, ...]
    busbw: tuple[float, ...]
    knee_bytes: float | None
    device_index: int | None = None


@dataclass(frozen=True)
class CommChart:
    """What the busbw chart draws: the lines, the ceilings (label, bytes/s per direction) and the title."""

    lines: tuple[Line, ...]
    ceilings: tuple[tuple[str, float], ...]
    title: str


def comm_chart(docs: Sequence[Document], labels: Sequence[str] | None = None, title: str | None = None
               ) -> CommChart:
    """The chart model of one or more collectives documents (a legend label per document when several)."""
    lines: list[Line] = []
    ceilings: dict[str, float] = {}
    for i, doc in enumerate(docs):
        tag = (labels[i] if labels else f"run {i + 1}") if len(docs) > 1 else ""
        by_op: dict[str, list[Record]] = {}
        for r in doc.records:
            if r.collective is not None and r.time_s:
                by_op.setdefault(r.op, []).append(r)
        for op, recs in by_op.items():
            recs.sort(key=lambda r: r.params["bytes"])
            k = recs[0].collective or {}
            lines.append(Line(op, f"{op} {tag}".strip(), tuple(float(r.params["bytes"]) for r in recs),
                              tuple(float((r.collective or {})[_rate(r)]) for r in recs), k.get("knee_bytes")))
            link = k.get("link_bytes_per_s_one_way")
            if link:
                ceilings[f"NVLink {si(link, 'B/s')} per direction ({doc.device.get('spec_id', '?')})"] = link
    if not lines:
        from roofline.core.errors import UsageError

        raise UsageError("no timed collectives in these documents (made by `roofline collectives`)")
    d0 = docs[0]
    c = d0.extra.get("collectives", {})
    what = "busbw" if _rate(d0.records[0]) == BUSBW else "algbw (one rank: busbw is 0 by nccl-tests' convention)"
    default = (f"{what} of the collectives over {c.get('world_size', '?')} rank(s) on "
               f"{d0.device.get('name') or '?'} ({c.get('backend', '?')}, {c.get('dtype', '?')})")
    return CommChart(tuple(lines), tuple(ceilings.items()), title or default)


BUSBW, ALGBW = "busbw_bytes_per_s", "algbw_bytes_per_s"


def _rate(r: Record) -> str:
    """What a record's line shows: busbw, or algbw for one rank (no link: busbw x 0 for all but broadcast)."""
    return ALGBW if r.params.get("ranks") == 1 else BUSBW


def knee_busbw(line: Line) -> float | None:
    """busbw on the line at its knee (interpolated in log size), where the marker sits; None without a knee
    inside the measured range."""
    import math

    k = line.knee_bytes
    if k is None or not line.sizes or k < line.sizes[0] or k > line.sizes[-1]:
        return None
    for (x0, y0), (x1, y1) in pairwise(zip(line.sizes, line.busbw, strict=True)):
        if x0 <= k <= x1:
            f = 0.0 if x1 == x0 else (math.log(k) - math.log(x0)) / (math.log(x1) - math.log(x0))
            return y0 + f * (y1 - y0)
    return None


def chart_data(chart: CommChart) -> dict[str, Any]:
    """The chart as plain data (for tests and the HTML report)."""
    return {"title": chart.title, "ceilings": [list(c) for c in chart.ceilings],
            "lines": [{"op": ln.op, "label": ln.label, "sizes": list(ln.sizes), "busbw": list(ln.busbw),
                       "knee_bytes": ln.knee_bytes} for ln in chart.lines]}
