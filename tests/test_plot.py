"""Roofline charts: the figure's data (ceilings, points, labels, legends), files in three formats, the
terminal chart, and one-line errors for files that cannot be drawn.

tests/data/results_h200.json is hand-made: six timed records on the H200 SXM spec (`roofline specs show
h200`: BF16 tensor dense 989.4 TFLOP/s, BF16 CUDA-core 133.8, FP32 66.9, HBM 4800 GB/s), times chosen by
hand, and a measured_ceilings block (DRAM 4.31 TB/s, L2 11.2, SMEM 30.5, BF16 tensor 765 TFLOP/s).
tests/data/results_analytic.json holds five analytic-only records on the same spec.

Up to NUMBERED_ABOVE points are labelled by name; a chart of more numbers them and lists them in a table
under it (`_crowded()` and `_cluster()` build such documents from the operator models).

The label placer and the table layout work on plain rectangles: their tests (at the end) run without
matplotlib, on hand-made points and a fixed-width "font".
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from helpers import DATA, ROOT, write

from roofline.core.document import Document
from roofline.core.errors import RooflineError, UsageError
from roofline.core.format import number
from roofline.report.chart import (
    NUMBERED_ABOVE,
    Chart,
    Point,
    Roof,
    build_figure,
    chart_model,
    load_documents,
    point_numbers,
    save_chart,
)
from roofline.report.chart.draw import FIGSIZE_IN
from roofline.report.chart.placer import Candidate, Scene, choose, place_labels, point_candidates, stack
from roofline.report.chart.shapes import clear, quad, rect
from roofline.report.chart.table import EDGE_IN, NUMBERED_MAX_WIDTH_IN, Entry, fill, plan_table
from roofline.report.style import BOUND_COLOURS, DOC_MARKERS, OTHER_BOUND_COLOUR
from roofline.report.terminal import LETTERS, render_terminal

H200 = DATA / "results_h200.json"
ANALYTIC = DATA / "results_analytic.json"

# The H200 SXM datasheet peaks the documents carry (specs/h200*.toml), in FLOP/s and bytes/s.
BF16_TENSOR = 989.4e12
BF16_PLAIN = 133.8e12
FP32 = 66.9e12
HBM = 4800e9


# ---------------------------------------------------------------- helpers
def doc(path: Path = H200) -> Document:
    return load_documents([path])[0]


def change(d: Document, i: int, **fields: Any) -> Document:
    """The document with record i's fields changed (records are frozen)."""
    d.records[i] = dataclasses.replace(d.records[i], **fields)
    return d


def artists(fig: Any, prefix: str) -> dict[str, Any]:
    """Every line or text of the figure whose gid starts with prefix, by gid."""
    from matplotlib.lines import Line2D
    from matplotlib.text import Text

    found = {}
    for a in fig.findobj(lambda a: isinstance(a, (Line2D, Text))):
        gid = a.get_gid() or ""
        if gid.startswith(prefix):
            found[gid] = a
    return found


def legend_texts(fig: Any, gid: str) -> list[str]:
    (legend,) = [lg for lg in fig.legends if lg.get_gid() == gid]
    return [t.get_text() for t in legend.get_texts()]


def text_corners(t: Any, renderer: Any) -> list[tuple[float, float]]:
    """The text's own rectangle in display pixels (rotated with it; leader lines left out)."""
    from matplotlib.text import Text

    box = Text.get_window_extent(t, renderer)
    angle = t.get_rotation() % 360
    if angle == 0:
        return [(box.x0, box.y0), (box.x1, box.y0), (box.x1, box.y1), (box.x0, box.y1)]
    t.set_rotation(0)
    flat = Text.get_window_extent(t, renderer)
    t.set_rotation(angle)
    # A rotated rectangle and its axis-aligned bounding box share their centre.
    cx, cy, w, h = (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2, flat.width, flat.height
    c, s = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    return [(cx + dx * c - dy * s, cy + dx * s + dy * c) for dx, dy in
            ((-w / 2, -h / 2), (w / 2, -h / 2), (w / 2, h / 2), (-w / 2, h / 2))]


def disjoint(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> bool:
    """Separating-axis test for two convex quadrilaterals."""
    for poly in (a, b):
        for k in range(len(poly)):
            (x0, y0), (x1, y1) = poly[k], poly[(k + 1) % len(poly)]
            nx, ny = y0 - y1, x1 - x0
            pa = [x * nx + y * ny for x, y in a]
            pb = [x * nx + y * ny for x, y in b]
            if max(pa) <= min(pb) or max(pb) <= min(pa):
                return True
    return False


@pytest.fixture(scope="module")
def h200_fig() -> Any:
    return build_figure([doc()])


# ---------------------------------------------------------------- reading and errors
def test_load_documents_reads_both_data_files() -> None:
    docs = load_documents([H200, ANALYTIC])
    assert [len(d.records) for d in docs] == [6, 5]
    assert docs[0].device["measured_ceilings"]["memory_bytes_per_s"]["l2"] == 11.2e12


@pytest.mark.parametrize(("content", "expect"), [
    ("", "empty file"),
    ("  \n", "empty file"),
    ('{"schema_version": 1, "records": [', "malformed JSON"),
    (json.dumps({"schema_version": 99, "device": {}, "records": []}), "newer than this roofline reads"),
    (json.dumps({"schema_version": 1, "created": "2026-11-20T00:00:00+00:00", "device": {}, "records": []}),
     "no records to plot"),
    ("[1, 2]", "not a roofline results document"),
])
def test_unreadable_files_are_one_line_errors(tmp_path: Path, content: str, expect: str) -> None:
    p = write(tmp_path / "bad.json", content)
    with pytest.raises(RooflineError) as info:
        load_documents([H200, p])
    msg = str(info.value)
    assert expect in msg and str(p) in msg
    assert "\n" not in msg


def test_missing_file_and_no_files_are_errors(tmp_path: Path) -> None:
    with pytest.raises(RooflineError, match="no such file"):
        load_documents([tmp_path / "nope.json"])
    with pytest.raises(RooflineError, match="no results files"):
        load_documents([])


def test_a_document_with_no_records_given_directly_is_an_error() -> None:
    d = doc()
    d.records = []
    with pytest.raises(RooflineError, match="no records"):
        build_figure([d])
    with pytest.raises(RooflineError, match="no records"):
        render_terminal([d])


def test_unknown_roof_choice_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="--roof must be one of datasheet, measured, both"):
        build_figure([doc()], roof="calibrated")


def test_measured_roof_without_a_calibration_says_what_to_do() -> None:
    with pytest.raises(RooflineError) as info:
        build_figure([doc(ANALYTIC)], roof="measured")
    assert "no measured ceilings" in str(info.value) and "roofline calibrate" in str(info.value)
    assert "\n" not in str(info.value)


# ---------------------------------------------------------------- roof labels
@pytest.mark.parametrize(("kind", "source", "value", "text"), [
    ("compute", "datasheet", 989.4e12, "BF16 tensor 989 TFLOP/s"),
    ("compute", "datasheet", 66.9e12, "BF16 tensor 66.9 TFLOP/s"),
    ("compute", "measured", 1978.9e12, "BF16 tensor 1.98 PFLOP/s (measured)"),
    ("memory", "datasheet", 4.8e12, "DRAM 4.8 TB/s"),
    ("memory", "measured", 900e9, "DRAM 900 GB/s (measured)"),
])
def test_roof_label_names_the_roof_its_rate_and_a_measured_source(kind: str, source: str, value: float,
                                                                   text: str) -> None:
    name = "BF16 tensor" if kind == "compute" else "DRAM"
    assert Roof(0, source, kind, "key", name, value).text == text


# ---------------------------------------------------------------- ceilings
def test_compute_ceilings_are_the_documents_peaks(h200_fig: Any) -> None:
    d = doc()
    peaks = d.device["ceilings"]["compute_flops_per_s"]
    measured = d.device["measured_ceilings"]["compute_flops_per_s"]
    roofs = artists(h200_fig, "roof:0:")
    compute = {g: line for g, line in roofs.items() if ":compute:" in g}
    # The pipes the records use (BF16 tensor, BF16 CUDA cores, FP32), the measured BF16 tensor rate; no others.
    assert set(compute) == {"roof:0:datasheet:compute:bf16_tensor_dense_tflops",
                            "roof:0:datasheet:compute:bf16_dense_tflops",
                            "roof:0:datasheet:compute:fp32_dense_tflops",
                            "roof:0:measured:compute:bf16_tensor_dense_tflops"}
    for key, expected in (("bf16_tensor_dense_tflops", BF16_TENSOR), ("bf16_dense_tflops", BF16_PLAIN),
                          ("fp32_dense_tflops", FP32)):
        assert peaks[key] == pytest.approx(expected)
        assert set(compute[f"roof:0:datasheet:compute:{key}"].get_ydata()) == {peaks[key]}
    assert set(compute["roof:0:measured:compute:bf16_tensor_dense_tflops"].get_ydata()) == {
        measured["bf16_tensor_dense_tflops"]}
    # Each compute roof starts at its ridge: 989.4e12 / 4.8e12 = 206.125 FLOP/byte.
    assert compute["roof:0:datasheet:compute:bf16_tensor_dense_tflops"].get_xdata()[0] == pytest.approx(206.125)


def test_fp32_cuda_core_ceiling_is_drawn_for_context_with_tensor_pipes() -> None:
    d = doc(ANALYTIC)  # no fp32 record: FP32 appears only because the records use tensor pipes
    assert all(r.dtype != "fp32" for r in d.records)
    fig = build_figure([d])
    line = artists(fig, "roof:0:datasheet:compute:fp32_dense_tflops")["roof:0:datasheet:compute:fp32_dense_tflops"]
    assert set(line.get_ydata()) == {d.device["ceilings"]["compute_flops_per_s"]["fp32_dense_tflops"]}
    assert line.get_ydata()[0] == pytest.approx(FP32)
    labels = {t.get_text() for t in artists(fig, "label:roof:").values()}
    assert "FP32 CUDA cores 66.9 TFLOP/s" in labels


def test_memory_ceilings_are_diagonals_of_the_documents_bandwidths(h200_fig: Any) -> None:
    d = doc()
    memory = d.device["measured_ceilings"]["memory_bytes_per_s"]
    roofs = artists(h200_fig, "roof:0:")
    expected = {"roof:0:datasheet:memory:dram": HBM, "roof:0:measured:memory:dram": memory["dram"],
                "roof:0:measured:memory:l2": memory["l2"], "roof:0:measured:memory:smem": memory["smem"]}
    assert {g for g in roofs if ":memory:" in g} == set(expected)  # no datasheet SMEM: it is derived
    for gid, bandwidth in expected.items():
        line = roofs[gid]
        for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True):
            assert y / x == pytest.approx(bandwidth)  # FLOP/s = AI x bytes/s
    # DRAM climbs to the top compute roof of its source: x = 989.4e12 / 4.8e12.
    assert roofs["roof:0:datasheet:memory:dram"].get_xdata()[-1] == pytest.approx(206.125)


def test_datasheet_roofs_solid_measured_roofs_dashed(h200_fig: Any) -> None:
    roofs = artists(h200_fig, "roof:")
    assert {g.split(":")[2] for g in roofs} == {"datasheet", "measured"}  # both kinds drawn, so both checked
    for gid, line in roofs.items():
        dashed = line.get_linestyle() not in ("-", "solid")
        assert dashed == (":measured:" in gid), gid


def test_ridge_points_are_marked(h200_fig: Any) -> None:
    ridges = artists(h200_fig, "ridge:0:")
    bf16 = ridges["ridge:0:datasheet:compute:bf16_tensor_dense_tflops"]
    assert (bf16.get_xdata()[0], bf16.get_ydata()[0]) == (pytest.approx(206.125), BF16_TENSOR)
    fp32 = ridges["ridge:0:datasheet:compute:fp32_dense_tflops"]
    assert fp32.get_xdata()[0] == pytest.approx(66.9 / 4.8)  # 13.94 FLOP/byte
    measured = ridges["ridge:0:measured:compute:bf16_tensor_dense_tflops"]
    assert measured.get_xdata()[0] == pytest.approx(765 / 4.31)  # against the measured DRAM roof


@pytest.mark.parametrize(("roof", "present", "absent"), [
    ("datasheet", ":datasheet:", ":measured:"),
    ("measured", ":measured:", ":datasheet:"),
])
def test_roof_choice_selects_the_ceilings(roof: str, present: str, absent: str) -> None:
    gids = set(artists(build_figure([doc()], roof=roof), "roof:"))
    assert any(present in g for g in gids)
    assert not any(absent in g for g in gids)


def _cpu_doc() -> Document:
    """A CPU run: its only roofline is measured (matmul FLOP/s and copy bandwidth)."""
    d = doc()
    # gemm fp32 2048: 17179869184 FLOP, 50331648 bytes
    rec = dataclasses.replace(d.records[1], gpu="cpu", roof_source="measured", compute_pipe="cpu_fp32",
                              compute_pipe_label="CPU FP32 matmul", peak_flops_per_s=1.2e12, peak_bytes_per_s=40e9,
                              attainable_flops_per_s=1.2e12, time_s=0.0286, achieved_flops_per_s=17179869184 / 0.0286)
    d.records = [rec]
    d.device = {"kind": "cpu", "name": "AMD EPYC 9654", "ceilings": {
        "device_id": "cpu", "source": "measured", "compute_flops_per_s": {"cpu_fp32": 1.2e12, "cpu_bf16": 2.1e12},
        "memory_bytes_per_s": {"dram": 40e9, "dram_read": 52e9}}}
    return d


def test_a_cpu_document_draws_its_measured_roofline() -> None:
    fig = build_figure([_cpu_doc()])
    roofs = artists(fig, "roof:0:")
    assert set(roofs) == {"roof:0:measured:compute:cpu_fp32", "roof:0:measured:memory:dram"}
    assert set(roofs["roof:0:measured:compute:cpu_fp32"].get_ydata()) == {1.2e12}
    labels = {t.get_text() for t in artists(fig, "label:roof:").values()}
    assert labels == {"CPU FP32 matmul 1.2 TFLOP/s (measured)", "DRAM 40 GB/s (measured)"}
    with pytest.raises(RooflineError, match="no datasheet ceilings"):
        build_figure([_cpu_doc()], roof="datasheet")


def test_a_document_without_a_ceilings_block_uses_its_records_peaks() -> None:
    d = doc()
    d.device = {"name": "hand-made"}
    roofs = artists(build_figure([d]), "roof:0:")
    assert set(roofs["roof:0:datasheet:compute:bf16_tensor_dense_tflops"].get_ydata()) == {BF16_TENSOR}
    dram = roofs["roof:0:datasheet:memory:dram"]
    assert dram.get_ydata()[0] / dram.get_xdata()[0] == pytest.approx(HBM)


# ---------------------------------------------------------------- points
def test_timed_points_sit_at_achieved_filled(h200_fig: Any) -> None:
    d = doc()
    points = artists(h200_fig, "point:0:")
    assert len(points) == len(d.records)
    for i, rec in enumerate(d.records):
        p = points[f"point:0:{i}"]
        assert (p.get_xdata()[0], p.get_ydata()[0]) == (rec.arithmetic_intensity, rec.achieved_flops_per_s)
        assert p.get_markerfacecolor() == BOUND_COLOURS[rec.bound]


def test_analytic_points_sit_at_attainable_hollow() -> None:
    d = doc(ANALYTIC)
    fig = build_figure([d])
    for i, rec in enumerate(d.records):
        p = artists(fig, f"point:0:{i}")[f"point:0:{i}"]
        assert (p.get_xdata()[0], p.get_ydata()[0]) == (rec.arithmetic_intensity, rec.attainable_flops_per_s)
        assert p.get_markerfacecolor() == "white"
        assert p.get_markeredgecolor() == BOUND_COLOURS[rec.bound]
    key = legend_texts(fig, "legend:key")
    assert "model only (attainable)" in key and "timed (achieved)" not in key


def test_headroom_runs_from_the_point_up_to_its_roof(h200_fig: Any) -> None:
    d = doc()
    gemm = d.records[0]  # gemm bf16: 712 TFLOP/s achieved under the 989.4 roof
    line = artists(h200_fig, "headroom:0:0")["headroom:0:0"]
    assert list(line.get_xdata()) == [gemm.arithmetic_intensity] * 2
    assert list(line.get_ydata()) == [gemm.achieved_flops_per_s, BF16_TENSOR]
    gemv = d.records[3]  # memory-bound: up to AI x 4.8e12
    line = artists(h200_fig, "headroom:0:3")["headroom:0:3"]
    assert line.get_ydata()[1] == pytest.approx(gemv.arithmetic_intensity * HBM)


def test_unknown_bound_gets_a_neutral_colour() -> None:
    d = change(doc(), 3, bound="latency")
    fig = build_figure([d])
    assert artists(fig, "point:0:3")["point:0:3"].get_markerfacecolor() == OTHER_BOUND_COLOUR
    assert "latency-bound" in legend_texts(fig, "legend:key")


def test_a_record_that_cannot_sit_on_log_axes_is_left_out_and_said() -> None:
    d = change(doc(), 1, arithmetic_intensity=None)  # what an infinite intensity becomes in JSON
    chart = chart_model([d])
    assert [p.record for p in chart.points] == [0, 2, 3, 4, 5]
    assert chart.skipped == ("gemm fp32: no finite arithmetic intensity",)
    assert "not drawn: gemm fp32" in render_terminal([d])


# ---------------------------------------------------------------- labels, legends, title
def test_label_texts(h200_fig: Any) -> None:
    points = {t.get_text() for t in artists(h200_fig, "label:point:").values()}
    assert points == {"gemm bf16", "gemm fp32", "attention flash bf16", "gemv bf16", "swiglu fused bf16",
                      "rmsnorm bf16"}
    assert not artists(h200_fig, "table:")  # six points: labelled by name, no table
    roofs = {t.get_text() for t in artists(h200_fig, "label:roof:").values()}
    assert roofs == {"BF16 tensor 989 TFLOP/s", "BF16 134 TFLOP/s", "FP32 66.9 TFLOP/s", "DRAM 4.8 TB/s",
                     "BF16 tensor 765 TFLOP/s (measured)", "DRAM 4.31 TB/s (measured)",
                     "L2 11.2 TB/s (measured)", "SMEM 30.5 TB/s (measured)"}


def test_records_sharing_a_label_get_the_parameters_that_differ() -> None:
    d = doc()
    d.records.append(dataclasses.replace(d.records[0], params={**d.records[0].params, "k": 8192}))
    labels = [p.label for p in chart_model([d]).points]
    assert labels[0] == "gemm bf16 k=4096" and labels[-1] == "gemm bf16 k=8192"


def test_title_names_device_dtypes_and_date(h200_fig: Any) -> None:
    title = h200_fig.get_suptitle()
    assert "NVIDIA H200" in title and "bf16, fp32" in title and "2026-11-20" in title
    assert build_figure([doc()], title="before the fix").get_suptitle() == "before the fix"


def test_one_document_one_legend_entry(h200_fig: Any) -> None:
    assert legend_texts(h200_fig, "legend:series") == ["NVIDIA H200"]
    key = legend_texts(h200_fig, "legend:key")
    assert {"compute-bound", "memory-bound", "datasheet roof", "measured roof", "ridge point"} <= set(key)


def test_two_documents_two_legend_entries_and_shapes() -> None:
    fig = build_figure([doc(), doc(ANALYTIC)])
    assert legend_texts(fig, "legend:series") == ["NVIDIA H200", "NVIDIA H200 SXM 141GB"]
    first = artists(fig, "point:0:0")["point:0:0"].get_marker()
    second = artists(fig, "point:1:0")["point:1:0"].get_marker()
    assert first != second
    assert "2026-11-20 / 2026-11-21" in fig.get_suptitle()
    labelled = build_figure([doc(), doc(ANALYTIC)], labels=["before", "after"])
    assert legend_texts(labelled, "legend:series") == ["before", "after"]
    with pytest.raises(UsageError, match="1 label"):
        build_figure([doc(), doc(ANALYTIC)], labels=["only one"])


def test_same_device_twice_is_told_apart_and_its_roofs_drawn_once() -> None:
    before, after = doc(), doc()
    after.created = "2026-11-27T10:00:00+00:00"
    fig = build_figure([before, after])
    assert legend_texts(fig, "legend:series") == ["NVIDIA H200 (2026-11-20)", "NVIDIA H200 (2026-11-27)"]
    assert not artists(fig, "roof:1:")  # identical ceilings: the first document's lines serve both


def _crowded() -> Document:
    """Eight GEMVs of close intensities beside the six records: labels that must make room."""
    from roofline.ceilings.specs import gpu_ceilings, resolve
    from roofline.core.dtypes import get_dtype
    from roofline.core.record import analytic_record, with_time
    from roofline.ops import make

    d = doc()
    ceilings = gpu_ceilings(resolve("h200"))
    for m in (1, 2, 3, 4, 6, 8, 12, 16):
        rec = analytic_record(make("gemv", m=m), get_dtype("bf16"), ceilings)
        d.records.append(with_time(rec, rec.roofline_time_s / 0.8))
    return d


@pytest.mark.parametrize("case", ["one", "two", "crowded"])
def test_labels_do_not_overlap_and_are_not_clipped(case: str) -> None:
    docs = {"one": [doc()], "two": [doc(), doc(ANALYTIC)], "crowded": [_crowded()]}[case]
    fig = build_figure(docs)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    labels = artists(fig, "label:")
    assert len(labels) >= sum(len(d.records) for d in docs)
    shapes = {g: text_corners(t, renderer) for g, t in labels.items()}
    gids = sorted(shapes)
    for i, a in enumerate(gids):
        for b in gids[i + 1:]:
            assert disjoint(shapes[a], shapes[b]), f"{labels[a].get_text()!r} overlaps {labels[b].get_text()!r}"
    width, height = fig.canvas.get_width_height()
    axes = fig.axes[0].get_window_extent(renderer)
    legends = [lg.get_window_extent(renderer) for lg in fig.legends]
    for gid, corners in shapes.items():
        xs, ys = [c[0] for c in corners], [c[1] for c in corners]
        assert min(xs) >= 0 and min(ys) >= 0 and max(xs) <= width and max(ys) <= height, gid
        if not gid.startswith("label:roof:") or ":memory:" in gid:  # inside the axes (compute labels: margin)
            assert axes.x0 <= min(xs) and max(xs) <= axes.x1 and axes.y0 <= min(ys) and max(ys) <= axes.y1, gid
        box = [(min(xs), min(ys)), (max(xs), min(ys)), (max(xs), max(ys)), (min(xs), max(ys))]
        for lg in legends:
            assert disjoint(box, [(lg.x0, lg.y0), (lg.x1, lg.y0), (lg.x1, lg.y1), (lg.x0, lg.y1)]), gid


# ---------------------------------------------------------------- numbered charts (more than NUMBERED_ABOVE points)
def _cluster(count: int = 10) -> Document:
    """The six records and `count` BF16 GEMMs of nearly one shape and speed: a tight clump of markers."""
    from roofline.ceilings.specs import gpu_ceilings, resolve
    from roofline.core.dtypes import get_dtype
    from roofline.core.record import analytic_record, with_time
    from roofline.ops import make

    d = doc()
    ceilings = gpu_ceilings(resolve("h200"))
    for i in range(count):
        rec = analytic_record(make("gemm", m=4096, n=4096, k=4096 + 256 * i), get_dtype("bf16"), ceilings)
        d.records.append(with_time(rec, rec.roofline_time_s / (0.7 + 0.02 * (i % 5))))
    return d


def _boxes(fig: Any, prefixes: tuple[str, ...]) -> dict[str, list[tuple[float, float]]]:
    """Display-pixel rectangles (rotated texts: their own quadrilateral) of the texts and markers whose gid
    starts with one of the prefixes."""
    from matplotlib.lines import Line2D
    from matplotlib.text import Text

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    out = {}
    for a in fig.findobj(lambda a: isinstance(a, (Line2D, Text))):
        gid = a.get_gid() or ""
        if not gid.startswith(prefixes) or (isinstance(a, Text) and not a.get_text()):
            continue
        if isinstance(a, Text):
            out[gid] = text_corners(a, renderer)
        else:
            b = a.get_window_extent(renderer)
            out[gid] = [(b.x0, b.y0), (b.x1, b.y0), (b.x1, b.y1), (b.x0, b.y1)]
    return out


def _overlaps(boxes: dict[str, list[tuple[float, float]]]) -> list[tuple[str, str]]:
    gids = sorted(boxes)
    return [(a, b) for i, a in enumerate(gids) for b in gids[i + 1:] if not disjoint(boxes[a], boxes[b])]


def test_up_to_the_threshold_points_are_labelled_above_it_numbered() -> None:
    d = _crowded()
    d.records = d.records[:NUMBERED_ABOVE]
    labels = {t.get_text() for t in artists(build_figure([d]), "label:point:").values()}
    assert labels == {p.label for p in chart_model([d]).points}
    d = _crowded()
    d.records = d.records[:NUMBERED_ABOVE + 1]
    numbers = {t.get_text() for t in artists(build_figure([d]), "label:point:").values()}
    assert numbers == {str(n) for n in range(1, NUMBERED_ABOVE + 2)}


def test_crowded_chart_numbers_its_points_and_lists_them_in_a_table() -> None:
    d = _crowded()
    chart = chart_model([d])
    numbers = point_numbers(chart)
    fig = build_figure([d])
    # On the chart: each point's number, 1..N, left to right (rising intensity).
    marks = {g.removeprefix("label:point:"): t.get_text() for g, t in artists(fig, "label:point:").items()}
    assert marks == {p.gid: str(numbers[p.gid]) for p in chart.points}
    by_number = sorted(chart.points, key=lambda p: numbers[p.gid])
    assert [numbers[p.gid] for p in by_number] == list(range(1, len(chart.points) + 1))
    assert all(a.ai <= b.ai for a, b in itertools.pairwise(by_number))
    # In the table: number, marker, full label, intensity, TFLOP/s, fraction of the roof.
    table = artists(fig, "table:")
    heads = {t.get_text() for g, t in table.items() if g.startswith("table:head:")}
    assert {"#", "operator", "FLOP/B", "TFLOP/s", "of roof"} <= heads
    for p in chart.points:
        rec = d.records[p.record]
        assert table[f"table:number:{p.gid}"].get_text() == str(numbers[p.gid])
        assert table[f"table:label:{p.gid}"].get_text() == p.label
        assert table[f"table:ai:{p.gid}"].get_text() == number(rec.arithmetic_intensity)
        tflops = float(table[f"table:flops:{p.gid}"].get_text().replace(",", ""))
        assert tflops == pytest.approx(rec.achieved_flops_per_s / 1e12, rel=5e-3)
        assert table[f"table:fraction:{p.gid}"].get_text() == f"{rec.roofline_fraction:.0%}"
        marker = table[f"table:marker:{p.gid}"]
        assert marker.get_marker() == artists(fig, f"point:{p.gid}")[f"point:{p.gid}"].get_marker()
        assert marker.get_markerfacecolor() == BOUND_COLOURS[rec.bound]
    # A row's cells share a baseline and run left to right in the headings' order.
    for p in chart.points:
        cells = [table[f"table:{c}:{p.gid}"] for c in ("number", "label", "ai", "flops", "fraction")]
        assert len({round(t.get_position()[1], 6) for t in cells}) == 1
        xs = [t.get_position()[0] for t in cells]
        assert xs == sorted(xs)


def test_records_sharing_a_label_show_their_parameters_in_the_table() -> None:
    d = _crowded()  # nine GEMVs: gemv bf16 of the six, and eight more of m = 1..16
    fig = build_figure([d])
    rows = [t.get_text() for g, t in artists(fig, "table:label:").items()]
    gemvs = {r for r in rows if r.startswith("gemv bf16")}
    # m tells them apart; the six's GEMV and the first added one share every parameter: numbered.
    assert gemvs == {"gemv bf16 m=1 #1", "gemv bf16 m=1 #2"} | {f"gemv bf16 m={m}" for m in (2, 3, 4, 6, 8, 12, 16)}


@pytest.mark.parametrize("case", ["crowded", "cluster", "two"])
def test_numbered_chart_nothing_overlaps_nothing_is_clipped(case: str) -> None:
    docs = {"crowded": [_crowded()], "cluster": [_cluster()], "two": [_cluster(), _crowded()]}[case]
    fig = build_figure(docs)
    texts = _boxes(fig, ("label:", "table:number:", "table:label:", "table:ai:", "table:flops:",
                         "table:fraction:", "table:head:", "table:group:"))
    # Every point has its number on the chart and its row in the table; no two of those texts overlap.
    points = sum(len(d.records) for d in docs)
    assert sum(g.startswith("label:point:") for g in texts) == points
    assert sum(g.startswith("table:label:") for g in texts) == points
    clash = _overlaps(texts)
    assert not clash, clash[:3]
    # A number overlaps no marker (its own included).
    markers = _boxes(fig, ("point:",))
    for gid, box in texts.items():
        if gid.startswith("label:point:"):
            for m, mbox in markers.items():
                assert disjoint(box, mbox), f"number {gid} on marker {m}"
    # The table lies under the legends and the axes, and inside the figure.
    renderer = fig.canvas.get_renderer()
    width, height = fig.canvas.get_width_height()
    under = [fig.axes[0].get_tightbbox(renderer)] + [lg.get_window_extent(renderer) for lg in fig.legends]
    for gid, corners in texts.items():
        xs, ys = [c[0] for c in corners], [c[1] for c in corners]
        assert min(xs) >= 0 and min(ys) >= 0 and max(xs) <= width and max(ys) <= height, gid
        if gid.startswith("table:"):
            assert all(max(ys) < box.y0 for box in under), gid
    legends = [lg.get_window_extent(renderer) for lg in fig.legends]
    assert not any(a.overlaps(b) for i, a in enumerate(legends) for b in legends[i + 1:])
    # No two callout leaders cross.
    leaders = [line for g, line in artists(fig, "leader:").items()]
    segs = [[tuple(xy) for xy in fig.axes[0].transData.transform(list(zip(line.get_xdata(), line.get_ydata(),
                                                                           strict=True)))] for line in leaders]
    if case == "cluster":
        assert len(leaders) >= 10  # the clump of GEMMs gets its numbers as a callout
    for i, a in enumerate(segs):
        for b in segs[i + 1:]:
            if a[0] != b[0]:
                assert _segments_apart(a, b), "callout leaders cross"


def _segments_apart(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> bool:
    def side(p: tuple[float, float], q: tuple[float, float], r: tuple[float, float]) -> float:
        return (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0])

    (p1, p2), (q1, q2) = a, b
    return not (side(p1, p2, q1) * side(p1, p2, q2) < 0 and side(q1, q2, p1) * side(q1, q2, p2) < 0)


def test_numbered_chart_is_readable_and_titled() -> None:
    from matplotlib.text import Text

    fig = build_figure([_crowded()])
    width, height = fig.get_size_inches()
    assert FIGSIZE_IN[0] <= width <= NUMBERED_MAX_WIDTH_IN and height > FIGSIZE_IN[1]
    assert fig.dpi == 150
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text()]
    assert min(t.get_fontsize() for t in texts) >= 9
    title = fig.get_suptitle()
    assert "NVIDIA H200" in title and "bf16, fp32" in title and "2026-11-20" in title


def test_two_crowded_documents_are_numbered_apart() -> None:
    before, after = _crowded(), _cluster()
    fig = build_figure([before, after], labels=["before", "after"])
    chart = chart_model([before, after], labels=["before", "after"])
    numbers = point_numbers(chart)
    n0 = len(before.records)
    # One sequence across both documents: the first document's points first, no number twice.
    assert sorted(numbers.values()) == list(range(1, len(chart.points) + 1))
    assert {numbers[p.gid] for p in chart.points if p.doc == 0} == set(range(1, n0 + 1))
    marks = artists(fig, "label:point:")
    assert len({t.get_text() for t in marks.values()}) == len(chart.points)
    # Numbers take their document's colour; table markers its shape; each document's rows under its name.
    colours = {g.split(":")[2]: set() for g in marks}
    for g, t in marks.items():
        colours[g.split(":")[2]].add(t.get_color())
    assert all(len(c) == 1 for c in colours.values()) and colours["0"] != colours["1"]
    for p in chart.points:
        assert artists(fig, f"table:marker:{p.gid}")[f"table:marker:{p.gid}"].get_marker() == DOC_MARKERS[p.doc]
    groups = [t.get_text() for g, t in artists(fig, "table:group:").items()]
    total = len(chart.points)
    assert f"before  (points 1\u2013{n0})" in groups and f"after  (points {n0 + 1}\u2013{total})" in groups
    assert legend_texts(fig, "legend:series") == ["before", "after"]


def test_model_only_points_say_so_in_the_table() -> None:
    d = _crowded()
    d.records = [dataclasses.replace(r, time_s=None, achieved_flops_per_s=None) for r in d.records]
    fig = build_figure([d])
    fractions = {t.get_text() for t in artists(fig, "table:fraction:").values()}
    assert fractions == {"model"}
    assert "model only (attainable)" in legend_texts(fig, "legend:key")


def _svg(path: Path) -> ET.Element:
    """A saved SVG, with its comments: matplotlib writes each text drawn as glyphs after a comment holding it."""
    return ET.fromstring(path.read_bytes(), parser=ET.XMLParser(target=ET.TreeBuilder(insert_comments=True)))


def _svg_ids(root: ET.Element) -> list[str]:
    return [e.get("id") or "" for e in root.iter() if e.get("id")]


def _svg_texts(element: ET.Element) -> list[str]:
    return [(c.text or "").strip() for c in element.iter() if c.tag is ET.Comment]


def test_numbered_chart_saves_as_svg_with_its_table(tmp_path: Path) -> None:
    d = _crowded()
    root = _svg(save_chart([d], tmp_path / "crowded.svg"))
    ids = _svg_ids(root)
    # One table row (its label cell) per record: 6 + 8 GEMVs; the added GEMVs' labels only in the table.
    assert sum(i.startswith("table:label:") for i in ids) == len(d.records) == 14
    labels = [t for e in root.iter() if (e.get("id") or "").startswith("table:label:") for t in _svg_texts(e)]
    assert "gemv bf16 m=16" in labels
    heads = [t for e in root.iter() if (e.get("id") or "").startswith("table:head:") for t in _svg_texts(e)]
    assert {"operator", "TFLOP/s", "of roof"} <= set(heads)


def test_the_note_on_records_not_drawn_clears_legends_and_table() -> None:
    for d in (doc(), _crowded()):
        fig = build_figure([change(d, 1, arithmetic_intensity=None)])
        boxes = _boxes(fig, ("note:", "table:"))
        note = boxes.pop("note:skipped")
        renderer = fig.canvas.get_renderer()
        for lg in fig.legends:
            b = lg.get_window_extent(renderer)
            assert disjoint(note, [(b.x0, b.y0), (b.x1, b.y0), (b.x1, b.y1), (b.x0, b.y1)])
        assert all(disjoint(note, box) for box in boxes.values())


def test_figure_is_laptop_sized_with_readable_fonts(h200_fig: Any) -> None:
    from matplotlib.text import Text

    assert tuple(h200_fig.get_size_inches()) == (10.0, 6.5)
    assert h200_fig.dpi == 150
    texts = [t for t in h200_fig.findobj(Text) if t.get_visible() and t.get_text()]
    assert texts and min(t.get_fontsize() for t in texts) >= 9


# ---------------------------------------------------------------- files
@pytest.mark.parametrize(("suffix", "magic"), [
    (".png", (b"\x89PNG\r\n\x1a\n",)),
    (".svg", (b"<?xml", b"<svg")),
    (".pdf", (b"%PDF",)),
    (".PNG", (b"\x89PNG\r\n\x1a\n",)),
])
def test_save_chart_writes_the_format_of_the_suffix(tmp_path: Path, suffix: str, magic: tuple[bytes, ...]) -> None:
    path = save_chart([doc()], tmp_path / f"chart{suffix}")
    assert path == tmp_path / f"chart{suffix}"
    data = path.read_bytes()
    assert len(data) > 1000
    assert data.startswith(magic)


def test_save_chart_two_documents_with_labels(tmp_path: Path) -> None:
    root = _svg(save_chart([doc(), doc(ANALYTIC)], tmp_path / "both.svg", labels=["before", "after"]))
    ids = _svg_ids(root)
    # Both documents' points are in the file (6 timed, 5 analytic), and the series legend names each by its label.
    assert sum(i.startswith("point:0:") for i in ids) == 6 and sum(i.startswith("point:1:") for i in ids) == 5
    (legend,) = [e for e in root.iter() if e.get("id") == "legend:series"]
    assert _svg_texts(legend) == ["results", "before", "after"]


def test_save_chart_refuses_an_unknown_suffix(tmp_path: Path) -> None:
    with pytest.raises(RooflineError) as info:
        save_chart([doc()], tmp_path / "chart.jpg")
    assert "'.jpg'" in str(info.value) and ".png, .svg, .pdf" in str(info.value)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "chart.jpg").exists()


def _collectives_doc() -> Document:
    """Two all_reduce sizes on 2 ranks, busbw = bytes / time (a busbw chart needs no more)."""
    from roofline.core.record import Record

    recs = [Record(op="all_reduce", variant=None, params={"bytes": n, "ranks": 2}, dtype="bf16", flops=0.0,
                   bytes_read=n, bytes_written=n, bytes=2.0 * n, gpu="h200-sxm", device_kind="gpu",
                   peak_flops_per_s=1e15, peak_bytes_per_s=9e11, ridge_point=1e15 / 9e11, bound="memory",
                   roofline_time_s=2 * n / 9e11, time_s=1e-4 * k, time_samples_s=[1e-4 * k] * 5,
                   collective={"ranks": 2, "busbw_bytes_per_s": n / (1e-4 * k)}) for k, n in ((1, 2**20), (2, 2**24))]
    return Document(device={"name": "NVIDIA H200", "spec_id": "h200-sxm"}, records=recs,
                    extra={"collectives": {"world_size": 2, "backend": "nccl", "dtype": "bf16"}})


def _save(kind: str, path: Path, **force: bool) -> Path:
    from roofline.report.chart.comm_draw import save_comm_chart
    from roofline.report.chart.energy_draw import save_energy_chart

    if kind == "roofline":
        return save_chart([doc()], path, **force)
    if kind == "energy":
        return save_energy_chart([doc(DATA / "energy_smoke_h200.json")], path, **force)
    return save_comm_chart([_collectives_doc()], path, **force)


@pytest.mark.parametrize("kind", ["roofline", "energy", "collectives"])
def test_a_chart_never_replaces_a_file_unless_forced(tmp_path: Path, kind: str) -> None:
    """Issue 50: a chart was written over whatever file had appeared at its path while it was drawn (the CLI's
    check before drawing is no guard against a file made meanwhile). Each saver creates its file exclusively, as
    write_document does, and replaces one only with force=True."""
    path = write(tmp_path / "chart.svg", "mine")
    with pytest.raises(RooflineError, match="exists"):
        _save(kind, path)
    assert path.read_text() == "mine"  # kept, byte for byte
    assert _save(kind, path, force=True).read_bytes().startswith(b"<?xml")
    with pytest.raises(UsageError, match="force must be True or False"):
        _save(kind, tmp_path / "other.svg", force="yes")  # type: ignore[arg-type]


def test_save_chart_into_a_missing_folder_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(RooflineError, match="cannot write"):
        save_chart([doc()], tmp_path / "no" / "such" / "chart.png")


# ---------------------------------------------------------------- terminal
def _grid_and_legend(text: str, height: int) -> tuple[list[str], list[str]]:
    lines = text.splitlines()
    return lines[:height], lines[height:]


def _expected_cell(chart: list[str], ai: float, flops: float) -> tuple[float, float]:
    """Where a point belongs, read off the chart's own decade ticks (rows on the y axis, '+' on the x axis)."""
    ticks = [(r, line.split("+")[0].strip()) for r, line in enumerate(chart)
             if re.match(r"^\s*[\d.]+[kMGTPE]? \+", line)]
    scale = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
    (r0, t0), (r1, t1) = ticks[0], ticks[-1]
    y0, y1 = (float(t[:-1]) * scale[t[-1]] if t[-1] in scale else float(t) for t in (t0, t1))
    row = r0 + (math.log10(y0) - math.log10(flops)) / (math.log10(y0) - math.log10(y1)) * (r1 - r0)
    axis = next(line for line in chart if re.match(r"^\s*\+[-+]+$", line))
    labels = chart[chart.index(axis) + 1]
    cols = [c for c, ch in enumerate(axis) if ch == "+"][1:]  # the first '+' is the corner
    values = [float(v[:-1]) * 1e3 if v.endswith("k") else float(v) for v in labels.split()]
    assert len(values) == len(cols)
    c0, c1, x0, x1 = cols[0], cols[-1], values[0], values[-1]
    col = c0 + (math.log10(ai) - math.log10(x0)) / (math.log10(x1) - math.log10(x0)) * (c1 - c0)
    return row, col


@pytest.mark.parametrize(("width", "height"), [(100, 30), (72, 18)])
def test_terminal_chart_places_every_letter_and_lists_it(width: int, height: int) -> None:
    d = doc()
    text = render_terminal([d], width=width, height=height)
    chart, legend = _grid_and_legend(text, height)
    assert all(len(line) <= width for line in chart)
    assert chart[0].startswith("Roofline: NVIDIA H200")
    assert "arithmetic intensity (FLOP/byte)" in chart[-1]
    for k, rec in enumerate(d.records):
        letter = LETTERS[k]
        row, col = _expected_cell(chart, rec.arithmetic_intensity, rec.achieved_flops_per_s)
        near = [chart[r][c] for r in range(round(row) - 1, round(row) + 2) for c in range(round(col) - 2,
                round(col) + 3) if 0 <= r < len(chart) and 0 <= c < len(chart[r])]
        assert letter in near, f"{letter} ({rec.op}) not near row {row:.1f}, col {col:.1f}"
        entry = next(line for line in legend if line.strip().startswith(f"{letter} "))
        if width >= 80:  # narrower, the legend leaves the intensity out (the x axis gives it)
            assert f"AI {rec.arithmetic_intensity:,.0f}" in entry or f"AI {rec.arithmetic_intensity:.3g}" in entry
        assert f"{rec.roofline_fraction:.0%} of roof" in entry
        assert "timed" in entry
    joined = "\n".join(legend)
    assert "BF16 tensor    989 TFLOP/s" in joined and "DRAM              4.8 TB/s" in joined
    assert "L2               11.2 TB/s" in joined and "measured" in joined


def _plot_area(chart: list[str]) -> str:
    """The grid rows of a terminal chart without the y axis and its tick labels (left of the x axis' corner)."""
    corner = next(line for line in chart if re.match(r"^\s*\+[-+]+$", line)).index("+")
    return "\n".join(line[corner + 1:] for line in chart[1:-3])


def test_terminal_chart_draws_ceilings_with_characters() -> None:
    chart, _ = _grid_and_legend(render_terminal([doc()], roof="both"), 30)
    body = _plot_area(chart)
    assert "-----" in body and "//" in body and "::" in body and "+" in body  # '+': ridge points
    datasheet, _ = _grid_and_legend(render_terminal([doc()], roof="datasheet"), 30)
    assert "::" not in _plot_area(datasheet)


def test_terminal_chart_of_a_single_record() -> None:
    d = doc()
    d.records = d.records[:1]
    text = render_terminal([d], width=60, height=14)
    chart, legend = _grid_and_legend(text, 14)
    assert any("A" in line for line in chart[1:-3])
    assert any(line.strip().startswith("A   gemm bf16") for line in legend)


def test_terminal_chart_of_two_documents_names_both() -> None:
    text = render_terminal([doc(), doc(ANALYTIC)], width=110, height=30)
    assert "NVIDIA H200 SXM 141GB" in text and "model only" in text
    letters = [line.strip()[0] for line in text.splitlines() if re.match(r"^  \S   ", line)]
    assert len(set(letters) & set(LETTERS[:11])) == 11  # 6 + 5 points


def test_terminal_chart_too_small_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="at least"):
        render_terminal([doc()], width=20, height=5)


def test_terminal_chart_and_imports_leave_matplotlib_alone() -> None:
    code = ("import sys; import roofline.cli.app; from roofline.report.chart import load_documents; "
            "import roofline.report.chart.placer, roofline.report.chart.table; "
            "from roofline.report.terminal import render_terminal; "
            f"render_terminal(load_documents([{str(H200)!r}])); "
            "assert 'matplotlib' not in sys.modules, 'matplotlib imported'")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# ---------------------------------------------------------------- the label placer, on plain rectangles
def _point(gid: int, ai: float, flops: float, label: str = "op") -> Point:
    return Point(0, gid, label, ai, flops, True, "memory", flops * 2)


def _log_px(xy: tuple[float, float]) -> tuple[float, float]:
    """Data -> pixels: 100 px per decade on both axes (a log-log chart), the origin at (1, 1)."""
    return 100 * math.log10(xy[0]), 100 * math.log10(xy[1])


def _mono(text: str, weight: str) -> tuple[float, float]:
    """A fixed-width font: 6 px per character (7 bold), 10 px tall."""
    return (7.0 if weight == "bold" else 6.0) * len(text), 10.0


def test_rectangles_apart_only_when_a_gap_separates_them() -> None:
    a = rect(0, 0, 10, 10)
    assert clear(a, rect(15, 0, 25, 10), gap=3) and not clear(a, rect(12, 0, 22, 10), gap=3)
    # A diamond whose bounding box overlaps the square's corner, its edge x + y = 24 is 4/sqrt(2) = 2.83 px from
    # the corner (10, 10): apart with a 2.5 px gap, not with 3 (a bounding-box test would say they touch).
    diamond = ((16.0, 8.0), (24.0, 16.0), (16.0, 24.0), (8.0, 16.0))
    assert clear(a, diamond, gap=2.5) and not clear(a, diamond, gap=3.0)
    # A segment counts too: one crossing the square is never clear of it.
    assert not clear(a, ((-5.0, 5.0), (15.0, 5.0)), gap=0.0) and clear(a, ((-5.0, 15.0), (15.0, 15.0)), gap=3.0)


def test_a_text_box_is_anchored_by_its_alignment_and_rotates_about_the_anchor() -> None:
    assert quad((100, 50), 20, 10, "left", "bottom") == rect(100, 50, 120, 60)
    assert quad((100, 50), 20, 10, "center", "top") == rect(90, 40, 110, 50)
    turned = quad((100, 50), 20, 10, "left", "bottom", 90.0)  # a quarter turn: the box stands on the anchor
    assert [tuple(round(v, 9) for v in c) for c in turned] == [(100, 50), (100, 70), (90, 70), (90, 50)]


def test_a_label_takes_the_first_free_spot_around_its_marker() -> None:
    p = _point(0, 100.0, 1000.0)  # at pixel (200, 300)
    cands = point_candidates(p, _log_px, 20, 10, px_per_pt=1.0)
    # The near ring first, right of the marker: anchored 7 pt right, centred on the marker's height.
    assert cands[0].quad == rect(207, 295, 227, 305) and cands[0].leader is None
    assert cands[1].quad == rect(173, 295, 193, 305)  # then left
    area = (0.0, 0.0, 400.0, 400.0)
    assert choose(Scene(area, [], []), cands, set()) is cands[0]
    # Something right of the marker: the label goes left; a line there too: the first spot clear of both.
    assert choose(Scene(area, [rect(205, 290, 240, 310)], []), cands, set()) is cands[1]
    # With a line through the left and up-left spots as well (right, up-right, down-right, up and down touch
    # the box): down-left, the eighth direction.
    blocked = Scene(area, [rect(205, 290, 240, 310)], [("roof:x", ((150.0, 280.0), (190.0, 320.0)))])
    best = choose(blocked, cands, set())
    assert best is cands[7] and (best.ha, best.va) == ("right", "top")
    # Its own line (a point's headroom) does not push it away.
    assert choose(blocked, cands[1:], {"roof:x"}) is cands[1]
    # Spots outside the axes are not taken while any inside is free.
    assert choose(Scene((0.0, 0.0, 226.0, 400.0), [], []), cands, set()) is cands[1]


def test_with_no_free_spot_the_least_overlapping_is_taken() -> None:
    c1 = Candidate(rect(0, 0, 10, 10), (1.0, 1.0), (0.0, 0.0), "left", "bottom")
    c2 = Candidate(rect(20, 0, 30, 10), (1.0, 1.0), (0.0, 0.0), "left", "bottom")
    scene = Scene((0.0, 0.0, 100.0, 100.0), [rect(0, 0, 10, 10), rect(27, 0, 40, 10)], [])
    assert choose(scene, [c1, c2], set()) is c2  # 3 x 10 px of overlap against 10 x 10


def _placed_chart(points: list[Point]) -> Chart:
    return Chart("t", ("doc",), ("datasheet",), (), tuple(points), (), (1.0, 1e4), (1.0, 1e4))


def test_placed_labels_keep_clear_of_markers_and_each_other() -> None:
    # Eight points two by two 10 px apart: their labels compete for the same room.
    points = [_point(k, 10 ** (1 + 0.4 * (k // 2)), 10 ** (2 + 0.1 * (k % 2)), f"operator {k}") for k in range(8)]
    markers = [rect(x - 5, y - 5, x + 5, y + 5) for x, y in (_log_px((p.ai, p.flops_per_s)) for p in points)]
    scene = Scene((0.0, 0.0, 400.0, 400.0), list(markers), [], list(markers))
    placed = place_labels(scene, _placed_chart(points), {}, _log_px, _mono, px_per_pt=1.0)
    assert [p.gid for p in placed] == [f"label:point:{p.gid}" for p in
                                       sorted(points, key=lambda p: (-p.flops_per_s, p.ai))]
    assert {p.text for p in placed} == {p.label for p in points} and {p.kind for p in placed} == {"name"}
    boxes = [p.spot.quad for p in placed]
    for k, box in enumerate(boxes):
        assert all(clear(box, m) for m in markers)
        assert all(clear(box, other) for other in boxes[k + 1:])
        assert all(0 <= x <= 400 and 0 <= y <= 400 for x, y in box)
    assert scene.shapes[len(markers):] == boxes  # each placed label became an obstacle for the next


def test_a_tight_cluster_gets_its_numbers_as_a_callout_with_uncrossed_leaders() -> None:
    # Five touching markers (4 px apart, a marker is 7.5 pt) and a lone one: numbers 1..6 by intensity.
    points = [_point(k, 10 ** (2 + 0.04 * k), 10 ** (2 + 0.02 * (k % 2))) for k in range(5)]
    points.append(_point(5, 1000.0, 1000.0))
    chart = _placed_chart(points)
    numbers = {p.gid: k + 1 for k, p in enumerate(points)}
    markers = [rect(x - 5, y - 5, x + 5, y + 5) for x, y in (_log_px((p.ai, p.flops_per_s)) for p in points)]
    scene = Scene((0.0, 0.0, 400.0, 400.0), list(markers), [], list(markers))
    placed = place_labels(scene, chart, numbers, _log_px, _mono, px_per_pt=1.0)
    callout = [p for p in placed if p.leader_under]
    assert sorted(p.text for p in callout) == ["1", "2", "3", "4", "5"]
    assert [p.text for p in placed if not p.leader_under] == ["6"]
    assert all(p.kind == "number" and p.weight == "bold" for p in placed)
    leaders = [(p.spot.centre, p.spot.leader[1]) for p in callout if p.spot.leader]
    assert len(leaders) == 5
    assert all(clear(a, b, 0.0) for k, a in enumerate(leaders) for b in leaders[k + 1:])


@pytest.mark.parametrize(("wanted", "top", "expected"), [
    ([50.0, 48.0, 47.0], 100.0, [50.0, 38.0, 26.0]),  # pushed down to 12 px apart (10 px tall + 2 px clearance)
    ([99.0], 100.0, [94.0]),  # not above the top: its middle half a height (6 px) under it
    ([10.0, 9.0, 8.0], 100.0, [30.0, 18.0, 6.0]),  # ran off the bottom: back up from it
])
def test_margin_labels_stack_apart_inside_the_axes(wanted: list[float], top: float, expected: list[float]) -> None:
    assert stack(wanted, [10.0] * len(wanted), 0.0, top) == pytest.approx(expected)


# ---------------------------------------------------------------- the table's layout, without a figure
def _width_in(text: str, weight: str) -> float:
    return (0.08 if weight == "bold" else 0.07) * len(text)


def test_table_blocks_repeat_a_documents_heading_and_never_end_on_one() -> None:
    rows = [Entry("row", 0 if k < 5 else 1, _point(k, 1.0, 1.0)) for k in range(8)]
    head_a, head_b = Entry("group", 0, name="A", text="A (points 1-5)"), Entry("group", 1, name="B", text="B")
    blocks = fill([head_a, *rows[:5], head_b, *rows[5:]], per=4)
    assert [[e.text if e.kind == "group" else e.point.record for e in b] for b in blocks] == [  # type: ignore[union-attr]
        ["A (points 1-5)", 0, 1, 2], ["A, continued", 3, 4], ["B", 5, 6, 7]]


def test_table_plan_lists_every_point_once_in_number_order() -> None:
    chart = chart_model([_crowded()])
    numbers = point_numbers(chart)
    plan = plan_table(chart, numbers, 10.0, _width_in)
    rows = [e.point.gid for b in plan.blocks for e in b if e.point is not None]
    assert rows == sorted(numbers, key=numbers.get)
    assert 1 <= len(plan.blocks) <= 3 and plan.fig_w_in <= NUMBERED_MAX_WIDTH_IN
    widest = plan.fig_w_in - 2 * EDGE_IN
    assert len(plan.blocks) * plan.block_w_in <= widest  # the blocks fit side by side
    cells = plan.cells[rows[-1]]
    assert cells["number"] == str(len(rows)) and cells["fraction"].endswith("%")


def test_table_labels_too_long_for_the_figure_are_shortened() -> None:
    chart = chart_model([_crowded()])
    long = chart.points[0].gid
    chart = dataclasses.replace(chart, points=tuple(dataclasses.replace(p, label="x" * 300) if p.gid == long else p
                                                    for p in chart.points))
    plan = plan_table(chart, point_numbers(chart), 10.0, _width_in)
    label = plan.cells[long]["label"]
    assert label.endswith("\u2026") and len(label) < 300
    assert plan.block_w_in == pytest.approx(10.0 - 2 * EDGE_IN)  # the one block spans the figure


def test_the_note_on_records_not_drawn_stays_inside_the_figure() -> None:
    """tests/data/vit_profile.json (ViT-B/16 on the H200): 39 records not drawn (2,753 characters named one by one).
    The note was cut at 160 characters and ran off a 10 in figure's right edge: it is grouped by reason, wraps,
    and every line ends inside the figure."""
    from roofline.core.document import read_document

    fig = build_figure([read_document(DATA / "vit_profile.json")])
    (note,) = artists(fig, "note:skipped").values()
    renderer = fig.canvas.get_renderer()
    box = note.get_window_extent(renderer)
    assert note.get_text().startswith("not drawn (39): ") and 1 < note.get_text().count("\n") + 1 <= 3
    assert box.x0 >= 0 and box.x1 <= fig.get_figwidth() * fig.dpi


def test_an_imported_reports_chart_numbers_its_longest_kernels_only(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """tests/data/ncu_forward.csv (110 kernels, 73 drawn): every point was numbered, 1 to 73. Its points are
    weighed by their part of the time, as a profile's: the 8 longest numbered, the rest counted in a note; the
    37 kernels without FLOPs said once per reason with their count."""
    from helpers import run

    from roofline.core.document import read_document
    from roofline.report.chart.model import PROFILE_LABELLED, point_numbers, skipped_text, unlabelled_note

    out = tmp_path / "ncu.json"
    assert run(capsys, "import-ncu", str(DATA / "ncu_forward.csv"), "--gpu", "h200", "-o", str(out))[0] == 0
    chart = chart_model([read_document(out)])
    numbers = point_numbers(chart)
    assert len(chart.points) == 73 and len(numbers) == PROFILE_LABELLED == 8
    note = unlabelled_note(chart, numbers)
    assert note is not None and note.startswith("65 smaller ops not numbered")
    assert skipped_text(chart.skipped).startswith("no finite arithmetic intensity (37: ")  # 20 + 17 kernels


def test_a_sweeps_leader_lines_do_not_cross(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`analyze gemm --m 256:8192:x2 --gpu h200 --no-time`: four points on the roof, labelled with leaders. The
    leader was drawn to the label box's centre while the placer kept the line to its anchor corner clear, and
    m=8192's leader crossed m=4096's. Every drawn leader (from the text's relpos corner to its point) crosses
    no other."""
    from helpers import run

    from roofline.core.document import read_document

    out = tmp_path / "sweep.json"
    assert run(capsys, "analyze", "gemm", "--m", "256:8192:x2", "--gpu", "h200", "--no-time", "-o", str(out))[0] == 0
    fig = build_figure([read_document(out)])
    renderer = fig.canvas.get_renderer()
    (ax,) = fig.axes
    segments = []
    for ann in artists(fig, "label:point:").values():
        if getattr(ann, "arrow_patch", None) is None:
            continue
        box = ann.get_window_extent(renderer)
        rx, ry = ann.arrowprops.get("relpos", (0.5, 0.5))
        segments.append(((box.x0 + rx * box.width, box.y0 + ry * box.height), tuple(ax.transData.transform(ann.xy))))
    assert len(segments) >= 3  # the points on the roof sit too close for their labels without leaders

    def cross(a: Any, b: Any) -> bool:
        def side(p: Any, q: Any, r: Any) -> float:
            return (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0])
        return (side(*a, b[0]) * side(*a, b[1]) < 0) and (side(*b, a[0]) * side(*b, a[1]) < 0)

    assert not [(i, j) for i in range(len(segments)) for j in range(i + 1, len(segments))
                if cross(segments[i], segments[j])]


def test_a_cache_placed_records_headroom_and_the_cache_roofs_end_on_the_compute_roof() -> None:
    """Issue 30: with cache roofs on the CPU the compute roof started at the DRAM ridge (40 / 11 = 3.64
    FLOP/byte), so a gemv placed on the L3 roof (AI 0.499, attainable min(40e9, 0.499 x 90e9) = 40 GFLOP/s)
    had its headroom end in mid-air, as did the L2 and L3 lines. The compute roof now starts where the fastest
    memory roof meets it (40 / 90 = 0.444), the DRAM ridge still marked; the same in the terminal and HTML
    charts. Ceilings: tests/test_cpu_pipes.py's rounded CI-machine figures."""
    from roofline.core.dtypes import get_dtype
    from roofline.core.model import Ceilings
    from roofline.core.record import analytic_record, ceilings_dict, with_time
    from roofline.ops import make
    from roofline.report.html import _chart_data

    c = Ceilings(device_id="cpu", device_name="test CPU", kind="cpu", source="measured",
                 compute={"cpu_fp32": 40e9}, memory={"dram": 11e9, "l2": 45e9, "l3": 90e9},
                 cache_bytes={"l2": 512 * 2**10, "l3": 32 * 2**20})
    gemv = analytic_record(make("gemv", m=1, n=1024, k=1024), get_dtype("fp32"), c)
    assert gemv.memory_level == "l3" and gemv.attainable_flops_per_s == pytest.approx(40e9)
    d = Document(device={"name": "test CPU", "kind": "cpu", "ceilings": ceilings_dict(c)},
                 records=[with_time(gemv, gemv.roofline_time_s / 0.3)])  # at 30% of its roof
    fig = build_figure([d])
    roof = artists(fig, "roof:0:measured:compute:cpu_fp32")["roof:0:measured:compute:cpu_fp32"]
    start = roof.get_xdata()[0]
    assert start == pytest.approx(40e9 / 90e9)  # where the L3 roof meets it, left of the gemv
    assert start < gemv.arithmetic_intensity < 40 / 11
    assert artists(fig, "ridge:0:")["ridge:0:measured:compute:cpu_fp32"].get_xdata()[0] == pytest.approx(40 / 11)
    head = artists(fig, "headroom:0:0")["headroom:0:0"]
    assert head.get_ydata()[1] == pytest.approx(roof.get_ydata()[0])  # ends on the drawn compute line
    for level, bw in (("l2", 45e9), ("l3", 90e9)):  # each cache line ends on the compute line, inside it
        line = artists(fig, f"roof:0:measured:memory:{level}")[f"roof:0:measured:memory:{level}"]
        assert line.get_xdata()[-1] == pytest.approx(40e9 / bw) and line.get_xdata()[-1] >= start
    html_roof = next(r for r in _chart_data(chart_model([d]), {})["roofs"] if r["kind"] == "compute")
    assert html_roof["xstart"] == pytest.approx(40e9 / 90e9, rel=1e-3)  # report.js starts the line there
    # the terminal: 0.444 to 3.64 FLOP/byte is 0.91 decade, ~17 of its ~19 columns a decade at 80 columns;
    # the measured roof's ':' runs at least 10 of them left of the ridge '+' (before: the DRAM diagonal only)
    row = next(line for line in render_terminal([d], width=80, height=24).splitlines() if "+:::" in line)
    assert row[row.index("+") - 10:row.index("+")] == ":" * 10


def test_the_commands_force_replaces_a_chart_and_without_it_keeps_it(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """`plot -o X --force` and `analyze --plot X --force` over an existing chart: replaced (the savers' exclusive
    creation without the command's --force passed on refused it: "exists: not overwriting it ... pass --force");
    without --force the file is kept, byte for byte."""
    from helpers import ROOT, run

    chart = write(tmp_path / "chart.svg", "mine")
    code, _out, err = run(capsys, "plot", str(ROOT / "tests" / "data" / "results_h200.json"), "-o", str(chart))
    assert code == 1 and "exists" in err and chart.read_text() == "mine"
    code, _out, err = run(capsys, "plot", str(ROOT / "tests" / "data" / "results_h200.json"), "-o", str(chart),
                          "--force")
    assert code == 0, err
    assert chart.read_bytes().startswith(b"<?xml")
    chart.write_text("mine")
    code, _out, err = run(capsys, "analyze", "gemm", "--m", "256", "--gpu", "h100", "--no-time", "--plot",
                          str(chart), "--force")
    assert code == 0, err
    assert chart.read_bytes().startswith(b"<?xml")
