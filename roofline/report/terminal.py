"""The roofline chart in plain characters, for terminals and CI logs (`--plot -`); no matplotlib.

The same chart model as the matplotlib chart (`roofline.report.chart.model.chart_model`): a log-log grid with decade
ticks, ceilings drawn with characters ('-' a datasheet compute roof, '/' a datasheet memory roof, ':'
any measured roof, '+' a ridge point, '.' a point's headroom up to its roof, '~' a sweep's points joined)
and each record as a letter,
with a legend underneath: letter -> operator, arithmetic intensity, FLOP/s and percent of its roof.

A profile's chart (`roofline profile` documents) letters only the points the chart numbers, its largest
shares of the time (A = the largest), and lists their shares; every other op is an UNLABELLED_CHAR where
its cell is free, counted in a line under the legend (a 300-op model stays readable).
"""

from __future__ import annotations

import itertools
import math
import string
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING

from roofline.core.errors import UsageError
from roofline.core.format import number, percent, si
from roofline.report.chart.model import (
    Chart,
    Roof,
    chart_model,
    intensity_tick,
    point_numbers,
    unlabelled_note,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from roofline.core.document import Document

COMPUTE_CHAR, MEMORY_CHAR, MEASURED_CHAR, RIDGE_CHAR, HEADROOM_CHAR = "-", "/", ":", "+", "."
SWEEP_CHAR = "~"  # between the points of a sweep (`Chart.lines`), on cells no roof holds
CROWDED_CHAR = "*"  # a point with no free cell near its place (the legend says which)
UNLABELLED_CHAR = "o"  # a profile's op outside its top shares (drawn only on a free cell)
LETTERS = string.ascii_uppercase + string.ascii_lowercase + string.digits
MIN_WIDTH, MIN_HEIGHT = 40, 10

# Drawing priority: a higher layer overwrites a lower one, never the reverse.
_HEADROOM, _MEMORY, _COMPUTE, _RIDGE, _TAG, _POINT = 1, 2, 3, 4, 5, 6
# Where a point goes when its cell is taken: right, left, up, down, then two cells away.
_NUDGES = ((0, 1), (0, -1), (-1, 0), (1, 0), (0, 2), (0, -2), (-1, 1), (1, 1), (-1, -1), (1, -1))


class _Grid:
    def __init__(self, chart: Chart, rows: int, cols: int) -> None:
        self.rows, self.cols = rows, cols
        self.cells = [[" "] * cols for _ in range(rows)]
        self.layer = [[0] * cols for _ in range(rows)]
        self.lx0, self.lx1 = (math.log10(v) for v in chart.x_range)
        self.ly0, self.ly1 = (math.log10(v) for v in chart.y_range)

    def col(self, x: float) -> int:
        c = int((math.log10(x) - self.lx0) / (self.lx1 - self.lx0) * self.cols)
        return min(max(c, 0), self.cols - 1)

    def row(self, y: float) -> int:
        r = int((self.ly1 - math.log10(y)) / (self.ly1 - self.ly0) * self.rows)
        return min(max(r, 0), self.rows - 1)

    def inside(self, x: float, y: float) -> bool:
        return self.lx0 <= math.log10(x) <= self.lx1 and self.ly0 <= math.log10(y) <= self.ly1

    def put(self, r: int, c: int, ch: str, layer: int) -> bool:
        if 0 <= r < self.rows and 0 <= c < self.cols and layer >= self.layer[r][c]:
            self.cells[r][c], self.layer[r][c] = ch, layer
            return True
        return False

    def free(self, r: int, c0: int, c1: int) -> bool:
        """Cells c0..c1 of row r are blank (nothing drawn there yet)."""
        return 0 <= r < self.rows and 0 <= c0 and c1 < self.cols and all(self.layer[r][c] == 0
                                                                            for c in range(c0, c1 + 1))

    def write(self, r: int, c0: int, text: str, layer: int) -> None:
        for k, ch in enumerate(text):
            self.put(r, c0 + k, ch, layer)


def _short(value: float) -> str:
    """989.4e12 -> '989T'."""
    return si(value, "", digits=3).replace(" ", "")


def _roof_char(r: Roof) -> str:
    if r.source == "measured":
        return MEASURED_CHAR
    return COMPUTE_CHAR if r.kind == "compute" else MEMORY_CHAR


def _tag(r: Roof) -> str:
    tag = f"{r.name} {_short(r.value)}" if r.kind == "compute" else r.name
    return tag + (" (meas.)" if r.source == "measured" else "")


def _draw_roofs(g: _Grid, chart: Chart) -> None:
    x_lo, x_hi = chart.x_range
    # Measured first, so a datasheet roof on the same row stays visible.
    for r in sorted(chart.roofs, key=lambda r: (r.source != "measured", r.kind == "compute")):
        ch = _roof_char(r)
        if r.kind == "compute":
            start = r.x_start if r.x_start and r.x_start > x_lo else x_lo
            row = g.row(r.value)
            for c in range(g.col(start), g.cols):
                g.put(row, c, ch, _COMPUTE)
            if r.ridge and x_lo < r.ridge < x_hi:
                g.put(row, g.col(r.ridge), RIDGE_CHAR, _RIDGE)
        else:
            end = min(r.x_end or x_hi, x_hi)
            steps = g.cols * 8
            lend = math.log10(end)
            for k in range(steps + 1):
                x = 10 ** (g.lx0 + (lend - g.lx0) * k / steps)
                if g.inside(x, x * r.value):
                    g.put(g.row(x * r.value), g.col(x), ch, _MEMORY)


def _draw_tags(g: _Grid, chart: Chart) -> None:
    """Short names on the grid where there is room (the legend has them all)."""
    x_hi = chart.x_range[1]
    for r in sorted(chart.roofs, key=lambda r: (r.kind != "compute", -r.value)):
        text = _tag(r)
        if r.kind == "compute":
            row, c1 = g.row(r.value), g.cols - 1
            c0 = c1 - len(text) + 1
            for rr in (row - 1, row + 1):
                if g.free(rr, c0, c1):
                    g.write(rr, c0, text, _TAG)
                    break
            continue
        # Memory: left of the diagonal, on a row near the middle of its visible part.
        end = min(r.x_end or x_hi, x_hi)
        cells = [(g.row(x * r.value), g.col(x)) for x in (10 ** (g.lx0 + (math.log10(end) - g.lx0) * k / 40)
                                                          for k in range(41)) if g.inside(x, x * r.value)]
        for frac in (0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8):
            if not cells:
                break
            row, col = cells[int(frac * (len(cells) - 1))]
            c1 = col - 2
            c0 = c1 - len(text) + 1
            if g.free(row, c0, c1 + 1):
                g.write(row, c0, text, _TAG)
                break


def _draw_sweeps(g: _Grid, chart: Chart) -> None:
    """Each sweep's consecutive points joined by SWEEP_CHAR, one cell per column between them (straight in
    log-log space, as the drawn chart's line)."""
    where = {p.gid: p for p in chart.points}
    for line in chart.lines:
        for a, b in itertools.pairwise(line):
            pa, pb = where[a], where[b]
            ca, cb = g.col(pa.ai), g.col(pb.ai)
            ra, rb = g.row(pa.flops_per_s), g.row(pb.flops_per_s)
            steps = max(abs(cb - ca), abs(rb - ra), 1)
            for k in range(1, steps):
                g.put(round(ra + (rb - ra) * k / steps), round(ca + (cb - ca) * k / steps), SWEEP_CHAR, _HEADROOM)


def _draw_points(g: _Grid, chart: Chart, numbers: dict[str, int]) -> dict[tuple[int, int], str]:
    """Each point's letter (nudged to a free cell nearby when its own is taken); returns the marks used.
    A profile's chart: letters by number for the numbered points, then the others' UNLABELLED_CHAR."""
    marks: dict[tuple[int, int], str] = {}
    points = list(enumerate(chart.points))
    if chart.profile:
        points = sorted(((numbers[p.gid] - 1, p) for p in chart.points if p.gid in numbers), key=lambda kp: kp[0])
    for k, p in points:
        letter = LETTERS[k] if k < len(LETTERS) else CROWDED_CHAR
        row, col = g.row(p.flops_per_s), g.col(p.ai)
        if p.has_headroom:
            for rr in range(g.row(p.roof_flops_per_s) + 1, row):
                g.put(rr, col, HEADROOM_CHAR, _HEADROOM)
        placed = False
        for dr, dc in ((0, 0), *_NUDGES):
            rr, cc = row + dr, col + dc
            if 0 <= rr < g.rows and 0 <= cc < g.cols and g.layer[rr][cc] < _POINT:
                g.put(rr, cc, letter, _POINT)
                placed = True
                break
        if not placed:
            g.cells[row][col] = CROWDED_CHAR
            letter = CROWDED_CHAR
        marks[(p.doc, p.record)] = letter
    for p in chart.points if chart.profile else ():
        if p.gid not in numbers:
            row, col = g.row(p.flops_per_s), g.col(p.ai)
            if g.layer[row][col] < _POINT:
                g.put(row, col, UNLABELLED_CHAR, _POINT)
    return marks


def _axes(g: _Grid, chart: Chart, margin: int) -> tuple[list[str], list[str]]:
    """Grid lines with the y axis and its decade labels, then the x axis and its decade labels."""
    y_ticks: dict[int, str] = {}
    for d in range(math.ceil(g.ly0), math.floor(g.ly1) + 1):
        y_ticks.setdefault(g.row(10.0**d), _short(10.0**d))
    lines = []
    for r in range(g.rows):
        label = y_ticks.get(r, "")
        lines.append(f"{label:>{margin - 1}} " + ("+" if label else "|") + "".join(g.cells[r]).rstrip())
    axis = ["-"] * g.cols
    ticks = [" "] * g.cols
    last_end = -2
    for d in range(math.ceil(g.lx0), math.floor(g.lx1) + 1):
        c = g.col(10.0**d)
        axis[c] = "+"
        text = intensity_tick(10.0**d)
        start = min(max(c - len(text) // 2, 0), g.cols - len(text))
        if start > last_end + 1:
            ticks[start:start + len(text)] = list(text)
            last_end = start + len(text) - 1
    bottom = [" " * margin + "+" + "".join(axis), " " * (margin + 1) + "".join(ticks).rstrip()]
    return lines, bottom


def _legend(chart: Chart, marks: dict[tuple[int, int], str], numbers: dict[str, int], width: int) -> list[str]:
    many = len(chart.series) > 1
    out = textwrap.wrap(f"roofs ({COMPUTE_CHAR} compute, {MEMORY_CHAR} memory, {MEASURED_CHAR} measured, "
                        f"{RIDGE_CHAR} ridge point, {HEADROOM_CHAR} headroom to the roof"
                        + (f", {SWEEP_CHAR} a sweep" if chart.lines else "") + "):", width)
    rows = []
    for r in sorted(chart.roofs, key=lambda r: (r.doc, r.source != "datasheet", r.kind != "compute", -r.value)):
        unit = "FLOP/s" if r.kind == "compute" else "B/s"
        ridge = f"ridge {number(r.ridge)} FLOP/B" if r.ridge else ""
        rows.append([_roof_char(r), r.name, si(r.value, unit), ridge, r.source]
                    + ([chart.series[r.doc]] if many else []))
    out += _columns(rows, right={2}, width=width, drop=(4, 3))[0]  # the source, then the ridge, when narrow
    rows = []
    points = sorted((p for p in chart.points if p.gid in numbers), key=lambda p: numbers[p.gid]) \
        if chart.profile else chart.points
    for p in points:
        kind = "timed" if p.timed else "model only"
        row = [marks[(p.doc, p.record)], p.label, f"AI {number(p.ai)}", si(p.flops_per_s, "FLOP/s"),
               f"{percent(p.fraction, 0)} of roof"]
        if chart.profile:
            row.append("-" if p.share is None else f"{percent(p.share)} of time")
        rows.append(row + [kind, f"{p.bound}-bound"] + ([chart.series[p.doc]] if many else []))
    n = len(rows[0]) if rows else 0
    # when narrow, leave out the bound (the roof under a point says it), then (a profile's points, all timed or
    # all not) timed/model only, then the intensity (its column says it)
    drop = (n - 1 - many, *((n - 2 - many,) if chart.profile else ()), 2)
    table, kept = _columns(rows, right={2, 3, 4, 5} if chart.profile else {2, 3, 4}, width=width, drop=drop,
                           shorten=1)
    share = ", share of the time" if chart.profile else ""
    ai = ", arithmetic intensity" if 2 in kept else ""
    out += textwrap.wrap(f"points (letter: operator{ai}, FLOP/s, % of its roof{share}):", width) + table
    if chart.levels:  # the hierarchical roofline's L1/L2/DRAM points: the image chart draws them
        counted = len({(v.doc, v.record) for v in chart.levels})
        out += textwrap.wrap(f"counters: the L1, L2 and DRAM points of {counted} record(s) are drawn in the image "
                             "chart (roofline plot DOC -o chart.png)", width)
    if (note := unlabelled_note(chart, numbers)) is not None:
        out += textwrap.wrap(f"{UNLABELLED_CHAR}: {note}", width)
    if chart.skipped:
        out += textwrap.wrap("not drawn: " + "; ".join(chart.skipped), width)
    return out


def _columns(rows: list[list[str]], right: set[int], width: int, drop: Sequence[int] = (),
             shorten: int | None = None) -> tuple[list[str], list[int]]:
    """The rows as aligned text columns within `width`: the columns in `drop` are left out, in that order,
    while a line is wider; then column `shorten` (a label) is cut short in its middle with '…' (to LABEL_MIN at
    least), so the numbers after it stay whole; a line still too wide is cut at `width`. Also the columns kept."""
    if not rows:
        return [], []
    keep = list(range(len(rows[0])))
    cap: dict[int, int] = {}

    def cell(row: list[str], k: int) -> str:
        return short_label(row[k], cap.get(k, len(row[k])))

    def lines() -> list[str]:
        shown = [[cell(r, k) for k in range(len(r))] for r in rows]
        widths = {k: max(len(r[k]) for r in shown) for k in keep}
        return ["  " + "   ".join(row[k].rjust(widths[k]) if k in right else row[k].ljust(widths[k])
                                   for k in keep).rstrip() for row in shown]

    text = lines()
    for k in drop:
        if max(map(len, text)) <= width:
            break
        if k in keep:
            keep.remove(k)
            text = lines()
    over = max(map(len, text)) - width
    if over > 0 and shorten in keep:
        cap[shorten] = max(LABEL_MIN, max(len(r[shorten]) for r in rows) - over)
        text = lines()
    return [line[:width] for line in text], keep


def short_label(text: str, width: int) -> str:
    """A point's label in `width` columns: without 'aten::', then its module shortened as the profile's tables
    shorten it (the layer index kept: 'mm fp32 in layers.1.…o_proj'), the op, dtype and the parameters after the
    module whole ('add.Tensor bf16 in … run=None' read the same for two records of other sizes); a label that
    still does not fit is cut in its middle ('aten::mm fp3…1.self_attn.o_proj' cut both the dtype and the
    index)."""
    from roofline.report.profile import shorten_left

    if len(text) <= width:
        return text
    text = text.replace("aten::", "")
    if len(text) <= width:
        return text
    # 'op dtype in MODULE params': the module alone is shortened; what tells records of one module apart (the
    # parameters chart/model.py adds: 'numel=32768 run=None', a region, '#2') is kept whole
    head, sep, rest = text.partition(" in ")
    module, space, after = rest.partition(" ")
    room = width - len(head) - len(sep) - len(space) - len(after)
    if sep and room >= MODULE_MIN:
        return head + sep + shorten_left(module, room) + space + after
    room = width - 1
    return text[:room - room * 3 // 5] + "…" + text[-(room * 3 // 5):]


# The fewest columns a point's module is shortened to before its whole label is cut in the middle.
MODULE_MIN = 10
# The shortest a point's label is cut to in the legend ("aten::co…layer4.1.conv2": the op and module still read).
LABEL_MIN = 20


# The chart's width when the console is wider: wider charts add no resolution worth reading.
MAX_WIDTH = 100


def terminal_width() -> int:
    """The width to draw at: the console's, at most MAX_WIDTH."""
    from roofline.report.text import console

    return min(console().width, MAX_WIDTH)


def render_terminal(docs: Sequence[Document], width: int = MAX_WIDTH, height: int = 30, roof: str = "both",
                    labels: Sequence[str] | None = None) -> str:
    """The roofline chart of these documents as text: `height` lines of chart (title and axes included),
    `width` columns, then the legend."""
    if width < MIN_WIDTH or height < MIN_HEIGHT:
        raise UsageError(f"a terminal chart needs at least {MIN_WIDTH} columns and {MIN_HEIGHT} lines "
                         f"(got {width}x{height})")
    chart = chart_model(docs, labels=labels, roof=roof, fit_levels=False)
    ly0, ly1 = (math.log10(v) for v in chart.y_range)
    margin = max(len(_short(10.0**d)) for d in range(math.ceil(ly0), math.floor(ly1) + 1)) + 1 \
        if math.floor(ly1) >= math.ceil(ly0) else 2
    g = _Grid(chart, rows=height - 4, cols=width - margin - 1)
    _draw_roofs(g, chart)
    _draw_sweeps(g, chart)
    numbers = point_numbers(chart) if chart.profile else {}
    marks = _draw_points(g, chart, numbers)
    _draw_tags(g, chart)
    lines, bottom = _axes(g, chart, margin)
    x_title = "arithmetic intensity (FLOP/byte)"
    footer = "y: FLOP/s".ljust(max(width - len(x_title), 10)) + x_title
    title = chart.title.replace("  ·  ", " | ")
    return "\n".join([title[:width], *lines, *bottom, footer, "", *_legend(chart, marks, numbers, width)]) + "\n"


__all__ = ["LETTERS", "UNLABELLED_CHAR", "render_terminal"]
