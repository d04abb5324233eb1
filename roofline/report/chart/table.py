"""The table under a numbered chart (more than NUMBERED_ABOVE points): what it holds, its layout, its drawing.

Under the legends, rows of: number, marker (bound colour, document shape), label, intensity, FLOP/s and
fraction of the roof (on a profile's chart also the share of the time), in as many blocks side by side as
the figure's width holds (at most _MAX_BLOCKS), each with its column headings; with several documents each
document's rows start under its name. Only numbered points have a row (a profile's chart numbers its
largest shares only).
`plan_table` lays it out (pure: text widths come from a `width_in` function); `draw_table` draws a plan
on a matplotlib figure. Positions are in inches (fig.dpi_scale_trans), so PNG, SVG and PDF agree.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from roofline.core.format import number, table_scale
from roofline.report.chart.model import Chart, Point
from roofline.report.style import FONT_PT, MARKER_PT, NUMBER_WEIGHT, bound_colour, doc_colour, doc_marker

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.figure import Figure

WidthIn = Callable[[str, str], float]  # (text, font weight) -> its width in inches at FONT_PT

EDGE_IN = 0.12  # from the figure's left edge to the table (and to the note on records not drawn)
_ROW_PT = FONT_PT * 1.5  # row pitch
_CELL_GAP_PT = 8.0  # between the columns of a block
_BLOCK_GAP_IN = 0.4  # between blocks side by side
# A numbered chart may grow this wide (from the usual 10 in) when that fits one more block of rows side by
# side: a laptop screen has width to spare, not height, and every block saved shortens the table a lot.
NUMBERED_MAX_WIDTH_IN = 12.0
_TABLE_PAD_IN = (0.16, 0.06)  # above the table (under the legends), below it
_MAX_BLOCKS = 3
_COLUMNS = ("number", "marker", "label", "ai", "flops", "fraction")
_PROFILE_COLUMNS = (*_COLUMNS, "share")
_HEADINGS = {"number": "#", "marker": "", "label": "operator", "ai": "FLOP/B", "flops": "TFLOP/s",
             "fraction": "of roof", "share": "of time"}
_RIGHT_ALIGNED = frozenset({"number", "ai", "flops", "fraction", "share"})
_STRIPE = "#f2f2f2"
_MUTED = "#555555"


@dataclass(frozen=True)
class Entry:
    """One row of the table: a point, or the heading of a document's rows."""

    kind: str  # "row" (a point) | "group" (a document's heading)
    doc: int
    point: Point | None = None
    name: str = ""  # a heading's document name
    text: str = ""  # a heading's text


@dataclass(frozen=True)
class TablePlan:
    blocks: tuple[tuple[Entry, ...], ...]
    cells: dict[str, dict[str, str]]  # point gid -> column -> text
    anchors_in: dict[str, float]  # column -> x of its text from the block's left (its right edge if right-aligned)
    marker_in: float  # x of the marker column's centre from the block's left
    block_w_in: float
    height_in: float
    fig_w_in: float  # the figure's width (wider than it was when that fits one more block)
    columns: tuple[str, ...] = _COLUMNS
    headings: dict[str, str] = field(default_factory=lambda: dict(_HEADINGS))  # the rate's unit chosen per table


def _fraction_text(p: Point) -> str:
    if not p.timed:
        return "model"
    return f"{p.fraction:.0%}" if math.isfinite(p.fraction) else "-"


def fill(entries: Sequence[Entry], per: int) -> list[list[Entry]]:
    """Entries cut into blocks of at most `per` rows; a heading never ends a block, and a block that starts
    inside a document repeats its heading ('..., continued')."""
    blocks: list[list[Entry]] = []
    cur: list[Entry] = []
    group: Entry | None = None
    for e in entries:
        if e.kind == "group":
            group = e
            if cur and len(cur) >= per - 1:
                blocks.append(cur)
                cur = []
        elif len(cur) >= per:
            blocks.append(cur)
            cur = [replace(group, text=f"{group.name}, continued")] if group else []
        cur.append(e)
    if cur:
        blocks.append(cur)
    return blocks


def plan_table(chart: Chart, numbers: dict[str, int], fig_width_in: float, width_in: WidthIn) -> TablePlan:
    """What the table holds and how wide its columns are, for a figure `fig_width_in` inches wide."""
    points = sorted((p for p in chart.points if p.gid in numbers), key=lambda p: numbers[p.gid])
    columns = _PROFILE_COLUMNS if chart.profile else _COLUMNS
    scale, unit = table_scale([p.flops_per_s for p in points], "FLOP/s")  # a CPU's read 3.12e-05 TFLOP/s
    headings = {**_HEADINGS, "flops": unit}
    cells = {p.gid: {"number": str(numbers[p.gid]), "label": p.label, "ai": number(p.ai),
                     "flops": number(p.flops_per_s / scale), "fraction": _fraction_text(p)} for p in points}
    if chart.profile:
        for p in points:
            cells[p.gid]["share"] = "-" if p.share is None else f"{p.share:.1%}"
    entries: list[Entry] = []
    for doc, name in enumerate(chart.series):
        own = [p for p in points if p.doc == doc]
        if own and len(chart.series) > 1:
            first, last = numbers[own[0].gid], numbers[own[-1].gid]
            span = f"{first}" if first == last else f"{first}\u2013{last}"
            entries.append(Entry("group", doc, name=name, text=f"{name}  (points {span})"))
        entries += [Entry("row", doc, p) for p in own]

    gap = _CELL_GAP_PT / 72
    widths = {c: max([width_in(headings[c], "normal")] + [width_in(cells[p.gid][c], NUMBER_WEIGHT if c == "number"
                                                                    else "normal") for p in points])
              for c in columns if c != "marker"}
    widths["marker"] = MARKER_PT / 72 + 0.04
    budget = fig_width_in - 2 * EDGE_IN
    fixed = sum(w for c, w in widths.items() if c != "label") + gap * (len(columns) - 1)
    if fixed + widths["label"] > budget:  # labels too long even for one block: shorten the longest
        widths["label"] = budget - fixed
        for cell in cells.values():
            while len(cell["label"]) > 4 and width_in(cell["label"], "normal") > widths["label"]:
                cell["label"] = cell["label"][:-2] + "\u2026"
    anchors: dict[str, float] = {}
    x = 0.0
    for c in columns:
        anchors[c] = x + widths[c] if c in _RIGHT_ALIGNED else x
        x += widths[c] + gap
    block_w = x - gap

    def blocks_in(width: float) -> int:
        return max(1, min(_MAX_BLOCKS, int((width - 2 * EDGE_IN + _BLOCK_GAP_IN) // (block_w + _BLOCK_GAP_IN))))

    n_blocks = blocks_in(fig_width_in)
    fig_w = fig_width_in
    if n_blocks < blocks_in(NUMBERED_MAX_WIDTH_IN) and len(entries) > 2 * n_blocks:
        n_blocks += 1
        fig_w = (n_blocks * block_w + (n_blocks - 1) * _BLOCK_GAP_IN) + 2 * EDGE_IN
    per = max(2, math.ceil(len(entries) / n_blocks))
    while len(fill(entries, per)) > n_blocks:
        per += 1
    blocks = fill(entries, per)
    rows = max(len(b) for b in blocks) + 1  # and the headings
    height = _TABLE_PAD_IN[0] + rows * _ROW_PT / 72 + _TABLE_PAD_IN[1]
    return TablePlan(tuple(tuple(b) for b in blocks), cells, anchors, widths["number"] + gap + widths["marker"] / 2,
                     block_w, height, max(fig_w, fig_width_in), columns, headings)


def draw_table(fig: Figure, plan: TablePlan, top_in: float) -> None:
    """Draw the planned table with its top edge `top_in` inches above the figure's bottom.

    Gids: per point 'table:COLUMN:DOC:RECORD' (COLUMN: number, marker, label, ai, flops, fraction; share on
    a profile's chart),
    'table:head:BLOCK:COLUMN' the headings, 'table:group:DOC:BLOCK' a document's heading."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    inches = fig.dpi_scale_trans
    row = _ROW_PT / 72
    sink = FONT_PT * 0.34 / 72  # from a row's middle down to its text baseline

    def text(x: float, y: float, s: str, gid: str, ha: str = "left", **kw: Any) -> None:
        if s:
            t = fig.text(x, y - sink, s, transform=inches, ha=ha, va="baseline", fontsize=FONT_PT, **kw)
            t.set_gid(gid)

    def marker(x: float, y: float, doc: int, face: str, edge: str, gid: str, width: float = 0.8) -> None:
        m = Line2D([x], [y], transform=inches, linestyle="none", marker=doc_marker(doc),
                   markersize=MARKER_PT * 0.9, markerfacecolor=face, markeredgecolor=edge, markeredgewidth=width)
        m.set_gid(gid)
        fig.add_artist(m)

    for b, block in enumerate(plan.blocks):
        x0 = EDGE_IN + b * (plan.block_w_in + _BLOCK_GAP_IN)
        y = top_in - _TABLE_PAD_IN[0] - row / 2
        for c in plan.columns:
            text(x0 + plan.anchors_in[c], y, plan.headings[c], f"table:head:{b}:{c}",
                 ha="right" if c in _RIGHT_ALIGNED else "left", color=_MUTED)
        rule = Line2D([x0, x0 + plan.block_w_in], [y - row / 2] * 2, transform=inches, color="#b0b0b0",
                      linewidth=0.7)
        rule.set_gid(f"table:rule:{b}")
        fig.add_artist(rule)
        for k, e in enumerate(block):
            y = top_in - _TABLE_PAD_IN[0] - (k + 1.5) * row
            colour = doc_colour(e.doc)
            if e.kind == "group":
                marker(x0 + plan.marker_in, y, e.doc, "#bbbbbb", colour, f"table:groupmarker:{e.doc}:{b}")
                text(x0 + plan.anchors_in["label"], y, e.text, f"table:group:{e.doc}:{b}", color=colour,
                     fontweight="bold")
                continue
            p = e.point
            assert p is not None
            if k % 2:
                fig.add_artist(Rectangle((x0 - 0.04, y - row / 2), plan.block_w_in + 0.08, row, transform=inches,
                                         facecolor=_STRIPE, edgecolor="none", zorder=-1))
            cells = plan.cells[p.gid]
            bcolour = bound_colour(p.bound)
            if p.timed:
                marker(x0 + plan.marker_in, y, p.doc, bcolour, "white", f"table:marker:{p.gid}")
            else:
                marker(x0 + plan.marker_in, y, p.doc, "white", bcolour, f"table:marker:{p.gid}", width=1.6)
            for c in (c for c in plan.columns if c != "marker"):
                kw = {"color": colour, "fontweight": NUMBER_WEIGHT} if c == "number" else {"color": "#1a1a1a"}
                text(x0 + plan.anchors_in[c], y, cells[c], f"table:{c}:{p.gid}",
                     ha="right" if c in _RIGHT_ALIGNED else "left", **kw)


__all__ = ["EDGE_IN", "NUMBERED_MAX_WIDTH_IN", "Entry", "TablePlan", "draw_table", "fill", "plan_table"]
