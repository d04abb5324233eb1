"""Roofline charts from results documents: a chart model (pure data) and its matplotlib rendering.

The model (`chart_model`) decides what is drawn: which ceilings, which points, the axis ranges and the
title; `build_figure` draws it with matplotlib and `roofline.report.terminal` draws it in characters.
matplotlib is imported only when a figure is built, with the headless Agg backend, so importing this
module (or the CLI) stays cheap.

Choices a reader of the chart should know:
- Datasheet roofs are solid, measured roofs (a calibration's) dashed. Of the memory levels, the datasheet
  block draws DRAM only: its shared-memory figure is derived (bytes/clock x SMs x boost clock), not a
  datasheet number, so SMEM and L2 appear only when measured.
- A record's headroom line runs up to the roof it was analysed against (its attainable FLOP/s), so its
  length is what `roofline_fraction` measures; when that roof is not drawn (--roof measured on a
  datasheet record) it runs up to the drawn roof of the same pipe instead.
- Up to NUMBERED_ABOVE points are labelled by name on the chart. More are numbered (1, 2, ... across all
  documents, by intensity) and listed in a table under the chart: number, label (with the parameters
  that tell records of one name apart), intensity, FLOP/s and fraction of the roof.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline.core.errors import RooflineError, UsageError
from roofline.core.model import pipe_label

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure

ROOF_CHOICES = ("datasheet", "measured", "both")
FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}

# Memory levels a block may draw, in order, with their chart names. NB: the datasheet block draws DRAM
# only (its smem figure is derived, not quoted); other measured keys (dram_read, dram_copy) are details.
MEMORY_LEVELS = {"dram": "DRAM", "l2": "L2", "smem": "SMEM"}
DATASHEET_MEMORY = ("dram",)
CONTEXT_PIPE = "fp32_dense_tflops"  # drawn for context whenever the records run on tensor pipes

# Axis padding around the data, in decades: room on the right and at the top for the ceiling labels.
_PAD_LEFT, _PAD_RIGHT, _PAD_TOP, _PAD_BOTTOM = 0.45, 0.75, 0.45, 0.55
_MIN_SPAN_DECADES = 3.0  # at least three decade ticks on each axis


# ---------------------------------------------------------------- reading
def load_documents(paths: Iterable[str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """Read and validate results files; a file without records is an error (nothing to draw)."""
    from roofline.core.document import read_document

    docs = []
    for path in paths:
        doc = read_document(path)
        if not doc["records"]:
            raise RooflineError(f"{path}: no records to plot (the document's 'records' list is empty)")
        docs.append(doc)
    if not docs:
        raise RooflineError("no results files to plot")
    return docs


# ---------------------------------------------------------------- units
_PREFIXES = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def eng(value: float, unit: str, digits: int = 3) -> str:
    """989.4e12, 'FLOP/s' -> '989 TFLOP/s'; 4.8e12, 'B/s' -> '4.8 TB/s'."""
    for scale, prefix in _PREFIXES:
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g} {prefix}{unit}"
    return f"{value:.{digits}g} {unit}"


def intensity_text(ai: float) -> str:
    """Arithmetic intensity for a label: '1,365', '62.7', '0.833'."""
    return f"{ai:,.0f}" if ai >= 100 else f"{ai:.3g}"


# ---------------------------------------------------------------- the chart model
@dataclass(frozen=True)
class Roof:
    """One ceiling line: a compute pipe (FLOP/s, horizontal) or a memory level (bytes/s, diagonal)."""

    doc: int
    source: str  # "datasheet" | "measured"
    kind: str  # "compute" | "memory"
    key: str  # spec key of the pipe, or the memory level ("dram", "l2", "smem")
    name: str  # "BF16 tensor", "DRAM"
    value: float  # FLOP/s or bytes/s
    ridge: float | None = None  # compute: the intensity where it meets the same source's DRAM roof
    x_end: float | None = None  # memory: the intensity where it meets the same source's highest compute roof

    @property
    def text(self) -> str:
        unit = "FLOP/s" if self.kind == "compute" else "B/s"
        suffix = " (measured)" if self.source == "measured" else ""
        return f"{self.name} {eng(self.value, unit)}{suffix}"

    @property
    def gid(self) -> str:
        return f"{self.doc}:{self.source}:{self.kind}:{self.key}"


@dataclass(frozen=True)
class Point:
    """One record on the chart: measured at (AI, achieved), analytic at (AI, attainable)."""

    doc: int
    record: int
    label: str  # "gemm bf16", "swiglu fused bf16"
    ai: float
    flops_per_s: float
    timed: bool
    bound: str
    roof_flops_per_s: float  # the top of its headroom line

    @property
    def fraction(self) -> float:
        return self.flops_per_s / self.roof_flops_per_s if self.roof_flops_per_s > 0 else float("nan")

    @property
    def gid(self) -> str:
        return f"{self.doc}:{self.record}"


@dataclass(frozen=True)
class Chart:
    title: str
    series: tuple[str, ...]  # one legend name per document
    sources: tuple[str, ...]  # roof sources drawn
    roofs: tuple[Roof, ...]
    points: tuple[Point, ...]
    skipped: tuple[str, ...]  # records that cannot sit on a log-log chart, as 'op dtype: why'
    x_range: tuple[float, float]
    y_range: tuple[float, float]


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) and v > 0 else None


def _rates(block: dict[str, Any], field: str) -> dict[str, float]:
    raw = block.get(field)
    if not isinstance(raw, dict):
        return {}
    return {str(k): x for k, v in raw.items() if (x := _number(v)) is not None}


def _blocks(doc: dict[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
    """The document's ceilings by source: {'datasheet'|'measured': {'compute': {...}, 'memory': {...}}}.

    A document without a ceilings block (hand-made, or older) gets one from its records' peaks.
    """
    device = doc.get("device") or {}
    blocks: dict[str, dict[str, dict[str, float]]] = {}
    for field in ("ceilings", "measured_ceilings"):
        block = device.get(field)
        if not isinstance(block, dict):
            continue
        source = "measured" if field == "measured_ceilings" else str(block.get("source") or "datasheet")
        blocks[source] = {"compute": _rates(block, "compute_flops_per_s"),
                          "memory": _rates(block, "memory_bytes_per_s")}
    if not blocks:
        compute: dict[str, float] = {}
        memory: dict[str, float] = {}
        source = "datasheet"
        for rec in doc["records"]:
            if (peak := _number(rec.get("peak_flops_per_s"))) is not None:
                compute.setdefault(str(rec.get("compute_pipe") or f"{rec.get('dtype')}_peak"), peak)
            if (bw := _number(rec.get("peak_bytes_per_s"))) is not None:
                memory.setdefault("dram", bw)
            source = str(rec.get("roof_source") or source)
        blocks[source] = {"compute": compute, "memory": memory}
    return blocks


def device_name(doc: dict[str, Any]) -> str:
    device = doc.get("device") or {}
    ceilings = device.get("ceilings") or {}
    return str(device.get("name") or device.get("spec_name") or ceilings.get("device_id") or "unknown device")


def _date(doc: dict[str, Any]) -> str:
    created = doc.get("created")
    return created[:10] if isinstance(created, str) else ""


def _series_names(docs: Sequence[dict[str, Any]], labels: Sequence[str] | None) -> tuple[str, ...]:
    if labels is not None:
        if len(labels) != len(docs):
            raise UsageError(f"{len(labels)} label(s) for {len(docs)} results file(s): give one label per file")
        return tuple(str(x) for x in labels)
    names = [device_name(d) for d in docs]
    dup = {n for n in names if names.count(n) > 1}
    names = [f"{n} ({_date(d)})" if n in dup and _date(d) else n for n, d in zip(names, docs, strict=True)]
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n} #{seen[n]}")
    return tuple(out)


def record_label(rec: dict[str, Any]) -> str:
    """op + variant + dtype: 'swiglu fused bf16'."""
    return " ".join(str(p) for p in (rec.get("op"), rec.get("variant"), rec.get("dtype")) if p)


def _doc_roofs(i: int, doc: dict[str, Any], name: str, roof: str) -> list[Roof]:
    blocks = _blocks(doc)
    if roof == "datasheet" and "datasheet" not in blocks:
        raise RooflineError(f"{name}: no datasheet ceilings in this document (a CPU's roofline is measured): "
                            "use --roof measured or both")
    if roof == "measured" and "measured" not in blocks:
        raise RooflineError(f"{name}: no measured ceilings in this document (run `roofline calibrate` on that "
                            "machine and analyze again, or use --roof datasheet)")
    sources = [s for s in ("datasheet", "measured") if s in blocks and roof in (s, "both")]
    pipes: dict[str, tuple[str, float | None]] = {}  # pipe -> (label, the records' peak)
    for rec in doc["records"]:
        pipe = rec.get("compute_pipe")
        if pipe:
            label = str(rec.get("compute_pipe_label") or pipe_label(str(pipe)))
            pipes.setdefault(str(pipe), (label, _number(rec.get("peak_flops_per_s"))))
    if any("_tensor_" in p for p in pipes) and CONTEXT_PIPE not in pipes:
        pipes[CONTEXT_PIPE] = ("FP32 CUDA cores", None)
    record_sources = {str(r.get("roof_source") or "datasheet") for r in doc["records"]}
    roofs: list[Roof] = []
    for source in sources:
        compute, memory = blocks[source]["compute"], blocks[source]["memory"]
        dram = memory.get("dram")
        block_roofs = []
        for pipe, (label, record_peak) in pipes.items():
            value = compute.get(pipe)
            if value is None and source in record_sources:
                value = record_peak  # a ceilings block without this pipe: the records say what they used
            if value is not None:
                block_roofs.append(Roof(i, source, "compute", pipe, label, value,
                                        ridge=value / dram if dram else None))
        top = max((r.value for r in block_roofs), default=None)
        levels = DATASHEET_MEMORY if source == "datasheet" else tuple(MEMORY_LEVELS)
        for level in levels:
            if (bw := memory.get(level)) is not None:
                block_roofs.append(Roof(i, source, "memory", level, MEMORY_LEVELS[level], bw,
                                        x_end=top / bw if top else None))
        roofs += block_roofs
    return roofs


def _headroom_roof(rec: dict[str, Any], ai: float, roofs: list[Roof]) -> float:
    """Attainable FLOP/s of a record against the roof it was analysed on, or the drawn one of its pipe."""
    source = str(rec.get("roof_source") or "datasheet")
    drawn = {r.source for r in roofs}
    own = _number(rec.get("attainable_flops_per_s"))
    peak, bw = _number(rec.get("peak_flops_per_s")), _number(rec.get("peak_bytes_per_s"))
    if own is None and peak is not None and bw is not None:
        own = min(peak, ai * bw)
    if source in drawn or not drawn:
        return own if own is not None else float("nan")
    other = min(drawn)  # the one source drawn
    compute = next((r.value for r in roofs if r.source == other and r.key == rec.get("compute_pipe")), peak)
    dram = next((r.value for r in roofs if r.source == other and r.key == "dram"), bw)
    if compute is None or dram is None:
        return own if own is not None else float("nan")
    return min(compute, ai * dram)


def _same_roof(a: Roof, b: Roof) -> bool:
    return (a.source, a.kind, a.key) == (b.source, b.kind, b.key) and math.isclose(a.value, b.value, rel_tol=1e-9)


def _span(lo: float, hi: float, pad_lo: float, pad_hi: float) -> tuple[float, float]:
    llo, lhi = math.log10(lo) - pad_lo, math.log10(hi) + pad_hi
    if lhi - llo < _MIN_SPAN_DECADES:
        grow = (_MIN_SPAN_DECADES - (lhi - llo)) / 2
        llo, lhi = llo - grow, lhi + grow
    return 10**llo, 10**lhi


def chart_model(docs: Sequence[dict[str, Any]], labels: Sequence[str] | None = None, roof: str = "both",
                title: str | None = None) -> Chart:
    """What a roofline chart of these documents shows (no drawing)."""
    if roof not in ROOF_CHOICES:
        raise UsageError(f"--roof must be one of {', '.join(ROOF_CHOICES)}, got {roof!r}")
    if not docs:
        raise RooflineError("no results documents to plot")
    series = _series_names(docs, labels)
    roofs: list[Roof] = []
    points: list[Point] = []
    skipped: list[str] = []
    for i, doc in enumerate(docs):
        records = doc.get("records") or []
        if not records:
            raise RooflineError(f"{series[i]}: no records to plot")
        own = _doc_roofs(i, doc, series[i], roof)
        for j, rec in enumerate(records):
            ai = _number(rec.get("arithmetic_intensity"))
            timed = rec.get("time_s") is not None and rec.get("achieved_flops_per_s") is not None
            y = _number(rec.get("achieved_flops_per_s") if timed else rec.get("attainable_flops_per_s"))
            if y is None and not timed and ai is not None:
                peak, bw = _number(rec.get("peak_flops_per_s")), _number(rec.get("peak_bytes_per_s"))
                y = min(peak, ai * bw) if peak is not None and bw is not None else None
            if ai is None or y is None:
                why = "no finite arithmetic intensity" if ai is None else "no positive FLOP/s"
                skipped.append(f"{record_label(rec)}: {why}")
                continue
            points.append(Point(i, j, record_label(rec), ai, y, timed, str(rec.get("bound") or "unknown"),
                                _headroom_roof(rec, ai, own)))
        # Before/after on one GPU: the second document's identical roofs are not drawn again.
        roofs += [r for r in own if not any(_same_roof(r, o) for o in roofs)]
    if not points:
        raise RooflineError("no record can be drawn on a log-log chart: " + "; ".join(skipped))
    points = _distinct_labels(points, docs)
    xs = [p.ai for p in points] + [r.ridge for r in roofs if r.ridge] + [r.x_end for r in roofs if r.x_end]
    ys = [p.flops_per_s for p in points] + [r.value for r in roofs if r.kind == "compute"]
    x_range = _span(min(xs), max(xs), _PAD_LEFT, _PAD_RIGHT)
    y_range = _span(min(ys), max(ys), _PAD_BOTTOM, _PAD_TOP)
    sources = tuple(s for s in ("datasheet", "measured") if any(r.source == s for r in roofs))
    return Chart(title or _title(docs, points), series, sources, tuple(roofs), tuple(points), tuple(skipped),
                 x_range, y_range)


def _distinct_labels(points: list[Point], docs: Sequence[dict[str, Any]]) -> list[Point]:
    """Records of one document that share a label get the parameters that tell them apart (at most two,
    then a number): 'conv2d direct fp16 in_channels=64 height=56'."""
    groups: dict[tuple[int, str], list[int]] = {}
    for k, p in enumerate(points):
        groups.setdefault((p.doc, p.label), []).append(k)
    out = list(points)
    for (doc, label), members in groups.items():
        if len(members) < 2:
            continue
        params = [docs[doc]["records"][points[k].record].get("params") or {} for k in members]
        keys = _telling_keys(params)
        texts = [" ".join([label, *(f"{key}={ps.get(key)}" for key in keys)]) for ps in params]
        for n, (k, text) in enumerate(zip(members, texts, strict=True)):
            if texts.count(text) > 1:
                text = f"{text} #{n + 1}"
            out[k] = replace(points[k], label=text)
    return out


def _telling_keys(params: list[dict[str, Any]], most: int = 2) -> tuple[str, ...]:
    """The fewest parameter names (at most `most`, earliest first) whose values tell the most records apart."""
    from itertools import combinations

    names = list(dict.fromkeys(k for ps in params for k in ps))

    def distinct(keys: tuple[str, ...]) -> int:
        return len({tuple(repr(ps.get(k)) for k in keys) for ps in params})

    best: tuple[str, ...] = ()
    for size in range(1, most + 1):
        for keys in combinations(names, size):
            if distinct(keys) > distinct(best):
                best = keys
        if distinct(best) == len(params):
            break
    return best


# Above this many points a chart numbers them instead of labelling them. Up to about eight full labels find
# room around their markers on the 10 x 6.5 in chart; real suites put 10-20 records in two tight clusters
# (DRAM-bound near 1 FLOP/byte, tensor-bound near 1-3k), where labels need long leader lines that cross
# each other and still collide. A numbered chart puts a short number by each marker and lists number ->
# label, intensity, FLOP/s and fraction of the roof in a table under the chart, where nothing can overlap.
NUMBERED_ABOVE = 8


def is_numbered(chart: Chart) -> bool:
    """Whether the chart marks its points with numbers (and a table) rather than labels."""
    return len(chart.points) > NUMBERED_ABOVE


def point_numbers(chart: Chart) -> dict[str, int]:
    """The chart number of each point (gid -> 1, 2, ...), unique across documents: document by document,
    then left to right (rising intensity), higher first at equal intensity, so that points near each other
    on the chart get nearby numbers and the table reads along the x axis."""
    order = sorted(chart.points, key=lambda p: (p.doc, p.ai, -p.flops_per_s, p.record))
    return {p.gid: n for n, p in enumerate(order, 1)}


def _title(docs: Sequence[dict[str, Any]], points: Sequence[Point]) -> str:
    names = list(dict.fromkeys(device_name(d) for d in docs))
    dtypes = list(dict.fromkeys(str(docs[p.doc]["records"][p.record].get("dtype")) for p in points))
    dates = list(dict.fromkeys(d for d in (_date(doc) for doc in docs) if d))
    parts = [f"Roofline: {' vs '.join(names)}", ", ".join(dtypes)]
    if dates:
        parts.append(" / ".join(dates))
    return "  ·  ".join(parts)


# ---------------------------------------------------------------- matplotlib
FIGSIZE_IN = (10.0, 6.5)
DPI = 150
FONT_PT = 9.0
TITLE_PT = 11.0
# One colour and marker per document; points are coloured by bound.
DOC_COLOURS = ("#2b2b2b", "#7b3294", "#00798c", "#b35806", "#1b7837", "#c51b7d")
DOC_MARKERS = ("o", "s", "^", "D", "v", "P")
BOUND_COLOURS = {"compute": "#d7301f", "memory": "#2166ac"}
OTHER_BOUND_COLOUR = "#8c8c8c"  # any class not known here (e.g. a later "latency")
MARKER_PT = 7.5
_ON_THE_ROOF = 1.001  # a point within 0.1% of its roof has no headroom line
LABEL_BOX = {"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.85}


def bound_colour(bound: str) -> str:
    return BOUND_COLOURS.get(bound, OTHER_BOUND_COLOUR)


def _matplotlib() -> Any:
    """matplotlib, headless: the Agg backend is selected before anything draws."""
    import matplotlib

    matplotlib.use("Agg")
    return matplotlib


def _eng_tick(unit: str) -> Any:
    def fmt(value: float, _pos: int) -> str:
        return eng(value, unit, digits=3).replace(".0 ", " ") if value > 0 else ""

    return fmt


def _ai_tick(value: float, _pos: int) -> str:
    if value <= 0:
        return ""
    if value >= 1e4:
        return f"{value / 1e3:g}k"
    return f"{value:g}"


def build_figure(docs: Sequence[dict[str, Any]], labels: Sequence[str] | None = None, roof: str = "both",
                 title: str | None = None) -> Figure:
    """A log-log roofline chart of one or more results documents (Agg canvas, ready to save or inspect).

    Artists carry gids the tests (and anyone inspecting the figure) can find: 'roof:DOC:SOURCE:KIND:KEY',
    'ridge:...', 'point:DOC:RECORD', 'headroom:DOC:RECORD', 'label:roof:...', 'label:point:DOC:RECORD';
    the legends are 'legend:series' (one entry per document) and 'legend:key'. A chart of more than
    NUMBERED_ABOVE points labels each with its number ('label:point:...' holds '1', '2', ...) and adds a
    table under the legends: per point 'table:COLUMN:DOC:RECORD' with COLUMN one of number, marker,
    label, ai, flops, fraction; 'table:head:BLOCK:COLUMN' the column headings, 'table:group:DOC:BLOCK' a
    document's heading (several documents).
    """
    chart = chart_model(docs, labels, roof, title)
    numbers = point_numbers(chart) if is_numbered(chart) else {}
    mpl = _matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    with mpl.rc_context({"font.size": FONT_PT, "axes.titlesize": TITLE_PT, "axes.labelsize": 10,
                         "xtick.labelsize": FONT_PT, "ytick.labelsize": FONT_PT, "legend.fontsize": FONT_PT,
                         "legend.title_fontsize": FONT_PT, "svg.fonttype": "none", "pdf.fonttype": 42}):
        fig = Figure(figsize=FIGSIZE_IN, dpi=DPI, layout="constrained")
        FigureCanvasAgg(fig)
        table = _plan_table(fig, chart, numbers) if numbers else None
        # A band at the bottom, below the legends, for the table and the note on records not drawn.
        note_in = _NOTE_LINE_IN if chart.skipped else 0.0
        band_in = (table.height_in if table else 0.0) + note_in
        if band_in:
            height = FIGSIZE_IN[1] + band_in
            fig.set_size_inches(table.fig_w_in if table else FIGSIZE_IN[0], height)
            fig.get_layout_engine().set(rect=(0.0, band_in / height, 1.0, 1.0 - band_in / height))
        ax = fig.add_subplot()
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(*chart.x_range)
        ax.set_ylim(*chart.y_range)
        ax.xaxis.set_major_locator(LogLocator(base=10, numticks=30))
        ax.yaxis.set_major_locator(LogLocator(base=10, numticks=30))
        ax.xaxis.set_major_formatter(FuncFormatter(_ai_tick))
        ax.yaxis.set_major_formatter(FuncFormatter(_eng_tick("FLOP/s")))
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
        _draw_points(ax, chart)
        _draw_legends(fig, chart)
        if chart.skipped:
            note = fig.text(_EDGE_IN, _EDGE_IN / 2, f"not drawn ({len(chart.skipped)}): "
                            + "; ".join(chart.skipped)[:160], fontsize=FONT_PT, color="#555555", ha="left",
                            va="bottom", transform=fig.dpi_scale_trans)
            note.set_gid("note:skipped")
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
            _draw_table(fig, table, top_in=table.height_in + note_in)
    return fig


def _roof_style(roof: Roof) -> dict[str, Any]:
    colour = DOC_COLOURS[roof.doc % len(DOC_COLOURS)]
    measured = roof.source == "measured"
    width = 1.8 if roof.kind == "compute" or roof.key == "dram" else 1.3
    return {"color": colour, "linestyle": (0, (5, 3)) if measured else "-", "linewidth": width,
            "alpha": 0.8 if measured else 1.0, "solid_capstyle": "butt", "zorder": 2}


def _draw_roofs(ax: Axes, chart: Chart) -> None:
    x_lo, x_hi = chart.x_range
    for r in chart.roofs:
        style = _roof_style(r)
        if r.kind == "compute":
            start = r.ridge if r.ridge and r.ridge > x_lo else x_lo
            ax.plot([start, x_hi], [r.value, r.value], gid=f"roof:{r.gid}", **style)
            if r.ridge and x_lo < r.ridge < x_hi:
                ax.plot([r.ridge], [r.value], marker="D", markersize=4.5, color=style["color"], linestyle="none",
                        zorder=3, gid=f"ridge:{r.gid}")
        else:
            end = min(r.x_end or x_hi, x_hi)
            ax.plot([x_lo, end], [x_lo * r.value, end * r.value], gid=f"roof:{r.gid}", **style)


def _draw_points(ax: Axes, chart: Chart) -> None:
    for p in chart.points:
        colour = bound_colour(p.bound)
        if p.roof_flops_per_s > p.flops_per_s * _ON_THE_ROOF:
            ax.plot([p.ai, p.ai], [p.flops_per_s, p.roof_flops_per_s], color=colour, linestyle=(0, (1, 1.5)),
                    linewidth=1.2, alpha=0.7, zorder=3, gid=f"headroom:{p.gid}")
        ax.plot([p.ai], [p.flops_per_s], linestyle="none", marker=DOC_MARKERS[p.doc % len(DOC_MARKERS)],
                markersize=MARKER_PT, markeredgewidth=1.6 if not p.timed else 0.8,
                markerfacecolor=colour if p.timed else "white",
                markeredgecolor=colour if not p.timed else "white", zorder=5, gid=f"point:{p.gid}")


def _draw_legends(fig: Figure, chart: Chart) -> None:
    from matplotlib.lines import Line2D

    series = [Line2D([], [], color=DOC_COLOURS[i % len(DOC_COLOURS)], marker=DOC_MARKERS[i % len(DOC_MARKERS)],
                     markerfacecolor="#bbbbbb", markeredgecolor=DOC_COLOURS[i % len(DOC_COLOURS)],
                     markersize=MARKER_PT, linewidth=1.8, label=name) for i, name in enumerate(chart.series)]
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
    if any(p.roof_flops_per_s > p.flops_per_s * _ON_THE_ROOF for p in chart.points):
        key.append(Line2D([], [], color="#555555", linestyle=(0, (1, 1.5)), linewidth=1.2, label="headroom to roof"))
    for source in chart.sources:
        key.append(Line2D([], [], color="#2b2b2b", linewidth=1.8, linestyle="-" if source == "datasheet"
                          else (0, (5, 3)), label=f"{source} roof"))
    key.append(Line2D([], [], linestyle="none", marker="D", markersize=4.5, color="#2b2b2b", label="ridge point"))
    leg2 = fig.legend(handles=key, loc="outside lower right", title="key", frameon=False, alignment="left",
                      ncols=3, columnspacing=1.2)
    leg2.set_gid("legend:key")


# ---------------------------------------------------------------- compute labels, in the right margin
_MARGIN_PT = 9.0  # from the axes' right edge to a compute label (a short connector spans it)


def _margin_labels(ax: Axes, chart: Chart) -> list[Any]:
    """Each compute ceiling's label just right of the axes, at its height (made before the layout runs, so
    the layout leaves room for them); `_stack_margin_labels` then moves them apart vertically."""
    out = []
    for r in sorted((r for r in chart.roofs if r.kind == "compute"), key=lambda r: (-r.value, r.doc, r.source)):
        colour = DOC_COLOURS[r.doc % len(DOC_COLOURS)]
        ann = ax.annotate(r.text, xy=(1.0, r.value), xycoords=ax.get_yaxis_transform(), xytext=(_MARGIN_PT, 0),
                          textcoords="offset points", ha="left", va="center", fontsize=FONT_PT, color=colour,
                          annotation_clip=False, arrowprops={"arrowstyle": "-", "color": colour, "linewidth": 0.8,
                                                             "shrinkA": 1.5, "shrinkB": 0})
        ann.set_gid(f"label:roof:{r.gid}")
        out.append(ann)
    return out


def _stack_margin_labels(fig: Figure, ax: Axes, labels: list[Any]) -> None:
    """Move the margin labels apart vertically (top to bottom, then back up if the last fell off the axes);
    each keeps its connector to the end of its line."""
    if not labels:
        return
    renderer = fig.canvas.get_renderer()
    px_per_pt = fig.dpi / 72.0
    box = ax.get_window_extent(renderer)
    wanted = [float(ax.transData.transform((1.0, a.xy[1]))[1]) for a in labels]
    heights = [a.get_window_extent(renderer).height + 2 * _GAP_PX / 3 for a in labels]
    ys = list(wanted)
    top, bottom = box.y1, box.y0
    for k in range(len(ys)):  # from the highest ceiling down: no label above the axes, none overlapping
        ys[k] = min(ys[k], top - heights[k] / 2)
        if k:
            ys[k] = min(ys[k], ys[k - 1] - (heights[k - 1] + heights[k]) / 2)
    for k in reversed(range(len(ys))):  # and back up from the bottom if the stack ran off it
        ys[k] = max(ys[k], bottom + heights[k] / 2)
        if k + 1 < len(ys):
            ys[k] = max(ys[k], ys[k + 1] + (heights[k] + heights[k + 1]) / 2)
    for ann, y, want in zip(labels, ys, wanted, strict=True):
        ann.xyann = (_MARGIN_PT, (y - want) / px_per_pt)


# ---------------------------------------------------------------- label placement
# A greedy, deterministic placer in display space: each label tries candidate spots in a fixed order and
# takes the first that stays inside the axes and touches no placed label, marker, ridge point or other
# line (shapes are exact rotated rectangles, tested with the separating-axis theorem). Memory-roof labels
# go first (along their diagonal), then point labels, highest first (around their marker, further out with
# a leader line when the near ring is taken; a leader may not cross a label or marker). A label with no
# free spot takes the free-of-shapes spot crossing the fewest lines, else the least-overlapping one.
_GAP_PX = 3.0  # clearance kept between a label and anything else
_LEADER_COLOUR = "#777777"

Corners = tuple[tuple[float, float], ...]  # a convex shape in display pixels: a rectangle, or a segment


def _axes_of(shape: Corners) -> list[tuple[float, float]]:
    """Unit normals of a convex shape's edges (one for a segment)."""
    out = []
    n = len(shape)
    for k in range(n if n > 2 else 1):
        (x0, y0), (x1, y1) = shape[k], shape[(k + 1) % n]
        nx, ny = -(y1 - y0), x1 - x0
        norm = math.hypot(nx, ny)
        if norm > 0:
            out.append((nx / norm, ny / norm))
    return out


def _clear(a: Corners, b: Corners, gap: float = _GAP_PX) -> bool:
    """Separating-axis test: True when the two convex shapes are at least `gap` pixels apart on some axis."""
    for nx, ny in _axes_of(a) + _axes_of(b):
        pa = [x * nx + y * ny for x, y in a]
        pb = [x * nx + y * ny for x, y in b]
        if max(pa) + gap <= min(pb) or max(pb) + gap <= min(pa):
            return True
    return False


def _holds(shape: Corners, xy: tuple[float, float]) -> bool:
    x0, y0, x1, y1 = _bounds(shape)
    return x0 <= xy[0] <= x1 and y0 <= xy[1] <= y1


def _bounds(shape: Corners) -> tuple[float, float, float, float]:
    xs, ys = [c[0] for c in shape], [c[1] for c in shape]
    return min(xs), min(ys), max(xs), max(ys)


def _rect(x0: float, y0: float, x1: float, y1: float) -> Corners:
    return ((x0, y0), (x1, y0), (x1, y1), (x0, y1))


def _quad(anchor: tuple[float, float], w: float, h: float, ha: str, va: str, angle_deg: float = 0.0) -> Corners:
    """Corners of a w x h text box anchored at `anchor` by (ha, va), rotated about the anchor
    (matplotlib's rotation_mode='anchor')."""
    x0 = {"left": 0.0, "center": -w / 2, "right": -w}[ha]
    y0 = {"bottom": 0.0, "center": -h / 2, "top": -h}[va]
    c, s = math.cos(math.radians(angle_deg)), math.sin(math.radians(angle_deg))
    return tuple((anchor[0] + dx * c - dy * s, anchor[1] + dx * s + dy * c)
                 for dx, dy in ((x0, y0), (x0 + w, y0), (x0 + w, y0 + h), (x0, y0 + h)))


@dataclass
class _Candidate:
    quad: Corners
    xy: tuple[float, float]  # data coordinates of the anchor
    offset_pt: tuple[float, float]
    ha: str
    va: str
    angle: float = 0.0
    leader: Corners | None = None  # the leader line from the marker's edge to the label, in display pixels
    ring: int = 0  # how far out (0: by the marker, no leader)
    centre: tuple[float, float] = (math.nan, math.nan)  # the point's centre, in display pixels


@dataclass
class _Scene:
    area: tuple[float, float, float, float]  # the axes, in display pixels
    shapes: list[Corners]  # placed labels, markers and ridge points
    segments: list[tuple[str, Corners]]  # (owner gid, segment) of every drawn line
    markers: list[Corners] = dataclasses.field(default_factory=list)  # the markers and ridge points of shapes


def _text_size(ax: Axes, renderer: RendererBase, text: str, weight: str = "normal") -> tuple[float, float]:
    probe = ax.text(0.5, 0.5, text, fontsize=FONT_PT, fontweight=weight, transform=ax.transAxes)
    ext = probe.get_window_extent(renderer)
    probe.remove()
    return ext.width, ext.height


def _choose(scene: _Scene, candidates: list[_Candidate], own: set[str], near: bool = False) -> _Candidate:
    """The first free candidate, in preference order. With `near` (a point's number), a spot by the marker
    that crosses a line beats one further out on a leader: the cost of a spot is its ring plus the lines
    it crosses (another label's leader counting most), the first of the cheapest wins."""
    ax0, ay0, ax1, ay1 = scene.area

    def inside(c: _Candidate) -> bool:
        x0, y0, x1, y1 = _bounds(c.quad)
        return x0 >= ax0 and y0 >= ay0 and x1 <= ax1 and y1 <= ay1

    def free_of_lines(c: _Candidate) -> bool:
        return all(_clear(c.quad, seg, 1.5) for gid, seg in scene.segments if gid not in own)

    def free_of_shapes(c: _Candidate) -> bool:
        # A leader may cross a marker that covers its own point's centre (it cannot avoid it), no other.
        if c.leader is not None and not all(_clear(c.leader, shape, 1.0) or _holds(shape, c.centre)
                                            for shape in scene.shapes):
            return False
        return all(_clear(c.quad, shape) for shape in scene.shapes)

    fits = [c for c in candidates if inside(c)] or candidates
    if near and (free := [c for c in fits if free_of_shapes(c)]):
        def cost(c: _Candidate) -> float:
            crossed = [gid for gid, seg in scene.segments if gid not in own and not _clear(c.quad, seg, 1.5)]
            return c.ring + sum(3.0 if g.startswith("label:") else 1.5 if g.startswith("roof:") else 0.75
                                for g in crossed)

        return min(free, key=cost)
    for c in fits:
        if free_of_shapes(c) and free_of_lines(c):
            return c
    free = [c for c in fits if free_of_shapes(c)]
    if free:  # then the spot crossing the fewest lines (the first such, in preference order)
        return min(free, key=lambda c: sum(not _clear(c.quad, seg, 1.5) for gid, seg in scene.segments
                                           if gid not in own))

    def overlap(c: _Candidate) -> float:
        x0, y0, x1, y1 = _bounds(c.quad)
        total = 0.0
        for shape in scene.shapes:
            u0, v0, u1, v1 = _bounds(shape)
            w, h = min(x1, u1) - max(x0, u0), min(y1, v1) - max(y0, v0)
            total += w * h if w > 0 and h > 0 else 0.0
        return total

    return min(fits, key=overlap)


def _place_labels(fig: Figure, ax: Axes, chart: Chart, numbers: dict[str, int]) -> None:
    """Memory-roof labels along their diagonals, then each point's label (or number, on a numbered chart)."""
    renderer = fig.canvas.get_renderer()
    to_px = ax.transData.transform
    px_per_pt = fig.dpi / 72.0
    bbox = ax.get_window_extent(renderer)
    scene = _Scene((bbox.x0 + 2, bbox.y0 + 2, bbox.x1 - 2, bbox.y1 - 2), [], [])
    for line in ax.get_lines():
        gid = line.get_gid() or ""
        if not (gid.startswith("roof:") or gid.startswith("headroom:")):
            continue
        xy = to_px(list(zip(line.get_xdata(), line.get_ydata(), strict=True)))
        scene.segments += [(gid, ((xy[k][0], xy[k][1]), (xy[k + 1][0], xy[k + 1][1]))) for k in range(len(xy) - 1)]
    half = MARKER_PT * px_per_pt / 2 + 1
    for p in chart.points:
        cx, cy = to_px((p.ai, p.flops_per_s))
        scene.markers.append(_rect(cx - half, cy - half, cx + half, cy + half))
    for line in ax.get_lines():
        if (line.get_gid() or "").startswith("ridge:"):
            cx, cy = to_px((line.get_xdata()[0], line.get_ydata()[0]))
            scene.markers.append(_rect(cx - 5, cy - 5, cx + 5, cy + 5))
    scene.shapes += scene.markers

    for r in (r for r in chart.roofs if r.kind == "memory"):
        colour = DOC_COLOURS[r.doc % len(DOC_COLOURS)]
        w, h = _text_size(ax, renderer, r.text)
        cands = _roof_candidates(ax, chart, r, w, h, px_per_pt)
        if not cands:
            continue
        best = _choose(scene, cands, {f"roof:{r.gid}"})
        _commit(ax, scene, best, r.text, f"label:roof:{r.gid}", colour, rotation_mode="anchor")

    done: set[str] = set()
    if numbers:  # tight clusters first: their numbers in a row or column beside them
        for cluster in _clusters(ax, chart, px_per_pt):
            done |= _place_callout(ax, renderer, scene, cluster, numbers, px_per_pt)
    order = sorted(chart.points, key=lambda p: (-p.flops_per_s, p.ai, p.doc, p.record))
    away = _outward(ax, chart, px_per_pt) if numbers else {}
    for p in order:
        if p.gid in done:
            continue
        if numbers:
            text, weight, colour = str(numbers[p.gid]), NUMBER_WEIGHT, DOC_COLOURS[p.doc % len(DOC_COLOURS)]
        else:
            text, weight, colour = p.label, "normal", "#1a1a1a"
        w, h = _text_size(ax, renderer, text, weight)
        cands = _point_candidates(ax, p, w, h, px_per_pt, _NUMBER_RINGS_PT if numbers else _RINGS_PT,
                                  away.get(p.gid))
        best = _choose(scene, cands, {f"headroom:{p.gid}"}, near=bool(numbers))
        _commit(ax, scene, best, text, f"label:point:{p.gid}", colour, fontweight=weight)


# ---------------------------------------------------------------- callouts for tight clusters (numbered charts)
# Markers that touch (centres closer than _TOUCH_PT) form a cluster; one of _CALLOUT_MIN or more points gets
# its numbers as a callout: a row under or over it, ordered left to right like the points (which, numbered
# by intensity, reads 9, 10, 11, ...), or a column beside it ordered top to bottom, each number on a
# straight leader to its marker (drawn beneath the markers), neighbours swapped where their leaders would
# cross. A long cluster may split: its upper half over it and the rest under it, or left and right. Of
# all sides x _CALLOUT_GAPS_PT, the cheapest layout wins (_callout_cost: collisions, then lines crossed);
# when every one collides, the cluster's numbers are placed one by one like the others.
_TOUCH_PT = MARKER_PT * 1.6
_CALLOUT_MIN = 3
_CALLOUT_SIDES = ("below", "above", "right", "left")
_CALLOUT_GAPS_PT = (12.0, 20.0, 30.0, 44.0, 60.0)
_CALLOUT_STEP_PX = 10.0  # between two numbers of a callout (a row; half that in a column)


def _clusters(ax: Axes, chart: Chart, px_per_pt: float) -> list[list[Point]]:
    """Groups of touching markers (single linkage) of at least _CALLOUT_MIN points, largest first."""
    xy = [tuple(ax.transData.transform((p.ai, p.flops_per_s))) for p in chart.points]
    parent = list(range(len(xy)))

    def root(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for i in range(len(xy)):
        for j in range(i + 1, len(xy)):
            if math.dist(xy[i], xy[j]) < _TOUCH_PT * px_per_pt:
                parent[root(i)] = root(j)
    groups: dict[int, list[Point]] = {}
    for k, p in enumerate(chart.points):
        groups.setdefault(root(k), []).append(p)
    found = [g for g in groups.values() if len(g) >= _CALLOUT_MIN]
    return sorted(found, key=lambda g: (-len(g), min(p.ai for p in g)))


def _place_callout(ax: Axes, renderer: RendererBase, scene: _Scene, cluster: list[Point], numbers: dict[str, int],
                   px_per_pt: float) -> set[str]:
    """Place a cluster's numbers as a row or column; returns the gids placed (none when nothing fits)."""
    centre = {p.gid: tuple(ax.transData.transform((p.ai, p.flops_per_s))) for p in cluster}
    size = {p.gid: _text_size(ax, renderer, str(numbers[p.gid]), NUMBER_WEIGHT) for p in cluster}
    by_y = sorted(cluster, key=lambda p: (-centre[p.gid][1], numbers[p.gid]))
    by_x = sorted(cluster, key=lambda p: (centre[p.gid][0], numbers[p.gid]))
    half = (len(cluster) + 1) // 2
    # One row or column for the whole cluster; failing that, its upper half over it and the rest under it,
    # or its left half left of it and the rest right of it (half as long, so they fit where one does not).
    plans = [[(side, cluster)] for side in _CALLOUT_SIDES] + [
        [("above", by_y[:half]), ("below", by_y[half:])], [("left", by_x[:half]), ("right", by_x[half:])]]
    best: tuple[float, list[tuple[Point, _Candidate]]] | None = None
    for plan in plans:
        for gap_pt in _CALLOUT_GAPS_PT:
            layout = []
            for side, members in plan:
                if side in ("below", "above"):
                    order = sorted(members, key=lambda p: (centre[p.gid][0], numbers[p.gid]))
                else:
                    order = sorted(members, key=lambda p: (-centre[p.gid][1], numbers[p.gid]))
                order = _uncross(order, lambda o, side=side, gap_pt=gap_pt: _callout_layout(
                    scene, o, side, gap_pt * px_per_pt, centre, size, px_per_pt))
                layout += _callout_layout(scene, order, side, gap_pt * px_per_pt, centre, size, px_per_pt)
            cost = _callout_cost(scene, layout)
            if best is None or cost < best[0]:
                best = (cost, layout)
    if best is None or best[0] >= _BLOCKED:
        return set()
    for p, c in best[1]:
        _commit(ax, scene, c, str(numbers[p.gid]), f"label:point:{p.gid}", DOC_COLOURS[p.doc % len(DOC_COLOURS)],
                fontweight=NUMBER_WEIGHT, leader_under=True)
    return {p.gid for p, _ in best[1]}


def _callout_layout(scene: _Scene, order: list[Point], side: str, gap: float,
                    centre: dict[str, tuple[float, float]], size: dict[str, tuple[float, float]],
                    px_per_pt: float) -> list[tuple[Point, _Candidate]]:
    """The numbers of `order` in a row under or over the cluster, or a column right or left of it, `gap`
    pixels from its markers and kept inside the axes; each with its leader from its marker's edge."""
    x0, y0, x1, y1 = scene.area
    everyone = centre.values()  # the whole cluster: a half's row or column clears all of it
    xs, ys = [centre[p.gid][0] for p in order], [centre[p.gid][1] for p in order]
    top_y, bottom_y = max(c[1] for c in everyone), min(c[1] for c in everyone)
    right_x, left_x = max(c[0] for c in everyone), min(c[0] for c in everyone)
    half = MARKER_PT * px_per_pt / 2 + 1
    h = max(hh for _, hh in size.values())
    spots = []
    if side in ("below", "above"):
        total = sum(size[p.gid][0] for p in order) + _CALLOUT_STEP_PX * (len(order) - 1)
        left = min(max(sum(xs) / len(xs) - total / 2, x0), x1 - total)
        edge = bottom_y - half - gap if side == "below" else top_y + half + gap
        va = "top" if side == "below" else "bottom"
        for p in order:
            w = size[p.gid][0]
            spots.append((p, (left + w / 2, edge), "center", va))
            left += w + _CALLOUT_STEP_PX
    else:
        total = h * len(order) + _CALLOUT_STEP_PX / 2 * (len(order) - 1)
        top = max(min(sum(ys) / len(ys) + total / 2, y1), y0 + total)
        edge = right_x + half + gap if side == "right" else left_x - half - gap
        ha = "left" if side == "right" else "right"
        for p in order:
            spots.append((p, (edge, top - h / 2), ha, "center"))
            top -= h + _CALLOUT_STEP_PX / 2
    layout = []
    for p, anchor, ha, va in spots:
        cx, cy = centre[p.gid]
        w, hh = size[p.gid]
        reach = math.dist(anchor, (cx, cy)) or 1.0
        start = (cx + (anchor[0] - cx) / reach * half, cy + (anchor[1] - cy) / reach * half)
        offset = ((anchor[0] - cx) / px_per_pt, (anchor[1] - cy) / px_per_pt)
        layout.append((p, _Candidate(_quad(anchor, w, hh, ha, va), (p.ai, p.flops_per_s), offset, ha, va,
                                     leader=(start, anchor), ring=1, centre=(cx, cy))))
    return layout


def _crossings(layout: list[tuple[Point, _Candidate]]) -> int:
    """How many pairs of the callout's leaders cross (measured from the points' centres)."""
    segs = [(c.centre, c.leader[1]) for _, c in layout if c.leader is not None]
    return sum(not _clear(a, b, 0.0) for k, a in enumerate(segs) for b in segs[k + 1:])


def _uncross(order: list[Point], build: Any) -> list[Point]:
    """Swap neighbours of the callout order while that lowers the number of crossing leaders."""
    order = list(order)
    crossed = _crossings(build(order))
    improved = True
    while improved and crossed:
        improved = False
        for k in range(len(order) - 1):
            trial = [*order[:k], order[k + 1], order[k], *order[k + 2:]]
            n = _crossings(build(trial))
            if n < crossed:
                order, crossed, improved = trial, n, True
    return order


_BLOCKED = 1000.0  # the cost of a callout that collides with something or leaves the axes
_GRAZE = 40.0  # the cost of a leader over a marker outside its cluster


def _callout_cost(scene: _Scene, layout: list[tuple[Point, _Candidate]]) -> float:
    """Collisions (each _BLOCKED); then crossings: of its own leaders, of a number over a line (it would seem
    to belong to it), of a leader over a line; then leader length."""
    ax0, ay0, ax1, ay1 = scene.area
    own_quads = [c.quad for _, c in layout]
    centres = [c.centre for _, c in layout]
    cost = 3.0 * _crossings(layout)
    for p, c in layout:
        bx0, by0, bx1, by1 = _bounds(c.quad)
        if bx0 < ax0 or by0 < ay0 or bx1 > ax1 or by1 > ay1:
            cost += _BLOCKED
        if not all(_clear(c.quad, shape) for shape in scene.shapes):
            cost += _BLOCKED
        assert c.leader is not None
        # A leader passes under the cluster's other markers (drawn beneath them); over a number or label it
        # blocks the callout, over another marker it costs much (it seems to point there too).
        for shape in scene.shapes + [q for q in own_quads if q is not c.quad]:
            if not (_clear(c.leader, shape, 1.0) or any(_holds(shape, xy) for xy in centres)):
                cost += _GRAZE if any(shape is m for m in scene.markers) else _BLOCKED
        for gid, seg in scene.segments:
            if gid == f"headroom:{p.gid}":
                continue
            if not _clear(c.quad, seg, 1.5):
                cost += 3.0 if gid.startswith("label:") else 2.0
            if not _clear(c.leader, seg, 0.0):
                cost += 3.0 if gid.startswith("label:") else 1.0 if gid.startswith("roof:") else 0.5
        cost += math.dist(*c.leader) / 1000
    return cost


def _commit(ax: Axes, scene: _Scene, c: _Candidate, text: str, gid: str, colour: str,
            rotation_mode: str = "default", fontweight: str = "normal", leader_under: bool = False) -> None:
    """Draw a placed label; its leader, if any, is the annotation's arrow or (leader_under) a line beneath
    the markers from the point's centre ('leader:DOC:RECORD')."""
    arrow = None
    if c.leader is not None and leader_under:
        end = ax.transData.inverted().transform(c.leader[1])
        ax.plot([c.xy[0], end[0]], [c.xy[1], end[1]], color=_LEADER_COLOUR, linewidth=0.7, zorder=4,
                solid_capstyle="butt", gid=gid.replace("label:point:", "leader:"))
        scene.segments.append((gid, c.leader))
    elif c.leader is not None:
        arrow = {"arrowstyle": "-", "color": _LEADER_COLOUR, "linewidth": 0.7, "shrinkA": 1,
                 "shrinkB": MARKER_PT / 2 + 1}
        scene.segments.append((gid, c.leader))
    ann = ax.annotate(text, xy=c.xy, xytext=c.offset_pt, textcoords="offset points", ha=c.ha, va=c.va,
                      rotation=c.angle, rotation_mode=rotation_mode, fontsize=FONT_PT, fontweight=fontweight,
                      color=colour,
                      bbox=LABEL_BOX, zorder=6, annotation_clip=False, arrowprops=arrow)
    ann.set_gid(gid)
    scene.shapes.append(c.quad)


def _roof_candidates(ax: Axes, chart: Chart, r: Roof, w: float, h: float, px_per_pt: float) -> list[_Candidate]:
    """Spots for a memory roof's label: along the visible part of its diagonal, parallel to it."""
    to_px = ax.transData.transform
    x_lo, x_hi = chart.x_range
    gap_pt = 2.5
    out: list[_Candidate] = []
    end = min(r.x_end or x_hi, x_hi)
    y_lo, y_hi = chart.y_range
    vis_lo = max(x_lo, y_lo / r.value)
    vis_hi = min(end, y_hi / r.value)
    if vis_hi <= vis_lo:
        return out
    (x0p, y0p), (x1p, y1p) = to_px((vis_lo, vis_lo * r.value)), to_px((vis_hi, vis_hi * r.value))
    angle = math.degrees(math.atan2(y1p - y0p, x1p - x0p))
    nx, ny = -math.sin(math.radians(angle)), math.cos(math.radians(angle))
    lv0, lv1 = math.log10(vis_lo), math.log10(vis_hi)
    for frac in _ALONG:
        x = 10 ** (lv0 + (lv1 - lv0) * frac)
        px, py = to_px((x, x * r.value))
        for side in (1, -1):
            off = (nx * gap_pt * side, ny * gap_pt * side)
            anchor = (px + off[0] * px_per_pt, py + off[1] * px_per_pt)
            va = "bottom" if side > 0 else "top"
            out.append(_Candidate(_quad(anchor, w, h, "center", va, angle), (x, x * r.value), off, "center", va,
                                  angle))
    return out


# Where along a diagonal its label may sit (fraction of the visible part), middle first.
_ALONG = tuple(sorted((k / 20 for k in range(2, 19)), key=lambda f: (abs(f - 0.45), f)))
# Directions around a marker, in preference order: right, left, up-right, down-right, up, down, up-left, down-left.
_DIRECTIONS = (0, 180, 35, -35, 90, -90, 145, -145, 15, -15, 165, -165, 60, -60, 120, -120)
_RINGS_PT = (7, 16, 28, 42, 60, 85, 115, 150)
_NUMBER_RINGS_PT = (6, 13, 21, 30, 42, 60, 85)  # a number is small: it finds room closer in


_CLUSTER_PT = 30.0  # points closer than this to each other form a cluster, whose numbers fan out from it


def _outward(ax: Axes, chart: Chart, px_per_pt: float) -> dict[str, float]:
    """For each point with neighbours, the direction (degrees) away from its neighbours' centre: its number
    goes that way first, so that the numbers of a cluster fan out around it and their leaders do not cross."""
    xy = {p.gid: tuple(ax.transData.transform((p.ai, p.flops_per_s))) for p in chart.points}
    reach = _CLUSTER_PT * px_per_pt
    out = {}
    for gid, (x, y) in xy.items():
        near = [(u, v) for g, (u, v) in xy.items() if g != gid and math.hypot(u - x, v - y) < reach]
        if near:
            mx, my = sum(u for u, _ in near) / len(near), sum(v for _, v in near) / len(near)
            if math.hypot(x - mx, y - my) > 0.5:
                out[gid] = math.degrees(math.atan2(y - my, x - mx))
    return out


def _point_candidates(ax: Axes, p: Point, w: float, h: float, px_per_pt: float,
                      rings: Sequence[float] = _RINGS_PT, prefer: float | None = None) -> list[_Candidate]:
    """Spots around a point's marker: the near ring first (no leader), then rings further out; in each
    ring the directions of _DIRECTIONS, or those nearest `prefer` (degrees) first."""
    cx, cy = ax.transData.transform((p.ai, p.flops_per_s))
    directions = _DIRECTIONS if prefer is None else sorted(
        _DIRECTIONS, key=lambda d: abs((d - prefer + 180) % 360 - 180))
    out = []
    for ring, radius in enumerate(rings):
        for deg in directions:
            c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
            dx, dy = radius * c, radius * s * (0.8 if ring == 0 else 1.0)
            ha = "left" if c > 0.3 else "right" if c < -0.3 else "center"
            va = "bottom" if s > 0.3 else "top" if s < -0.3 else "center"
            anchor = (cx + dx * px_per_pt, cy + dy * px_per_pt)
            leader = None
            if ring > 0:  # from the marker's edge to the anchor
                start = (MARKER_PT / 2 + 1) * px_per_pt
                leader = ((cx + c * start, cy + s * start), anchor)
            out.append(_Candidate(_quad(anchor, w, h, ha, va), (p.ai, p.flops_per_s), (dx, dy), ha, va,
                                  leader=leader, ring=ring, centre=(cx, cy)))
    return out


# ---------------------------------------------------------------- the table of a numbered chart
# Under the legends, rows of: number, marker (bound colour, document shape), label, intensity, FLOP/s and
# fraction of the roof, in as many blocks side by side as the figure's width holds (at most _MAX_BLOCKS),
# each with its column headings; with several documents each document's rows start under its name.
# Positions are in inches (fig.dpi_scale_trans), so PNG, SVG and PDF agree.
NUMBER_WEIGHT = "bold"
_EDGE_IN = 0.12  # from the figure's left edge to the table and the note
_NOTE_LINE_IN = 0.3  # the band for the note on records not drawn
_ROW_PT = FONT_PT * 1.5  # row pitch
_CELL_GAP_PT = 8.0  # between the columns of a block
_BLOCK_GAP_IN = 0.4  # between blocks side by side
# A numbered chart may grow this wide (from FIGSIZE_IN's 10 in) when that fits one more block of rows side by
# side: a laptop screen has width to spare, not height, and every block saved shortens the table a lot.
NUMBERED_MAX_WIDTH_IN = 12.0
_TABLE_PAD_IN = (0.16, 0.06)  # above the table (under the legends), below it
_MAX_BLOCKS = 3
_COLUMNS = ("number", "marker", "label", "ai", "flops", "fraction")
_HEADINGS = {"number": "#", "marker": "", "label": "operator", "ai": "FLOP/B", "flops": "TFLOP/s",
             "fraction": "of roof"}
_RIGHT_ALIGNED = frozenset({"number", "ai", "flops", "fraction"})
_STRIPE = "#f2f2f2"
_MUTED = "#555555"


@dataclass(frozen=True)
class _Entry:
    kind: str  # "row" (a point) | "group" (a document's heading)
    doc: int
    point: Point | None = None
    name: str = ""  # a heading's document name
    text: str = ""  # a heading's text


@dataclass(frozen=True)
class _TablePlan:
    blocks: tuple[tuple[_Entry, ...], ...]
    cells: dict[str, dict[str, str]]  # point gid -> column -> text
    anchors_in: dict[str, float]  # column -> x of its text from the block's left (its right edge if right-aligned)
    marker_in: float  # x of the marker column's centre from the block's left
    block_w_in: float
    height_in: float
    fig_w_in: float  # the figure's width (wider than FIGSIZE_IN's when that fits one more block)


def _tflops_text(flops_per_s: float) -> str:
    v = flops_per_s / 1e12
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def _fraction_text(p: Point) -> str:
    if not p.timed:
        return "model"
    return f"{p.fraction:.0%}" if math.isfinite(p.fraction) else "-"


def _fill(entries: Sequence[_Entry], per: int) -> list[list[_Entry]]:
    """Entries cut into blocks of at most `per` rows; a heading never ends a block, and a block that starts
    inside a document repeats its heading ('..., continued')."""
    blocks: list[list[_Entry]] = []
    cur: list[_Entry] = []
    group: _Entry | None = None
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


def _plan_table(fig: Figure, chart: Chart, numbers: dict[str, int]) -> _TablePlan:
    """What the table holds and how wide its columns are (measured with the figure's renderer)."""
    renderer = fig.canvas.get_renderer()

    def width_in(text: str, weight: str = "normal") -> float:
        probe = fig.text(0, 0, text, fontsize=FONT_PT, fontweight=weight)
        w = probe.get_window_extent(renderer).width / fig.dpi
        probe.remove()
        return w

    points = sorted(chart.points, key=lambda p: numbers[p.gid])
    cells = {p.gid: {"number": str(numbers[p.gid]), "label": p.label, "ai": intensity_text(p.ai),
                     "flops": _tflops_text(p.flops_per_s), "fraction": _fraction_text(p)} for p in points}
    entries: list[_Entry] = []
    for doc, name in enumerate(chart.series):
        own = [p for p in points if p.doc == doc]
        if own and len(chart.series) > 1:
            first, last = numbers[own[0].gid], numbers[own[-1].gid]
            span = f"{first}" if first == last else f"{first}\u2013{last}"
            entries.append(_Entry("group", doc, name=name, text=f"{name}  (points {span})"))
        entries += [_Entry("row", doc, p) for p in own]

    gap = _CELL_GAP_PT / 72
    widths = {c: max([width_in(_HEADINGS[c])] + [width_in(cells[p.gid][c], NUMBER_WEIGHT if c == "number"
                                                          else "normal") for p in points])
              for c in _COLUMNS if c != "marker"}
    widths["marker"] = MARKER_PT / 72 + 0.04
    budget = fig.get_figwidth() - 2 * _EDGE_IN
    fixed = sum(w for c, w in widths.items() if c != "label") + gap * (len(_COLUMNS) - 1)
    if fixed + widths["label"] > budget:  # labels too long even for one block: shorten the longest
        widths["label"] = budget - fixed
        for cell in cells.values():
            while len(cell["label"]) > 4 and width_in(cell["label"]) > widths["label"]:
                cell["label"] = cell["label"][:-2] + "\u2026"
    anchors: dict[str, float] = {}
    x = 0.0
    for c in _COLUMNS:
        anchors[c] = x + widths[c] if c in _RIGHT_ALIGNED else x
        x += widths[c] + gap
    block_w = x - gap

    def blocks_in(width: float) -> int:
        return max(1, min(_MAX_BLOCKS, int((width - 2 * _EDGE_IN + _BLOCK_GAP_IN) // (block_w + _BLOCK_GAP_IN))))

    n_blocks = blocks_in(fig.get_figwidth())
    fig_w = fig.get_figwidth()
    if n_blocks < blocks_in(NUMBERED_MAX_WIDTH_IN) and len(entries) > 2 * n_blocks:
        n_blocks += 1
        fig_w = (n_blocks * block_w + (n_blocks - 1) * _BLOCK_GAP_IN) + 2 * _EDGE_IN
    per = max(2, math.ceil(len(entries) / n_blocks))
    while len(_fill(entries, per)) > n_blocks:
        per += 1
    blocks = _fill(entries, per)
    rows = max(len(b) for b in blocks) + 1  # and the headings
    height = _TABLE_PAD_IN[0] + rows * _ROW_PT / 72 + _TABLE_PAD_IN[1]
    return _TablePlan(tuple(tuple(b) for b in blocks), cells, anchors, widths["number"] + gap + widths["marker"] / 2,
                      block_w, height, max(fig_w, fig.get_figwidth()))


def _draw_table(fig: Figure, plan: _TablePlan, top_in: float) -> None:
    """Draw the planned table with its top edge `top_in` inches above the figure's bottom."""
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
        m = Line2D([x], [y], transform=inches, linestyle="none", marker=DOC_MARKERS[doc % len(DOC_MARKERS)],
                   markersize=MARKER_PT * 0.9, markerfacecolor=face, markeredgecolor=edge, markeredgewidth=width)
        m.set_gid(gid)
        fig.add_artist(m)

    for b, block in enumerate(plan.blocks):
        x0 = _EDGE_IN + b * (plan.block_w_in + _BLOCK_GAP_IN)
        y = top_in - _TABLE_PAD_IN[0] - row / 2
        for c in _COLUMNS:
            text(x0 + plan.anchors_in[c], y, _HEADINGS[c], f"table:head:{b}:{c}",
                 ha="right" if c in _RIGHT_ALIGNED else "left", color=_MUTED)
        rule = Line2D([x0, x0 + plan.block_w_in], [y - row / 2] * 2, transform=inches, color="#b0b0b0",
                      linewidth=0.7)
        rule.set_gid(f"table:rule:{b}")
        fig.add_artist(rule)
        for k, e in enumerate(block):
            y = top_in - _TABLE_PAD_IN[0] - (k + 1.5) * row
            colour = DOC_COLOURS[e.doc % len(DOC_COLOURS)]
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
            for c in ("number", "label", "ai", "flops", "fraction"):
                kw = {"color": colour, "fontweight": NUMBER_WEIGHT} if c == "number" else {"color": "#1a1a1a"}
                text(x0 + plan.anchors_in[c], y, cells[c], f"table:{c}:{p.gid}",
                     ha="right" if c in _RIGHT_ALIGNED else "left", **kw)


# ---------------------------------------------------------------- saving
def save_chart(docs: Sequence[dict[str, Any]], path: str | os.PathLike[str], labels: Sequence[str] | None = None,
               roof: str = "both", title: str | None = None) -> Path:
    """Write the chart as PNG, SVG or PDF, chosen by the path's suffix; returns the path written."""
    p = Path(path)
    fmt = FORMATS.get(p.suffix.lower())
    if fmt is None:
        raise UsageError(f"{p}: cannot tell the chart format from '{p.suffix or '(no suffix)'}': "
                         f"use {', '.join(FORMATS)}")
    fig = build_figure(docs, labels=labels, roof=roof, title=title)
    try:
        fig.savefig(p, format=fmt, dpi=DPI, bbox_inches="tight", pad_inches=0.15, facecolor="white",
                    metadata=_metadata(fmt, fig))
    except OSError as exc:
        raise RooflineError(f"cannot write {p}: {exc.strerror or exc}") from None
    return p


def _metadata(fmt: str, fig: Figure) -> dict[str, str]:
    from roofline import __version__

    title = fig.get_suptitle()
    software = f"roofline {__version__}"
    if fmt == "png":
        return {"Title": title, "Software": software}
    return {"Title": title, "Creator": software}


__all__ = ["BOUND_COLOURS", "FORMATS", "ROOF_CHOICES", "Chart", "Point", "Roof", "build_figure", "chart_model",
           "eng", "load_documents", "save_chart"]
