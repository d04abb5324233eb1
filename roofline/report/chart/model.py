"""What a roofline chart shows, as plain data: its ceilings, its points, the axis ranges and the title.

`chart_model` turns results documents into a `Chart`; the matplotlib figure (`draw`) and the terminal
chart (`roofline.report.terminal`) both draw one. Nothing here draws or imports matplotlib.

Choices a reader of the chart should know:
- Of the memory levels, the datasheet block draws DRAM only: its shared-memory figure is derived
  (bytes/clock x SMs x boost clock), not a datasheet number, so SMEM and L2 appear only when measured.
- A compute roof starts where its source's fastest memory roof meets it (the DRAM ridge still marked), so
  cache roofs (CPU L2/L3, GPU L2/SMEM) and the headroom of a record placed on a cache end on a drawn line.
- A record's headroom line runs up to the roof it was analysed against (its attainable FLOP/s), so its
  length is what `roofline_fraction` measures; when that roof is not drawn (--roof measured on a
  datasheet record) it runs up to the drawn roof of the same pipe instead.
- Up to NUMBERED_ABOVE points are labelled by name on the chart. More are numbered (1, 2, ... across all
  documents, by intensity) and listed in a table under the chart (`table`).
- A whole-model profile (`roofline profile`: a document with a `profile` summary) has one point per
  aggregated op. Each point's `share` is its part of the document's time (time_s x count over the sum over
  records; an analytic profile's roofline time), and its marker's AREA is proportional to it (`marker_pt`).
  Only the PROFILE_LABELLED largest shares of each document are numbered and listed in the table (a
  300-op model stays readable); the rest are unnumbered markers, counted in a note (`unlabelled_note`).
- A record with Nsight Compute counters (`--counters`, `import-ncu`) adds the hierarchical roofline's level
  points (`LevelPoint`): its FLOPs over the bytes ncu counted at L1, L2 and DRAM, at the record's own
  FLOP/s. They share the record's height, so they sit on one horizontal line with its point, whose
  intensity is the model's minimum bytes: the distance from the DRAM point to the record's point is the
  excess traffic (x1.36 is 0.13 decade). Level points are drawn, not labelled or numbered.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

from roofline.core.counters import LEVELS
from roofline.core.document import Document, read_document
from roofline.core.errors import RooflineError, UsageError
from roofline.core.format import si
from roofline.core.model import pipe_label
from roofline.core.record import Record
from roofline.report.chart.labels import cut_label, title_dtypes
from roofline.report.style import MARKER_PT

ROOF_CHOICES = ("datasheet", "measured", "both")

# Memory levels a block may draw, in order, with their chart names. NB: the datasheet block draws DRAM
# only (its smem figure is derived, not quoted); other measured keys (dram_read, dram_copy) are details.
MEMORY_LEVELS = {"dram": "DRAM", "l2": "L2", "l3": "L3", "smem": "SMEM"}  # l3: a CPU's (calibrate)
DATASHEET_MEMORY = ("dram",)
CONTEXT_PIPE = "fp32_dense_tflops"  # drawn for context whenever the records run on tensor pipes

# Axis padding around the data, in decades: room on the right and at the top for the ceiling labels.
_PAD_LEFT, _PAD_RIGHT, _PAD_TOP, _PAD_BOTTOM = 0.45, 0.75, 0.45, 0.55
_MIN_SPAN_DECADES = 3.0  # at least three decade ticks on each axis
ON_THE_ROOF = 1.001  # a point within 0.1% of its roof has no headroom line

# Above this many points a chart numbers them instead of labelling them. Up to about eight full labels find
# room around their markers on the 10 x 6.5 in chart; real suites put 10-20 records in two tight clusters
# (DRAM-bound near 1 FLOP/byte, tensor-bound near 1-3k), where labels need long leader lines that cross
# each other and still collide. A numbered chart puts a short number by each marker and lists number ->
# label, intensity, FLOP/s and fraction of the roof in a table under the chart, where nothing can overlap.
NUMBERED_ABOVE = 8
# A profile chart numbers this many points per document, the largest shares of its time: as many as a
# chart labels by name, and in a model the top few ops usually hold most of the time.
PROFILE_LABELLED = 8
# An imported report of up to this many kernels numbers every one (a suite's 16 operators and 17 marker
# kernels read well); a larger one, an application's, numbers its PROFILE_LABELLED longest, as a profile does.
IMPORTED_NUMBERED = 40
# A profile point's marker diameter, in points, if it held all of its document's time (area ~ share): the
# top op of a model (10-40% of the time) gets 10-20 pt; none is drawn below PROFILE_MIN_PT, so hundreds of
# small ops stay visible as dots without hiding each other.
PROFILE_FULL_PT = 32.0
PROFILE_MIN_PT = 3.0


# ---------------------------------------------------------------- reading
def load_documents(paths: Iterable[str | os.PathLike[str]]) -> list[Document]:
    """Read and validate results files; a file without records is an error (nothing to draw)."""
    docs = []
    for path in paths:
        doc = read_document(path)
        if not doc.records:
            raise UsageError(f"{path}: no records to plot (the document's 'records' list is empty)")
        docs.append(doc)
    if not docs:
        raise RooflineError("no results files to plot")
    return docs


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
    x_start: float | None = None  # compute: where its line starts, where the source's fastest memory roof meets it
    x_end: float | None = None  # memory: the intensity where it meets the same source's highest compute roof

    @property
    def text(self) -> str:
        """Its label: 'BF16 tensor 989 TFLOP/s', 'DRAM 4.31 TB/s (measured)'."""
        unit = "FLOP/s" if self.kind == "compute" else "B/s"
        suffix = " (measured)" if self.source == "measured" else ""
        return f"{self.name} {si(self.value, unit)}{suffix}"

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
    share: float | None = None  # a profile's point: its part of the document's time (module docstring)

    @property
    def fraction(self) -> float:
        return self.flops_per_s / self.roof_flops_per_s if self.roof_flops_per_s > 0 else float("nan")

    @property
    def has_headroom(self) -> bool:
        """Whether it sits visibly below its roof (a headroom line is drawn up to it)."""
        return self.roof_flops_per_s > self.flops_per_s * ON_THE_ROOF

    @property
    def gid(self) -> str:
        return f"{self.doc}:{self.record}"


@dataclass(frozen=True)
class LevelPoint:
    """A record's counter bytes at one memory level: (record FLOPs / level bytes, the record's FLOP/s)."""

    doc: int
    record: int
    level: str  # "L1" | "L2" | "DRAM" (core.counters.LEVELS)
    ai: float
    flops_per_s: float

    @property
    def gid(self) -> str:
        return f"{self.doc}:{self.record}:{self.level}"


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
    profile: bool = False  # a profile document is among them: marker areas by share, the top ones numbered
    levels: tuple[LevelPoint, ...] = ()  # the counter level points of records with counters (module docstring)
    lines: tuple[tuple[str, ...], ...] = ()  # sweeps: point gids joined by a line, in the swept value's order


def _number(v: Any) -> float | None:
    """A finite positive number, or None (anything else cannot sit on a log axis)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) and v > 0 else None


def _rates(block: dict[str, Any], field: str) -> dict[str, float]:
    raw = block.get(field)
    if not isinstance(raw, dict):
        return {}
    return {str(k): x for k, v in raw.items() if (x := _number(v)) is not None}


def _blocks(doc: Document) -> dict[str, dict[str, dict[str, float]]]:
    """The document's ceilings by source: {'datasheet'|'measured': {'compute': {...}, 'memory': {...}}}.

    A document without a ceilings block (hand-made, or older) gets one from its records' peaks.
    """
    device = doc.device or {}
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
        for rec in doc.records:
            if (peak := _number(rec.peak_flops_per_s)) is not None:
                compute.setdefault(str(rec.compute_pipe or f"{rec.dtype}_peak"), peak)
            if (bw := _number(rec.peak_bytes_per_s)) is not None:
                memory.setdefault("dram", bw)
            source = str(rec.roof_source or source)
        blocks[source] = {"compute": compute, "memory": memory}
    return blocks


def device_name(doc: Document) -> str:
    device = doc.device or {}
    ceilings = device.get("ceilings") or {}
    return str(device.get("name") or device.get("spec_name") or ceilings.get("device_id") or "unknown device")


def _date(doc: Document) -> str:
    return doc.created[:10] if isinstance(doc.created, str) else ""


def _series_names(docs: Sequence[Document], labels: Sequence[str] | None) -> tuple[str, ...]:
    if labels is not None:
        if len(labels) != len(docs):
            raise UsageError(f"{len(labels)} label(s) for {len(docs)} results file(s): give one label per file")
        return tuple(cut_label(str(x)) for x in labels)
    names = [cut_label(device_name(d)) for d in docs]
    dup = {n for n in names if names.count(n) > 1}
    names = [f"{n} ({_date(d)})" if n in dup and _date(d) else n for n, d in zip(names, docs, strict=True)]
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n} #{seen[n]}")
    return tuple(out)


def _doc_roofs(i: int, doc: Document, name: str, roof: str) -> list[Roof]:
    blocks = _blocks(doc)
    if roof == "datasheet" and "datasheet" not in blocks:
        raise RooflineError(f"{name}: no datasheet ceilings in this document (a CPU's roofline is measured): "
                            "use --roof measured or both")
    if roof == "measured" and "measured" not in blocks:
        raise RooflineError(f"{name}: no measured ceilings in this document (run `roofline calibrate` on that "
                            "machine and analyze again, or use --roof datasheet)")
    sources = [s for s in ("datasheet", "measured") if s in blocks and roof in (s, "both")]
    pipes: dict[str, tuple[str, float | None]] = {}  # pipe -> (label, the records' peak)
    for rec in doc.records:
        pipe = rec.compute_pipe
        if pipe:
            label = cut_label(str(rec.compute_pipe_label or pipe_label(str(pipe))))
            pipes.setdefault(str(pipe), (label, _number(rec.peak_flops_per_s)))
    if any("_tensor_" in p for p in pipes) and CONTEXT_PIPE not in pipes:
        pipes[CONTEXT_PIPE] = ("FP32 CUDA cores", None)
    record_sources = {str(r.roof_source or "datasheet") for r in doc.records}
    roofs: list[Roof] = []
    for source in sources:
        compute, memory = blocks[source]["compute"], blocks[source]["memory"]
        dram = memory.get("dram")
        levels = DATASHEET_MEMORY if source == "datasheet" else tuple(MEMORY_LEVELS)
        fastest = max((bw for level in levels if (bw := memory.get(level))), default=None)
        block_roofs = []
        for pipe, (label, record_peak) in pipes.items():
            value = compute.get(pipe)
            if value is None and source in record_sources:
                value = record_peak  # a ceilings block without this pipe: the records say what they used
            if value is not None:
                block_roofs.append(Roof(i, source, "compute", pipe, label, value,
                                        ridge=value / dram if dram else None,
                                        x_start=value / fastest if fastest else None))
        top = max((r.value for r in block_roofs), default=None)
        for level in levels:
            if (bw := memory.get(level)) is not None:
                block_roofs.append(Roof(i, source, "memory", level, MEMORY_LEVELS[level], bw,
                                        x_end=top / bw if top else None))
        roofs += block_roofs
    return roofs


def _headroom_roof(rec: Record, ai: float, roofs: list[Roof]) -> float:
    """Attainable FLOP/s of a record against the roof it was analysed on, or the drawn one of its pipe."""
    source = str(rec.roof_source or "datasheet")
    drawn = {r.source for r in roofs}
    own = _number(rec.attainable_flops_per_s)
    peak, bw = _number(rec.peak_flops_per_s), _number(rec.peak_bytes_per_s)
    if own is None and peak is not None and bw is not None:
        own = min(peak, ai * bw)
    if source in drawn or not drawn:
        return own if own is not None else float("nan")
    other = min(drawn)  # the one source drawn
    compute = next((r.value for r in roofs if r.source == other and r.key == rec.compute_pipe), peak)
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


def _point(i: int, j: int, rec: Record, roofs: list[Roof]) -> Point | str:
    """Where record j of document i sits, or why it cannot sit on a log-log chart."""
    ai = _number(rec.arithmetic_intensity)
    timed = rec.time_s is not None and rec.achieved_flops_per_s is not None
    y = _number(rec.achieved_flops_per_s if timed else rec.attainable_flops_per_s)
    if y is None and not timed and ai is not None:
        peak, bw = _number(rec.peak_flops_per_s), _number(rec.peak_bytes_per_s)
        y = min(peak, ai * bw) if peak is not None and bw is not None else None
    if rec.flops is None:  # a profile's op without a FLOP formula (listed with its time, never drawn at 0)
        return "no FLOP formula"
    if ai is None or y is None:
        return "no finite arithmetic intensity" if ai is None else "no positive FLOP/s"
    return Point(i, j, rec.label, ai, y, timed, str(rec.bound or "unknown"), _headroom_roof(rec, ai, roofs))


def level_points(point: Point, rec: Record) -> list[LevelPoint]:
    """The record's L1, L2 and DRAM points from its counters (none without counters or FLOPs)."""
    flops = _number(rec.flops)
    if rec.counters is None or flops is None:
        return []
    out = []
    for level, field in LEVELS.items():
        b = _number(getattr(rec.counters, field))
        if b is not None:
            out.append(LevelPoint(point.doc, point.record, level, flops / b, point.flops_per_s))
    return out


def is_profile(doc: Document) -> bool:
    """Whether the document is a whole-model profile (`roofline profile`): its summary, or aggregated records."""
    return isinstance(doc.extra.get("profile"), dict) or any(r.count is not None for r in doc.records)


def weighs_by_time(doc: Document) -> bool:
    """Whether the chart sizes and numbers the document's points by their part of its time: a profile, or an
    imported Nsight Compute report (`import-ncu`: one timed record per kernel of an application) of more than
    IMPORTED_NUMBERED kernels, whose 73 points were all numbered, the chart a field of digits."""
    from roofline.ncu.records import OP as KERNEL_OP

    return is_profile(doc) or (doc.timed and len(doc.records) > IMPORTED_NUMBERED
                               and all(r.op == KERNEL_OP for r in doc.records))


def time_shares(doc: Document) -> list[float | None]:
    """Each record's part of the document's time: time_s x count over the sum over records (an analytic
    document: roofline time); None for every record when the document has no such time."""
    if doc.timed:
        weights = [(r.time_s or 0.0) * (r.count or 1) for r in doc.records]
    else:
        weights = [(r.roofline_time_s or 0.0) * (r.count or 1) for r in doc.records]
    total = sum(weights)
    return [w / total if total > 0 else None for w in weights]


def skipped_text(skipped: Sequence[str], named: int = 3) -> str:
    """The records a chart cannot draw, by reason: 'no finite arithmetic intensity (39: aten::cat bf16, ...)'."""
    by: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    for entry in skipped:
        name, why = entry.rsplit(": ", 1)
        repeat = re.fullmatch(r"(.*) \(x(\d+)\)", why)  # chart_model's 'reason (x20)': one name, 20 records
        why, n = (repeat.group(1), int(repeat.group(2))) if repeat else (why, 1)
        by.setdefault(why, []).append(name)
        counts[why] = counts.get(why, 0) + n
    return "; ".join(f"{why} ({counts[why]}: {', '.join(names[:named])}{', …' if len(names) > named else ''})"
                     for why, names in by.items())


def _profile_label(rec: Record, regions: bool) -> str:
    """'aten::addmm fused fp32 in fc1', with its region when the document has several: ' [decode]'."""
    text = rec.label + (f" in {rec.module}" if rec.module else "")
    return text + (f" [{rec.region}]" if regions and rec.region else "")


def _label(rec: Record) -> str:
    """A record's name on the chart: its label, or for a kernel of an imported report (`import-ncu`: params
    {"kernel": short name, "id": ncu ID}) the kernel's name and dtype; records sharing it get their ID after."""
    kernel = (rec.params or {}).get("kernel")
    return f"{kernel} {rec.dtype}" if rec.op == "kernel" and kernel else rec.label


def chart_model(docs: Sequence[Document], labels: Sequence[str] | None = None, roof: str = "both",
                title: str | None = None, fit_levels: bool = True) -> Chart:
    """What a roofline chart of these documents shows (no drawing). `fit_levels`: the x range makes room for
    the counter level points (the image chart draws them; the terminal and HTML charts do not)."""
    if roof not in ROOF_CHOICES:
        raise UsageError(f"--roof must be one of {', '.join(ROOF_CHOICES)}, got {roof!r}")
    if not docs:
        raise RooflineError("no results documents to plot")
    series = _series_names(docs, labels)
    roofs: list[Roof] = []
    points: list[Point] = []
    levels: list[LevelPoint] = []
    skipped: list[str] = []
    for i, doc in enumerate(docs):
        if not doc.records:
            raise RooflineError(f"{series[i]}: no records to plot")
        own = _doc_roofs(i, doc, series[i], roof)
        profile, weighed = is_profile(doc), weighs_by_time(doc)
        shares = time_shares(doc) if weighed else [None] * len(doc.records)
        regions = profile and len({r.region for r in doc.records}) > 1
        for j, rec in enumerate(doc.records):
            point = _point(i, j, rec, own)
            name = _profile_label(rec, regions) if profile else _label(rec)
            if isinstance(point, str):
                skipped.append(f"{name}: {point}")
                continue
            levels += level_points(point, rec)
            if weighed:
                points.append(replace(point, label=name, share=shares[j]))
            elif rec.device_index is not None:  # `run --devices`: one point per entry and GPU
                points.append(replace(point, label=f"{name} [GPU {rec.device_index}]"))
            else:
                points.append(replace(point, label=name))
        # Before/after on one GPU: the second document's identical roofs are not drawn again.
        roofs += [r for r in own if not any(_same_roof(r, o) for o in roofs)]
    # the same reason for many records (an imported report's marker kernels) is said once, with a count
    skipped = [s if n == 1 else f"{s} (x{n})" for s, n in Counter(skipped).items()]
    if not points:
        raise RooflineError("no record can be drawn on a log-log chart: " + "; ".join(skipped))
    points = [replace(p, label=cut_label(p.label)) for p in _distinct_labels(points, docs)]
    xs = [p.ai for p in points] + [v.ai for v in levels if fit_levels] + [r.ridge for r in roofs if r.ridge] + \
        [r.x_end for r in roofs if r.x_end]
    ys = [p.flops_per_s for p in points] + [r.value for r in roofs if r.kind == "compute"]
    x_range = _span(min(xs), max(xs), _PAD_LEFT, _PAD_RIGHT)
    y_range = _span(min(ys), max(ys), _PAD_BOTTOM, _PAD_TOP)
    sources = tuple(s for s in ("datasheet", "measured") if any(r.source == s for r in roofs))
    lines = tuple(line for i, doc in enumerate(docs) if not is_profile(doc) for line in sweep_lines(i, doc, points))
    return Chart(title or _title(docs, points), series, sources, tuple(roofs), tuple(points), tuple(skipped),
                 x_range, y_range, profile=any(weighs_by_time(d) for d in docs), levels=tuple(levels), lines=lines)


def sweep_lines(i: int, doc: Document, points: Sequence[Point]) -> list[tuple[str, ...]]:
    """The sweeps among document i's drawn points, each as its point gids in rising order of the swept value.
    Only a document that says it is a sweep (its `sweep` field, written by `analyze` given a list or a range)
    has any: a suite's records that happen to differ in one parameter (a model's QKV and output projections)
    are no sweep. A line joins two or more records of one op, variant and dtype that differ only in the first
    swept parameter and in what follows from it (gemm's n and k default to m); a product sweep (m and n) is
    one line along m per value of n."""
    swept = doc.extra.get("sweep")
    if not isinstance(swept, list) or not swept:
        return []
    key = str(swept[0])
    drawn = {p.record: p.gid for p in points if p.doc == i}
    groups: dict[tuple[Any, ...], list[int]] = {}
    for j, rec in enumerate(doc.records):
        if j in drawn and isinstance(rec.params, dict):
            groups.setdefault((rec.op, rec.variant, rec.dtype), []).append(j)
    lines: list[tuple[str, ...]] = []
    for members in groups.values():
        params = [doc.records[j].params for j in members]
        names = {k for ps in params for k in ps}
        follows = {k for k in names if k not in swept
                   and all(len({repr(ps.get(k)) for ps in params if ps.get(key) == v}) == 1
                           for v in {ps.get(key) for ps in params})}
        along: dict[str, list[int]] = {}
        for j, ps in zip(members, params, strict=True):
            value = ps.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                rest = repr(sorted((k, repr(v)) for k, v in ps.items() if k != key and k not in follows))
                along.setdefault(rest, []).append(j)
        for js in along.values():
            if len(js) > 1:
                lines.append(tuple(drawn[j] for j in sorted(js, key=lambda j: doc.records[j].params[key])))
    return lines


def _distinct_labels(points: list[Point], docs: Sequence[Document]) -> list[Point]:
    """Records of one document that share a label get the parameters that tell them apart (at most two,
    then a number): 'conv2d direct fp16 in_channels=64 height=56'."""
    groups: dict[tuple[int, str], list[int]] = {}
    for k, p in enumerate(points):
        groups.setdefault((p.doc, p.label), []).append(k)
    out = list(points)
    for (doc, label), members in groups.items():
        if len(members) < 2:
            continue
        params = [docs[doc].records[points[k].record].params or {} for k in members]
        keys = _telling_keys(params)
        texts = [" ".join([label, *(f"{key}={ps.get(key)}" for key in keys)]) for ps in params]
        for n, (k, text) in enumerate(zip(members, texts, strict=True)):
            if texts.count(text) > 1:
                text = f"{text} #{n + 1}"
            out[k] = replace(points[k], label=text)
    return out


def _telling_keys(params: list[dict[str, Any]], most: int = 2) -> tuple[str, ...]:
    """The fewest parameter names (at most `most`, earliest first) whose values tell the most records apart."""
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


def _title(docs: Sequence[Document], points: Sequence[Point]) -> str:
    names = list(dict.fromkeys(device_name(d) for d in docs))
    recs = [docs[p.doc].records[p.record] for p in points]
    dtypes = title_dtypes([(str(r.dtype), (r.flops or 0.0) * (r.count or 1)) for r in recs])
    dates = list(dict.fromkeys(d for d in (_date(doc) for doc in docs) if d))
    parts = [f"Roofline: {' vs '.join(names)}", ", ".join(dtypes)]
    profiles = list(dict.fromkeys(str(d.extra["profile"].get("name") or "profile") for d in docs
                                  if isinstance(d.extra.get("profile"), dict)))
    if profiles:
        parts[0] = f"Profile {' vs '.join(profiles)} on {' vs '.join(names)}"
    if dates:
        parts.append(" / ".join(dates))
    return "  ·  ".join(parts)


def intensity_tick(value: float) -> str:
    """A decade tick of the intensity axis: '0.1', '100', '1000', '10k'."""
    return f"{value / 1e3:g}k" if value >= 1e4 else f"{value:g}"


# ---------------------------------------------------------------- numbering (charts of many points)
def is_numbered(chart: Chart) -> bool:
    """Whether the chart marks its points with numbers (and a table) rather than labels: a profile's always
    (the table holds each op's share of the time)."""
    return chart.profile or len(chart.points) > NUMBERED_ABOVE


def point_numbers(chart: Chart) -> dict[str, int]:
    """The chart number of each point (gid -> 1, 2, ...), unique across documents: document by document,
    then left to right (rising intensity), higher first at equal intensity, so that points near each other
    on the chart get nearby numbers and the table reads along the x axis.

    A profile document's points are numbered by share instead (1 = the largest), only its PROFILE_LABELLED
    largest: the others get no number (`unlabelled_note` counts them)."""
    if chart.profile:
        return _profile_numbers(chart)
    order = sorted(chart.points, key=lambda p: (p.doc, p.ai, -p.flops_per_s, p.record))
    return {p.gid: n for n, p in enumerate(order, 1)}


def _profile_numbers(chart: Chart) -> dict[str, int]:
    numbers: dict[str, int] = {}
    for doc in range(len(chart.series)):
        own = [p for p in chart.points if p.doc == doc]
        if any(p.share is not None for p in own):
            order = sorted(own, key=lambda p: (p.share is None, -(p.share or 0.0), p.ai, p.record))
            own = order[:PROFILE_LABELLED]
        else:  # a plain document beside a profile: every point, along the x axis as usual
            own.sort(key=lambda p: (p.ai, -p.flops_per_s, p.record))
        for p in own:
            numbers[p.gid] = len(numbers) + 1
    return numbers


def marker_pt(p: Point) -> float:
    """A point's marker size (diameter, in points): MARKER_PT, or a profile's by its share (area ~ share)."""
    if p.share is None:
        return MARKER_PT
    return max(PROFILE_MIN_PT, PROFILE_FULL_PT * math.sqrt(p.share))


def unlabelled_note(chart: Chart, numbers: dict[str, int]) -> str | None:
    """The note on a profile chart's points without a number: how many, and their part of the time."""
    rest = [p for p in chart.points if p.gid not in numbers]
    if not chart.profile or not rest:
        return None
    docs = sorted({p.doc for p in rest})
    shares = [sum(p.share or 0.0 for p in rest if p.doc == d) for d in docs]
    held = " and ".join(f"{s:.1%}" for s in shares) + (" of each document's time" if len(docs) > 1 else
                                                         " of the time")
    return f"{len(rest)} smaller op{'s' if len(rest) > 1 else ''} not numbered ({held})"


__all__ = ["NUMBERED_ABOVE", "PROFILE_FULL_PT", "PROFILE_LABELLED", "PROFILE_MIN_PT", "ROOF_CHOICES",
           "Chart", "LevelPoint", "Point", "Roof", "chart_model", "device_name", "intensity_tick",
           "is_numbered", "is_profile", "level_points", "load_documents", "marker_pt", "point_numbers", "sweep_lines",
           "time_shares", "unlabelled_note"]
