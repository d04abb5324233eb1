"""Roofline charts: the figure's data (ceilings, points, labels, legends), files in three formats, the
terminal chart, and one-line errors for files that cannot be drawn.

tests/data/results_h200.json is hand-made: six timed records on the H200 SXM spec (`roofline specs show
h200`: BF16 tensor dense 989.4 TFLOP/s, BF16 CUDA-core 133.8, FP32 66.9, HBM 4800 GB/s), times chosen by
hand, and a measured_ceilings block (DRAM 4.31 TB/s, L2 11.2, SMEM 30.5, BF16 tensor 765 TFLOP/s).
tests/data/results_analytic.json holds five analytic-only records on the same spec.

Up to NUMBERED_ABOVE points are labelled by name; a chart of more numbers them and lists them in a table
under it (`_crowded()` and `_cluster()` build such documents from the operator models).
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from roofline.core.errors import RooflineError, UsageError
from roofline.report.chart import (
    BOUND_COLOURS,
    DOC_MARKERS,
    FIGSIZE_IN,
    NUMBERED_ABOVE,
    NUMBERED_MAX_WIDTH_IN,
    OTHER_BOUND_COLOUR,
    build_figure,
    chart_model,
    eng,
    intensity_text,
    load_documents,
    point_numbers,
    save_chart,
)
from roofline.report.terminal import LETTERS, render_terminal

DATA = Path(__file__).resolve().parent / "data"
H200 = DATA / "results_h200.json"
ANALYTIC = DATA / "results_analytic.json"
ROOT = Path(__file__).resolve().parent.parent

# The H200 SXM datasheet peaks the documents carry (specs/h200*.toml), in FLOP/s and bytes/s.
BF16_TENSOR = 989.4e12
BF16_PLAIN = 133.8e12
FP32 = 66.9e12
HBM = 4800e9


# ---------------------------------------------------------------- helpers
def doc(path: Path = H200) -> dict[str, Any]:
    return copy.deepcopy(load_documents([path])[0])


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


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.fixture(scope="module")
def h200_fig() -> Any:
    return build_figure([doc()])


# ---------------------------------------------------------------- reading and errors
def test_load_documents_reads_both_data_files() -> None:
    docs = load_documents([H200, ANALYTIC])
    assert [len(d["records"]) for d in docs] == [6, 5]
    assert docs[0]["device"]["measured_ceilings"]["memory_bytes_per_s"]["l2"] == 11.2e12


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
    p = write(tmp_path, "bad.json", content)
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
    d["records"] = []
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


# ---------------------------------------------------------------- units
@pytest.mark.parametrize(("value", "unit", "text"), [
    (989.4e12, "FLOP/s", "989 TFLOP/s"),
    (66.9e12, "FLOP/s", "66.9 TFLOP/s"),
    (1978.9e12, "FLOP/s", "1.98 PFLOP/s"),
    (4.8e12, "B/s", "4.8 TB/s"),
    (900e9, "B/s", "900 GB/s"),
])
def test_engineering_units(value: float, unit: str, text: str) -> None:
    assert eng(value, unit) == text


# ---------------------------------------------------------------- ceilings
def test_compute_ceilings_are_the_documents_peaks(h200_fig: Any) -> None:
    d = doc()
    peaks = d["device"]["ceilings"]["compute_flops_per_s"]
    measured = d["device"]["measured_ceilings"]["compute_flops_per_s"]
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
    assert all(r["dtype"] != "fp32" for r in d["records"])
    fig = build_figure([d])
    line = artists(fig, "roof:0:datasheet:compute:fp32_dense_tflops")["roof:0:datasheet:compute:fp32_dense_tflops"]
    assert set(line.get_ydata()) == {d["device"]["ceilings"]["compute_flops_per_s"]["fp32_dense_tflops"]}
    assert line.get_ydata()[0] == pytest.approx(FP32)
    labels = {t.get_text() for t in artists(fig, "label:roof:").values()}
    assert "FP32 CUDA cores 66.9 TFLOP/s" in labels


def test_memory_ceilings_are_diagonals_of_the_documents_bandwidths(h200_fig: Any) -> None:
    d = doc()
    memory = d["device"]["measured_ceilings"]["memory_bytes_per_s"]
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
    for gid, line in artists(h200_fig, "roof:").items():
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


def _cpu_doc() -> dict[str, Any]:
    """A CPU run: its only roofline is measured (matmul FLOP/s and copy bandwidth)."""
    d = doc()
    rec = d["records"][1]  # gemm fp32 2048: 17179869184 FLOP, 50331648 bytes
    rec.update(gpu="cpu", roof_source="measured", compute_pipe="cpu_fp32", compute_pipe_label="CPU FP32 matmul",
               peak_flops_per_s=1.2e12, peak_bytes_per_s=40e9, attainable_flops_per_s=1.2e12,
               time_s=0.0286, achieved_flops_per_s=17179869184 / 0.0286)
    d["records"] = [rec]
    d["device"] = {"kind": "cpu", "name": "AMD EPYC 9654", "ceilings": {
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
    d["device"] = {"name": "hand-made"}
    roofs = artists(build_figure([d]), "roof:0:")
    assert set(roofs["roof:0:datasheet:compute:bf16_tensor_dense_tflops"].get_ydata()) == {BF16_TENSOR}
    dram = roofs["roof:0:datasheet:memory:dram"]
    assert dram.get_ydata()[0] / dram.get_xdata()[0] == pytest.approx(HBM)


# ---------------------------------------------------------------- points
def test_timed_points_sit_at_achieved_filled(h200_fig: Any) -> None:
    d = doc()
    points = artists(h200_fig, "point:0:")
    assert len(points) == len(d["records"])
    for i, rec in enumerate(d["records"]):
        p = points[f"point:0:{i}"]
        assert (p.get_xdata()[0], p.get_ydata()[0]) == (rec["arithmetic_intensity"], rec["achieved_flops_per_s"])
        assert p.get_markerfacecolor() == BOUND_COLOURS[rec["bound"]]


def test_analytic_points_sit_at_attainable_hollow() -> None:
    d = doc(ANALYTIC)
    fig = build_figure([d])
    for i, rec in enumerate(d["records"]):
        p = artists(fig, f"point:0:{i}")[f"point:0:{i}"]
        assert (p.get_xdata()[0], p.get_ydata()[0]) == (rec["arithmetic_intensity"], rec["attainable_flops_per_s"])
        assert p.get_markerfacecolor() == "white"
        assert p.get_markeredgecolor() == BOUND_COLOURS[rec["bound"]]
    assert "model only (attainable)" in legend_texts(fig, "legend:key")


def test_headroom_runs_from_the_point_up_to_its_roof(h200_fig: Any) -> None:
    d = doc()
    gemm = d["records"][0]  # gemm bf16: 712 TFLOP/s achieved under the 989.4 roof
    line = artists(h200_fig, "headroom:0:0")["headroom:0:0"]
    assert list(line.get_xdata()) == [gemm["arithmetic_intensity"]] * 2
    assert list(line.get_ydata()) == [gemm["achieved_flops_per_s"], BF16_TENSOR]
    gemv = d["records"][3]  # memory-bound: up to AI x 4.8e12
    line = artists(h200_fig, "headroom:0:3")["headroom:0:3"]
    assert line.get_ydata()[1] == pytest.approx(gemv["arithmetic_intensity"] * HBM)


def test_unknown_bound_gets_a_neutral_colour() -> None:
    d = doc()
    d["records"][3]["bound"] = "latency"
    fig = build_figure([d])
    assert artists(fig, "point:0:3")["point:0:3"].get_markerfacecolor() == OTHER_BOUND_COLOUR
    assert "latency-bound" in legend_texts(fig, "legend:key")


def test_a_record_that_cannot_sit_on_log_axes_is_left_out_and_said() -> None:
    d = doc()
    d["records"][1]["arithmetic_intensity"] = None  # what an infinite intensity becomes in JSON
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
    twin = copy.deepcopy(d["records"][0])
    twin["params"]["k"] = 8192
    d["records"].append(twin)
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
    after["created"] = "2026-11-27T10:00:00+00:00"
    fig = build_figure([before, after])
    assert legend_texts(fig, "legend:series") == ["NVIDIA H200 (2026-11-20)", "NVIDIA H200 (2026-11-27)"]
    assert not artists(fig, "roof:1:")  # identical ceilings: the first document's lines serve both


def _crowded() -> dict[str, Any]:
    """Eight GEMVs of close intensities beside the six records: labels that must make room."""
    from roofline.ceilings.specs import gpu_ceilings, resolve
    from roofline.core.dtypes import get_dtype
    from roofline.core.record import add_time, analytic_record
    from roofline.ops import make

    d = doc()
    ceilings = gpu_ceilings(resolve("h200"))
    for m in (1, 2, 3, 4, 6, 8, 12, 16):
        rec = analytic_record(make("gemv", m=m), get_dtype("bf16"), ceilings)
        d["records"].append(add_time(rec, rec["roofline_time_s"] / 0.8))
    return d


@pytest.mark.parametrize("case", ["one", "two", "crowded"])
def test_labels_do_not_overlap_and_are_not_clipped(case: str) -> None:
    docs = {"one": [doc()], "two": [doc(), doc(ANALYTIC)], "crowded": [_crowded()]}[case]
    fig = build_figure(docs)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    labels = artists(fig, "label:")
    assert len(labels) >= sum(len(d["records"]) for d in docs)
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
def _cluster(count: int = 10) -> dict[str, Any]:
    """The six records and `count` BF16 GEMMs of nearly one shape and speed: a tight clump of markers."""
    from roofline.ceilings.specs import gpu_ceilings, resolve
    from roofline.core.dtypes import get_dtype
    from roofline.core.record import add_time, analytic_record
    from roofline.ops import make

    d = doc()
    ceilings = gpu_ceilings(resolve("h200"))
    for i in range(count):
        rec = analytic_record(make("gemm", m=4096, n=4096, k=4096 + 256 * i), get_dtype("bf16"), ceilings)
        d["records"].append(add_time(rec, rec["roofline_time_s"] / (0.7 + 0.02 * (i % 5))))
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
    d["records"] = d["records"][:NUMBERED_ABOVE]
    labels = {t.get_text() for t in artists(build_figure([d]), "label:point:").values()}
    assert labels == {p.label for p in chart_model([d]).points}
    d = _crowded()
    d["records"] = d["records"][:NUMBERED_ABOVE + 1]
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
        rec = d["records"][p.record]
        assert table[f"table:number:{p.gid}"].get_text() == str(numbers[p.gid])
        assert table[f"table:label:{p.gid}"].get_text() == p.label
        assert table[f"table:ai:{p.gid}"].get_text() == intensity_text(rec["arithmetic_intensity"])
        tflops = float(table[f"table:flops:{p.gid}"].get_text().replace(",", ""))
        assert tflops == pytest.approx(rec["achieved_flops_per_s"] / 1e12, rel=5e-3)
        assert table[f"table:fraction:{p.gid}"].get_text() == f"{rec['roofline_fraction']:.0%}"
        marker = table[f"table:marker:{p.gid}"]
        assert marker.get_marker() == artists(fig, f"point:{p.gid}")[f"point:{p.gid}"].get_marker()
        assert marker.get_markerfacecolor() == BOUND_COLOURS[rec["bound"]]
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
    # Numbers, roof labels and table cells: no two overlap.
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
    n0 = len(before["records"])
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
    for rec in d["records"]:
        rec.pop("time_s", None)
        rec.pop("achieved_flops_per_s", None)
    fig = build_figure([d])
    fractions = {t.get_text() for t in artists(fig, "table:fraction:").values()}
    assert fractions == {"model"}
    assert "model only (attainable)" in legend_texts(fig, "legend:key")


def test_numbered_chart_saves_as_svg_with_its_table(tmp_path: Path) -> None:
    path = save_chart([_crowded()], tmp_path / "crowded.svg")
    svg = path.read_text()
    assert "gemv bf16 m=16" in svg and "TFLOP/s" in svg and "of roof" in svg


def test_the_note_on_records_not_drawn_clears_legends_and_table() -> None:
    for d in (doc(), _crowded()):
        d["records"][1]["arithmetic_intensity"] = None
        fig = build_figure([d])
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
    path = save_chart([doc(), doc(ANALYTIC)], tmp_path / "both.svg", labels=["timed", "model"])
    svg = path.read_text()
    assert "timed" in svg and "model" in svg  # text stays text in SVG


def test_save_chart_refuses_an_unknown_suffix(tmp_path: Path) -> None:
    with pytest.raises(RooflineError) as info:
        save_chart([doc()], tmp_path / "chart.jpg")
    assert "'.jpg'" in str(info.value) and ".png, .svg, .pdf" in str(info.value)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "chart.jpg").exists()


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
    for k, rec in enumerate(d["records"]):
        letter = LETTERS[k]
        row, col = _expected_cell(chart, rec["arithmetic_intensity"], rec["achieved_flops_per_s"])
        near = [chart[r][c] for r in range(round(row) - 1, round(row) + 2) for c in range(round(col) - 2,
                round(col) + 3) if 0 <= r < len(chart) and 0 <= c < len(chart[r])]
        assert letter in near, f"{letter} ({rec['op']}) not near row {row:.1f}, col {col:.1f}"
        entry = next(line for line in legend if line.strip().startswith(f"{letter} "))
        assert f"AI {rec['arithmetic_intensity']:,.0f}" in entry or f"AI {rec['arithmetic_intensity']:.3g}" in entry
        assert f"{rec['roofline_fraction']:.0%} of roof" in entry
        assert "timed" in entry
    joined = "\n".join(legend)
    assert "BF16 tensor    989 TFLOP/s" in joined and "DRAM              4.8 TB/s" in joined
    assert "L2               11.2 TB/s" in joined and "measured" in joined


def test_terminal_chart_draws_ceilings_with_characters() -> None:
    chart, _ = _grid_and_legend(render_terminal([doc()], roof="both"), 30)
    body = "\n".join(chart[1:-3])
    assert "-----" in body and "//" in body and "::" in body and "+" in body
    datasheet, _ = _grid_and_legend(render_terminal([doc()], roof="datasheet"), 30)
    assert "::" not in "\n".join(datasheet[1:-3])


def test_terminal_chart_of_a_single_record() -> None:
    d = doc()
    d["records"] = d["records"][:1]
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
            "from roofline.report.terminal import render_terminal; "
            f"render_terminal(load_documents([{str(H200)!r}])); "
            "assert 'matplotlib' not in sys.modules, 'matplotlib imported'")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
