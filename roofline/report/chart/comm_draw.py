"""Drawing the busbw chart of collectives documents (`report.comm.comm_chart`): busbw against message size
(log x, log y), one line per collective, the spec's NVLink bandwidth per direction as a horizontal line, and
each fit's latency knee n_1/2 as a marker on its line (below it latency dominates, above it bandwidth)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from roofline.core import validate
from roofline.core.format import si
from roofline.report.comm import CommChart, _size, comm_chart, knee_busbw
from roofline.report.figures import figure_format, save_figure
from roofline.report.style import DOC_COLOURS, DOC_MARKERS, FONT_PT, TITLE_PT

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.figure import Figure

    from roofline.core.document import Document

FIGSIZE_IN = (10.0, 6.0)
CEILING_COLOUR = "#d7301f"


def build_comm_figure(chart: CommChart) -> Figure:
    """The matplotlib figure of a busbw chart (Agg canvas)."""
    from roofline.report.chart.draw import _matplotlib, _si_tick

    _matplotlib()
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    fig = Figure(figsize=FIGSIZE_IN)
    ax = fig.add_subplot()
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    top = 0.0
    for i, line in enumerate(chart.lines):
        colour, marker = DOC_COLOURS[i % len(DOC_COLOURS)], DOC_MARKERS[i % len(DOC_MARKERS)]
        y = knee_busbw(line)
        # the knee's size goes in the legend (labels beside close knees would overlap); a tick marks it
        label = line.label + (f" (knee n½ {_size(line.knee_bytes)})" if y is not None and line.knee_bytes else "")
        ax.plot(line.sizes, line.busbw, marker=marker, markersize=4, color=colour, label=label, lw=1.4)
        if y is not None and line.knee_bytes is not None:
            ax.plot([line.knee_bytes], [y], marker="|", markersize=16, mew=2, color=colour, zorder=5)
        top = max([top, *line.busbw])
    for name, value in chart.ceilings:
        ax.axhline(value, color=CEILING_COLOUR, lw=1.2, ls="--")
        # above the line, right of the legend: the curves approach a ceiling from below
        ax.annotate(name, (0.6, value), xycoords=("axes fraction", "data"), textcoords="offset points",
                    xytext=(0, 3), fontsize=FONT_PT, color=CEILING_COLOUR, ha="center")
        top = max(top, value)
    if top > 0:
        ax.set_ylim(top=top * 2)  # room above the highest line or ceiling for the legend
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: _size(v) if v > 0 else ""))
    ax.yaxis.set_major_formatter(FuncFormatter(_si_tick("B/s")))
    ax.set_xlabel("message size S (nccl-tests' size: the full buffer)", fontsize=FONT_PT)
    ax.set_ylabel("busbw, one direction", fontsize=FONT_PT)
    ax.tick_params(labelsize=FONT_PT)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=FONT_PT, loc="lower right")  # the curves rise from lower left to upper right
    fig.suptitle(chart.title, fontsize=TITLE_PT)
    return fig


def save_comm_chart(docs: Sequence[Document], path: str | os.PathLike[str], labels: Sequence[str] | None = None,
                    title: str | None = None, force: bool = False) -> Path:
    """Write the busbw chart as PNG, SVG or PDF by the path's suffix; a file already there is kept unless `force`
    (created exclusively, as `save_chart`)."""
    figure_format(path)
    validate.boolean("save_comm_chart", "force", force)
    fig = build_comm_figure(comm_chart(docs, labels, title))
    return save_figure(fig, path, exclusive=not force, pad_inches=0.15, facecolor="white")


def render_comm_terminal(docs: Sequence[Document], width: int = 80, labels: Sequence[str] | None = None) -> str:
    """The busbw chart as text: one row per size, one column of busbw per collective, the ceiling in the title
    line (a table reads better than a 80-column log plot of five lines)."""
    chart = comm_chart(docs, labels)
    sizes = sorted({s for ln in chart.lines for s in ln.sizes})
    head = ["size", *(ln.label for ln in chart.lines)]
    rows = [[_size(s), *(_cell(ln.sizes, ln.busbw, s) for ln in chart.lines)] for s in sizes]
    widths = [max(len(r[j]) for r in [head, *rows]) for j in range(len(head))]
    fmt = "  ".join(f"{{:>{w}}}" for w in widths)
    lines = [chart.title[:width], "busbw (one direction) by message size"]
    lines += [f"ceiling: {name}" for name, _ in chart.ceilings]
    lines += [fmt.format(*head), *(fmt.format(*r) for r in rows)]
    lines += [f"{ln.label}: knee n½ {_size(ln.knee_bytes)}" for ln in chart.lines if ln.knee_bytes]
    return "\n".join(lines)


def _cell(sizes: Sequence[float], values: Sequence[float], size: float) -> str:
    for s, v in zip(sizes, values, strict=True):
        if s == size:
            return si(v, "B/s")
    return "-"


__all__ = ["build_comm_figure", "render_comm_terminal", "save_comm_chart"]
