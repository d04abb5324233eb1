"""Drawing the power roof on the roofline chart and the energy roofline (FLOP/J against intensity) as its own
chart (`roofline plot --energy`). The curves are `report.chart.energy`'s; this module only draws them."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline.core import validate
from roofline.core.format import si
from roofline.report.chart.energy import energy_caption, energy_view, power_roofs
from roofline.report.figures import DPI, figure_format, save_figure
from roofline.report.style import FONT_PT, TITLE_PT, doc_colour, doc_marker

if TYPE_CHECKING:
    from roofline.core.document import Document

POWER_STYLE = {"linestyle": (0, (1, 1.5)), "linewidth": 1.6, "alpha": 0.9, "zorder": 2}
FIGSIZE_IN = (8.0, 5.5)
CURVE_STYLES = ("-", "--", "-.", ":")  # one per pipe's curve of a document


def draw_power_roofs(ax: Any, docs: Sequence[Document], x_range: tuple[float, float],
                     y_range: tuple[float, float], margin_pt: float) -> list[Any]:
    """The documents' power roofs on the roofline axes ('power:DOC:PIPE'), clipped to the chart's y range; their
    labels ('label:power:DOC:PIPE'), made for the right margin as the compute roofs' are (the caller stacks
    them with those), are returned."""
    labels = []
    for c in power_roofs(docs, x_range):
        pts = [(x, y) for x, y in zip(c.xs, c.ys, strict=True) if y <= y_range[1]]
        if not pts:
            continue
        colour = doc_colour(c.doc)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], color=colour, gid=f"power:{c.gid}", **POWER_STYLE)
        y = pts[-1][1]
        ann = ax.annotate(f"{c.name} {si(y, 'FLOP/s')}", xy=(1.0, y), xycoords=ax.get_yaxis_transform(),
                          xytext=(margin_pt, 0), textcoords="offset points", ha="left", va="center",
                          fontsize=FONT_PT, color=colour, annotation_clip=False,
                          arrowprops={"arrowstyle": "-", "color": colour, "linewidth": 0.8, "linestyle": ":",
                                      "shrinkA": 1.5, "shrinkB": 0})
        ann.set_gid(f"label:power:{c.gid}")
        labels.append(ann)
    return labels


def build_energy_figure(docs: Sequence[Document], title: str | None = None) -> Any:
    """The energy roofline (FLOP per joule against intensity): each pipe's best FLOP/J ('energy:DOC:PIPE') and
    each record with energy ('epoint:DOC:RECORD', numbered; the caption lists them)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    view = energy_view(docs, title)
    fig = Figure(figsize=FIGSIZE_IN, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*view.x_range)
    ax.set_ylim(*view.y_range)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: si(v, "FLOP/J")))
    ax.grid(True, which="major", color="#e3e3e3", linewidth=0.6)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("energy efficiency (FLOP/J)")
    fig.suptitle(view.title, x=0.01, ha="left", fontsize=TITLE_PT, fontweight="bold")
    for k, c in enumerate(view.curves):
        ax.plot(c.xs, c.ys, color=doc_colour(c.doc), linewidth=1.8, linestyle=CURVE_STYLES[k % len(CURVE_STYLES)],
                gid=f"energy:{c.gid}", label=c.name)
    for n, p in enumerate(view.points, start=1):
        ax.plot([p.ai], [p.flops_per_j], marker=doc_marker(p.doc), color=doc_colour(p.doc), linestyle="none",
                markersize=7, gid=f"epoint:{p.doc}:{p.record}")
        ax.annotate(str(n), xy=(p.ai, p.flops_per_j), xytext=(5, 3), textcoords="offset points", fontsize=FONT_PT)
    if view.curves:
        ax.legend(loc="lower right", fontsize=FONT_PT, frameon=False)
    caption = energy_caption(view)
    if caption:
        fig.text(0.01, 0.0, "\n".join(caption[:12]), fontsize=FONT_PT - 1, va="top", ha="left", color="#333333")
    return fig


def save_energy_chart(docs: Sequence[Document], path: str | os.PathLike[str], title: str | None = None,
                      force: bool = False) -> Path:
    """Write the energy roofline as PNG, SVG or PDF (by the path's suffix); a file already there is kept unless
    `force` (created exclusively, as `save_chart`)."""
    figure_format(path)
    validate.boolean("save_energy_chart", "force", force)
    return save_figure(build_energy_figure(docs, title), path, exclusive=not force, pad_inches=0.15,
                       facecolor="white")
