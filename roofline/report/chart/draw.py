"""The roofline chart drawn with matplotlib: `build_figure` (a Figure to save or inspect) and `save_chart`.

What is drawn comes from the chart model (`model.chart_model`), where each label goes from the placer
(`placer`), the table of a numbered chart from `table`. matplotlib is imported only when a figure is
built, with the headless Agg backend, so importing this module (or the CLI) stays cheap.

Datasheet roofs are solid, measured roofs (a calibration's) dashed; points are coloured by bound, filled
when timed, hollow when the model's only. A profile's points have marker areas by their share of the time
(`model.marker_pt`), the largest drawn first (beneath), and headroom lines on its numbered points only.
Artists carry gids that tests (and anyone inspecting the figure) can find; `build_figure` lists them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline.core import validate
from roofline.core.format import si
from roofline.report.chart.model import (
    Chart,
    Roof,
    chart_model,
    intensity_tick,
    is_numbered,
    marker_pt,
    point_numbers,
    skipped_text,
    unlabelled_note,
)
from roofline.report.chart.placer import Placement, Scene, place_labels, stack
from roofline.report.chart.shapes import rect
from roofline.report.chart.table import EDGE_IN, draw_table, plan_table
from roofline.report.figures import DPI, figure_format, save_figure
from roofline.report.style import (
    BOUND_COLOURS,
    FONT_PT,
    MARKER_PT,
    TITLE_PT,
    bound_colour,
    doc_colour,
    doc_marker,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.figure import Figure

    from roofline.core.document import Document

FIGSIZE_IN = (10.0, 6.5)
_NOTE_LINE_IN = 0.3  # the band under the chart for the note on records not drawn
# The note on records not drawn: at most this many lines (grouped by reason, a few names each), and the width
# of a character of it in inches (DejaVu Sans at FONT_PT averages ~0.55 em; rounded up so a line never runs
# off the figure's right edge).
_SKIPPED_LINES = 3
_NOTE_CHAR_EM = 0.6
_MARGIN_PT = 9.0  # from the axes' right edge to a compute label (a short connector spans it)
LABEL_BOX = {"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.85}
_NAME_COLOUR = "#1a1a1a"  # a point's label (a numbered chart's numbers take their document's colour)
_LEADER_COLOUR = "#777777"


def _matplotlib() -> Any:
    """matplotlib, headless: the Agg backend is selected before anything draws."""
    import matplotlib

    matplotlib.use("Agg")
    return matplotlib


def _si_tick(unit: str) -> Any:
    def fmt(value: float, _pos: int) -> str:
        return si(value, unit, digits=3).replace(".0 ", " ") if value > 0 else ""

    return fmt


def _ai_tick(value: float, _pos: int) -> str:
    return intensity_tick(value) if value > 0 else ""


def build_figure(docs: Sequence[Document], labels: Sequence[str] | None = None, roof: str = "both",
                 title: str | None = None) -> Figure:
    """A log-log roofline chart of one or more results documents (Agg canvas, ready to save or inspect).

    Artists carry gids the tests (and anyone inspecting the figure) can find: 'roof:DOC:SOURCE:KIND:KEY',
    'ridge:...', 'point:DOC:RECORD', 'headroom:DOC:RECORD', 'label:roof:...', 'label:point:DOC:RECORD',
    'leader:DOC:RECORD' (a callout's), 'power:DOC:PIPE' (a document's power roof, `--energy`),
    'level:DOC:RECORD:LEVEL' and 'levels:DOC:RECORD' (a record's counter points and the line through them),
    'sweep:N' (a sweep's points joined); the legends are 'legend:series'
    (one entry per document) and 'legend:key'; 'note:skipped' the note on records not drawn. A chart of more
    than NUMBERED_ABOVE points labels each with its number ('label:point:...' holds '1', '2', ...) and adds
    a table under the legends (its gids: `table.draw_table`). A profile's chart numbers only its largest
    shares; 'note:unlabelled' counts the rest.
    """
    chart = chart_model(docs, labels, roof, title)
    numbers = point_numbers(chart) if is_numbered(chart) else {}
    mpl = _matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.layout_engine import ConstrainedLayoutEngine
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    with mpl.rc_context({"font.size": FONT_PT, "axes.titlesize": TITLE_PT, "axes.labelsize": 10,
                         "xtick.labelsize": FONT_PT, "ytick.labelsize": FONT_PT, "legend.fontsize": FONT_PT,
                         "legend.title_fontsize": FONT_PT, "svg.fonttype": "none", "pdf.fonttype": 42}):
        fig = Figure(figsize=FIGSIZE_IN, dpi=DPI, layout="constrained")
        FigureCanvasAgg(fig)
        table = plan_table(chart, numbers, fig.get_figwidth(), _width_in(fig)) if numbers else None
        unlabelled = unlabelled_note(chart, numbers)
        # A band at the bottom, below the legends, for the table and the notes on records not drawn and
        # (a profile's) points not numbered.
        skipped = _skipped_lines(chart, (table.fig_w_in if table else FIGSIZE_IN[0]) - 2 * EDGE_IN)
        note_in = _NOTE_LINE_IN * (len(skipped) + (1 if unlabelled else 0))
        band_in = (table.height_in if table else 0.0) + note_in
        if band_in:
            height = FIGSIZE_IN[1] + band_in
            fig.set_size_inches(table.fig_w_in if table else FIGSIZE_IN[0], height)
            engine = fig.get_layout_engine()
            assert isinstance(engine, ConstrainedLayoutEngine)  # the figure's layout="constrained"
            engine.set(rect=(0.0, band_in / height, 1.0, 1.0 - band_in / height))
        ax = fig.add_subplot()
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(*chart.x_range)
        ax.set_ylim(*chart.y_range)
        ax.xaxis.set_major_locator(LogLocator(base=10, numticks=30))
        ax.yaxis.set_major_locator(LogLocator(base=10, numticks=30))
        ax.xaxis.set_major_formatter(FuncFormatter(_ai_tick))
        ax.yaxis.set_major_formatter(FuncFormatter(_si_tick("FLOP/s")))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.grid(True, which="major", color="#e3e3e3", linewidth=0.6, zorder=0)
        ax.grid(True, which="minor", color="#f3f3f3", linewidth=0.4, zorder=0)
        ax.set_axisbelow(True)
        ax.set_xlabel("arithmetic intensity (FLOP/byte)")
        ax.set_ylabel("performance (FLOP/s)")
        fig.suptitle(chart.title, x=0.01, ha="left", fontsize=TITLE_PT, fontweight="bold")
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)

        _draw_roofs(ax, chart)
        margin = _margin_labels(ax, chart)
        if any((d.device or {}).get("energy_model") for d in docs):  # the power roof (`--energy` documents)
            from roofline.report.chart.energy_draw import draw_power_roofs

            margin = sorted(margin + draw_power_roofs(ax, docs, chart.x_range, chart.y_range, _MARGIN_PT),
                            key=lambda a: -a.xy[1])
        _draw_levels(ax, chart)
        _draw_points(ax, chart, numbers)
        _draw_legends(fig, chart)
        if skipped:
            note = fig.text(EDGE_IN, EDGE_IN / 2, "\n".join(skipped), fontsize=FONT_PT, color="#555555",
                            ha="left", va="bottom", linespacing=1.6, transform=fig.dpi_scale_trans)
            note.set_gid("note:skipped")
        if unlabelled:
            y_in = EDGE_IN / 2 + _NOTE_LINE_IN * len(skipped)
            note = fig.text(EDGE_IN, y_in, unlabelled, fontsize=FONT_PT, color="#555555", ha="left", va="bottom",
                            transform=fig.dpi_scale_trans)
            note.set_gid("note:unlabelled")
        # Lay out once, then freeze it: the labels are placed in display space and must stay put.
        fig.canvas.draw()
        fig.set_layout_engine("none")
        if band_in:  # the legends, placed at the figure's foot, move up into the room left for them
            from matplotlib.transforms import Bbox

            above = Bbox.from_bounds(0, band_in, fig.get_figwidth(), fig.get_figheight() - band_in)
            for legend in fig.legends:
                legend.set_bbox_to_anchor(above, transform=fig.dpi_scale_trans)
        _stack_margin_labels(fig, ax, margin)
        _place_labels(fig, ax, chart, numbers)
        if table is not None:
            draw_table(fig, table, top_in=table.height_in + note_in)
    return fig


def _skipped_lines(chart: Chart, width_in: float) -> list[str]:
    """The note on the records a chart cannot draw (`chart.model.skipped_text`), wrapped to `width_in`."""
    if not chart.skipped:
        return []
    import textwrap

    per_line = max(20, int(width_in * 72 / (FONT_PT * _NOTE_CHAR_EM)))
    return textwrap.wrap(f"not drawn ({len(chart.skipped)}): {skipped_text(chart.skipped)}", per_line,
                         max_lines=_SKIPPED_LINES, placeholder=" …")


def _renderer(fig: Figure) -> RendererAgg:
    """The renderer of a figure built here, whose canvas is always Agg (the stubs type `fig.canvas` as the
    base class, which has no renderer)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas
    assert isinstance(canvas, FigureCanvasAgg)
    return canvas.get_renderer()


def _width_in(fig: Figure) -> Any:
    """A function measuring a text's width in inches at FONT_PT with the figure's renderer."""
    renderer = _renderer(fig)

    def width_in(text: str, weight: str) -> float:
        probe = fig.text(0, 0, text, fontsize=FONT_PT, fontweight=weight)
        w = probe.get_window_extent(renderer).width / fig.dpi
        probe.remove()
        return float(w)

    return width_in


# ---------------------------------------------------------------- roofs, points, legends
def _roof_style(roof: Roof) -> dict[str, Any]:
    colour = doc_colour(roof.doc)
    measured = roof.source == "measured"
    width = 1.8 if roof.kind == "compute" or roof.key == "dram" else 1.3
    return {"color": colour, "linestyle": (0, (5, 3)) if measured else "-", "linewidth": width,
            "alpha": 0.8 if measured else 1.0, "solid_capstyle": "butt", "zorder": 2}


def _draw_roofs(ax: Axes, chart: Chart) -> None:
    x_lo, x_hi = chart.x_range
    for r in chart.roofs:
        style = _roof_style(r)
        if r.kind == "compute":
            start = r.x_start if r.x_start and r.x_start > x_lo else x_lo
            ax.plot([start, x_hi], [r.value, r.value], gid=f"roof:{r.gid}", **style)
            if r.ridge and x_lo < r.ridge < x_hi:
                ax.plot([r.ridge], [r.value], marker="D", markersize=4.5, color=style["color"], linestyle="none",
                        zorder=3, gid=f"ridge:{r.gid}")
        else:
            end = min(r.x_end or x_hi, x_hi)
            ax.plot([x_lo, end], [x_lo * r.value, end * r.value], gid=f"roof:{r.gid}", **style)


def _draw_points(ax: Axes, chart: Chart, numbers: dict[str, int]) -> None:
    """Headroom lines and markers. A profile's: areas by share, the largest first so that smaller markers
    stay visible on top of it, headroom lines only where a number says which op it is."""
    points = sorted(chart.points, key=lambda p: -marker_pt(p)) if chart.profile else chart.points
    where = {p.gid: p for p in chart.points}
    for n, line in enumerate(chart.lines):  # a sweep: its points joined, under the markers
        ax.plot([where[g].ai for g in line], [where[g].flops_per_s for g in line], color=doc_colour(where[line[0]].doc),
                linewidth=1.0, alpha=0.6, zorder=4, gid=f"sweep:{n}")
    for p in points:
        colour = bound_colour(p.bound)
        if p.has_headroom and (p.share is None or p.gid in numbers):
            ax.plot([p.ai, p.ai], [p.flops_per_s, p.roof_flops_per_s], color=colour, linestyle=(0, (1, 1.5)),
                    linewidth=1.2, alpha=0.7, zorder=3, gid=f"headroom:{p.gid}")
        ax.plot([p.ai], [p.flops_per_s], linestyle="none", marker=doc_marker(p.doc),
                markersize=marker_pt(p), markeredgewidth=1.6 if not p.timed else 0.8,
                markerfacecolor=colour if p.timed else "white",
                markeredgecolor=colour if not p.timed else "white", zorder=5, gid=f"point:{p.gid}")


# The marker of each memory level's counter point (hollow, in the record's bound colour).
LEVEL_MARKERS = {"L1": "v", "L2": "s", "DRAM": "^"}
LEVEL_MARKER_PT = MARKER_PT * 0.8


def _draw_levels(ax: Axes, chart: Chart) -> None:
    """Each record's counter points (L1, L2, DRAM) and a thin line through them to the record's own point,
    the model's minimum bytes: one horizontal line per record (`model.LevelPoint`)."""
    by_record: dict[tuple[int, int], list[Any]] = {}
    for v in chart.levels:
        by_record.setdefault((v.doc, v.record), []).append(v)
    points = {(p.doc, p.record): p for p in chart.points}
    for key, levels in by_record.items():
        p = points[key]
        colour = bound_colour(p.bound)
        xs = [v.ai for v in levels] + [p.ai]
        ax.plot([min(xs), max(xs)], [p.flops_per_s, p.flops_per_s], color=colour, linewidth=0.8, alpha=0.6,
                zorder=4, gid=f"levels:{p.gid}")
        for v in levels:
            ax.plot([v.ai], [v.flops_per_s], linestyle="none", marker=LEVEL_MARKERS[v.level],
                    markersize=LEVEL_MARKER_PT, markerfacecolor="white", markeredgecolor=colour,
                    markeredgewidth=1.3, zorder=4, gid=f"level:{v.gid}")


def _draw_legends(fig: Figure, chart: Chart) -> None:
    from matplotlib.lines import Line2D

    series = [Line2D([], [], color=doc_colour(i), marker=doc_marker(i), markerfacecolor="#bbbbbb",
                     markeredgecolor=doc_colour(i), markersize=MARKER_PT, linewidth=1.8, label=name)
              for i, name in enumerate(chart.series)]
    leg = fig.legend(handles=series, loc="outside lower left", title="results", frameon=False,
                     alignment="left")
    leg.set_gid("legend:series")
    key: list[Any] = []
    bounds = list(dict.fromkeys(p.bound for p in chart.points))
    for b in sorted(bounds, key=lambda b: (b not in BOUND_COLOURS, b)):
        key.append(Line2D([], [], linestyle="none", marker="o", markersize=MARKER_PT, markeredgecolor="white",
                          markerfacecolor=bound_colour(b), label=f"{b}-bound"))
    if any(p.timed for p in chart.points):
        key.append(Line2D([], [], linestyle="none", marker="o", markersize=MARKER_PT, color="#555555",
                          markeredgecolor="white", label="timed (achieved)"))
    if any(not p.timed for p in chart.points):
        key.append(Line2D([], [], linestyle="none", marker="o", markersize=MARKER_PT, markerfacecolor="white",
                          markeredgecolor="#555555", markeredgewidth=1.6, label="model only (attainable)"))
    if any(p.has_headroom for p in chart.points):
        key.append(Line2D([], [], color="#555555", linestyle=(0, (1, 1.5)), linewidth=1.2, label="headroom to roof"))
    for level in dict.fromkeys(v.level for v in chart.levels):
        key.append(Line2D([], [], linestyle="none", marker=LEVEL_MARKERS[level], markersize=LEVEL_MARKER_PT,
                          markerfacecolor="white", markeredgecolor="#555555", markeredgewidth=1.3,
                          label=f"{level} bytes (ncu)"))
    if chart.levels:
        key.append(Line2D([], [], color="#555555", linewidth=0.8, marker="o", markevery=[1], markersize=4,
                          label="same FLOPs, ● minimum bytes"))
    if chart.profile:
        key.append(Line2D([], [], linestyle="none", marker="o", markersize=MARKER_PT * 1.6, color="#bbbbbb",
                          markeredgecolor="white", label="area: share of time"))
    for source in chart.sources:
        key.append(Line2D([], [], color="#2b2b2b", linewidth=1.8, linestyle="-" if source == "datasheet"
                          else (0, (5, 3)), label=f"{source} roof"))
    key.append(Line2D([], [], linestyle="none", marker="D", markersize=4.5, color="#2b2b2b", label="ridge point"))
    leg2 = fig.legend(handles=key, loc="outside lower right", title="key", frameon=False, alignment="left",
                      ncols=3, columnspacing=1.2)
    leg2.set_gid("legend:key")


# ---------------------------------------------------------------- labels
def _margin_labels(ax: Axes, chart: Chart) -> list[Any]:
    """Each compute ceiling's label just right of the axes, at its height (made before the layout runs, so
    the layout leaves room for them); `_stack_margin_labels` then moves them apart vertically."""
    out = []
    for r in sorted((r for r in chart.roofs if r.kind == "compute"), key=lambda r: (-r.value, r.doc, r.source)):
        colour = doc_colour(r.doc)
        ann = ax.annotate(r.text, xy=(1.0, r.value), xycoords=ax.get_yaxis_transform(), xytext=(_MARGIN_PT, 0),
                          textcoords="offset points", ha="left", va="center", fontsize=FONT_PT, color=colour,
                          annotation_clip=False, arrowprops={"arrowstyle": "-", "color": colour, "linewidth": 0.8,
                                                             "shrinkA": 1.5, "shrinkB": 0})
        ann.set_gid(f"label:roof:{r.gid}")
        out.append(ann)
    return out


def _stack_margin_labels(fig: Figure, ax: Axes, labels: list[Any]) -> None:
    """Move the margin labels apart vertically, inside the axes' height; each keeps its connector to the
    end of its line."""
    if not labels:
        return
    renderer = _renderer(fig)
    px_per_pt = fig.dpi / 72.0
    box = ax.get_window_extent(renderer)
    wanted = [float(ax.transData.transform((1.0, a.xy[1]))[1]) for a in labels]
    ys = stack(wanted, [a.get_window_extent(renderer).height for a in labels], box.y0, box.y1)
    for ann, y, want in zip(labels, ys, wanted, strict=True):
        ann.xyann = (_MARGIN_PT, (y - want) / px_per_pt)


def _scene(fig: Figure, ax: Axes, chart: Chart) -> Scene:
    """What the labels must keep clear of, in display pixels: the axes' area, every roof and headroom
    line, the markers and the ridge points."""
    import numpy as np

    renderer = _renderer(fig)
    to_px = ax.transData.transform
    px_per_pt = fig.dpi / 72.0
    bbox = ax.get_window_extent(renderer)
    scene = Scene((bbox.x0 + 2, bbox.y0 + 2, bbox.x1 - 2, bbox.y1 - 2), [], [])
    for line in ax.get_lines():
        gid = line.get_gid() or ""
        if not gid.startswith(("roof:", "headroom:", "levels:")):
            continue
        xy = to_px(line.get_xydata())  # the line's (x, y) pairs, as floats
        scene.segments += [(gid, ((xy[k][0], xy[k][1]), (xy[k + 1][0], xy[k + 1][1]))) for k in range(len(xy) - 1)]
    for p in chart.points:
        half = marker_pt(p) * px_per_pt / 2 + 1
        cx, cy = to_px((p.ai, p.flops_per_s))
        scene.markers.append(rect(cx - half, cy - half, cx + half, cy + half))
    for v in chart.levels:
        half = LEVEL_MARKER_PT * px_per_pt / 2 + 1
        cx, cy = to_px((v.ai, v.flops_per_s))
        scene.markers.append(rect(cx - half, cy - half, cx + half, cy + half))
    for line in ax.get_lines():
        if (line.get_gid() or "").startswith("ridge:"):
            cx, cy = to_px(np.asarray(line.get_xydata())[0])  # an ndarray already (the stubs say ArrayLike)
            scene.markers.append(rect(cx - 5, cy - 5, cx + 5, cy + 5))
    scene.shapes += scene.markers
    return scene


def _place_labels(fig: Figure, ax: Axes, chart: Chart, numbers: dict[str, int]) -> None:
    """Memory-roof labels and each point's label (or number), where the placer puts them."""
    renderer = _renderer(fig)

    def to_px(xy: tuple[float, float]) -> tuple[float, float]:
        x, y = ax.transData.transform(xy)
        return x, y

    def measure(text: str, weight: str) -> tuple[float, float]:
        probe = ax.text(0.5, 0.5, text, fontsize=FONT_PT, fontweight=weight, transform=ax.transAxes)
        ext = probe.get_window_extent(renderer)
        probe.remove()
        return ext.width, ext.height

    for placement in place_labels(_scene(fig, ax, chart), chart, numbers, to_px, measure, fig.dpi / 72.0):
        _draw_label(ax, placement)


def _draw_label(ax: Axes, p: Placement) -> None:
    """Draw a placed label; its leader, if any, is the annotation's arrow or (a callout's) a line beneath
    the markers from the point's centre ('leader:DOC:RECORD')."""
    c = p.spot
    arrow = None
    if c.leader is not None and p.leader_under:
        end = ax.transData.inverted().transform(c.leader[1])
        ax.plot([c.xy[0], end[0]], [c.xy[1], end[1]], color=_LEADER_COLOUR, linewidth=0.7, zorder=4,
                solid_capstyle="butt", gid=p.gid.replace("label:point:", "leader:"))
    elif c.leader is not None:
        # from the text's anchor corner, where the placer's leader ends (`point_candidates`): from the box's
        # centre, the drawn line was not the one the placer kept clear, and a sweep's leaders crossed
        relpos = ({"left": 0.0, "right": 1.0}.get(c.ha, 0.5), {"bottom": 0.0, "top": 1.0}.get(c.va, 0.5))
        arrow = {"arrowstyle": "-", "color": _LEADER_COLOUR, "linewidth": 0.7, "shrinkA": 1,
                 "shrinkB": MARKER_PT / 2 + 1, "relpos": relpos}
    colour = _NAME_COLOUR if p.kind == "name" else doc_colour(p.doc)
    ann = ax.annotate(p.text, xy=c.xy, xytext=c.offset_pt, textcoords="offset points", ha=c.ha, va=c.va,
                      rotation=c.angle, rotation_mode="anchor" if p.kind == "roof" else "default",
                      fontsize=FONT_PT, fontweight=p.weight, color=colour, bbox=LABEL_BOX, zorder=6,
                      annotation_clip=False, arrowprops=arrow)
    ann.set_gid(p.gid)


# ---------------------------------------------------------------- saving
def save_chart(docs: Sequence[Document], path: str | os.PathLike[str], labels: Sequence[str] | None = None,
               roof: str = "both", title: str | None = None, force: bool = False) -> Path:
    """Write the chart as PNG, SVG or PDF, chosen by the path's suffix; returns the path written. A file already
    there is kept (a RooflineError) unless `force`: the chart is created exclusively, as write_document creates a
    document, so a file that appeared while the chart was drawn is never replaced unasked."""
    figure_format(path)  # an unknown suffix fails before anything is drawn
    validate.boolean("save_chart", "force", force)
    fig = build_figure(docs, labels=labels, roof=roof, title=title)
    return save_figure(fig, path, exclusive=not force, pad_inches=0.15, facecolor="white")


__all__ = ["FIGSIZE_IN", "build_figure", "save_chart"]
