"""The HTML report (`roofline report`, `roofline check --html`): one self-contained page whose numbers are the
chart model's, checked as text here and in a real browser (headless Chromium driven by Selenium) below.

Data: tests/data/results_h200.json (6 timed records on an H200, datasheet and measured ceilings),
tests/data/results_analytic.json (5 analytic records), and the H200 ViT profile tests/data/vit_profile.json
(151 records with a what-if and module roll-up). Browser tests skip, saying why, where no Chromium, ChromeDriver
or selenium is installed (.ci/run installs them). Set ROOFLINE_SCREENSHOTS=DIR to keep the screenshots.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers import DATA, ROOT, run, write

from roofline.ci.judge import judge
from roofline.cli.app import app
from roofline.cli.report import report_cmd
from roofline.core.document import Document, dumps, read_document
from roofline.core.record import Record
from roofline.report.chart.model import chart_model, point_numbers
from roofline.report.html import ROLLUP_ROWS, TIP_NAMES, report_html

H200 = DATA / "results_h200.json"
ANALYTIC = DATA / "results_analytic.json"
VIT = DATA / "vit_profile.json"
# Issue 20: "a few hundred KB at most for a 300-op profile".
MAX_300_OP_BYTES = 400_000

if not any(c.name == "report" for c in app.registered_commands):  # until the app registers it
    app.command("report")(report_cmd)


def data_block(page: str) -> dict[str, Any]:
    m = re.search(r'<script type="application/json" id="roofline-data">(.*?)</script>', page, re.S)
    assert m is not None
    return json.loads(m.group(1))  # type: ignore[no-any-return]


def cell(row: list[Any], cols: list[dict[str, Any]], name: str) -> Any:
    """A records-table cell by column name (a row starts with its record's index)."""
    return row[1 + [c["h"] for c in cols].index(name)]


# ---------------------------------------------------------------- the page as text
def test_the_page_fetches_nothing() -> None:
    page = report_html([read_document(H200)])
    assert "<link" not in page and not re.search(r"<script[^>]+src=", page)
    # The only address in the page is the SVG namespace name, which a browser never fetches.
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) == {"http://www.w3.org/2000/svg"}
    assert "<style>" in page and "roofline-data" in page and "function sortable" in page


def test_roofs_points_and_numbers_are_the_chart_models() -> None:
    docs = [read_document(H200), read_document(ANALYTIC)]
    chart = chart_model(docs, roof="both")
    data = data_block(report_html(docs))
    roofs = {(r["d"], r["src"], r["kind"], r["key"]): r["v"] for r in data["chart"]["roofs"]}
    assert roofs == pytest.approx({(r.doc, r.source, r.kind, r.key): r.value for r in chart.roofs}, rel=1e-5)
    assert ("0", "measured") in {(str(d), s) for d, s, _, _ in roofs}  # results_h200 has a calibration
    offsets = [0, len(docs[0].records)]
    numbers = point_numbers(chart)
    for p in chart.points:
        rec = data["records"][offsets[p.doc] + p.record]
        assert rec["p"][:3] == pytest.approx([p.ai, p.flops_per_s, p.roof_flops_per_s], rel=1e-5)
        assert rec["n"] == numbers[p.gid] and rec["label"] == p.label
    assert len(data["records"]) == 11 and len(data["table"]["rows"]) == 11


def test_a_table_row_holds_time_share_headroom_and_bound() -> None:
    doc = read_document(H200)
    table = data_block(report_html([doc]))["table"]
    row = table["rows"][0]  # gemm bf16: time 193 µs, roofline time 138.9 µs (the file)
    total = sum(r.time_s for r in doc.records if r.time_s)  # 193 + 334.9 + 506.5 + 34.78 + 25.48 + 19.68 µs
    assert cell(row, table["cols"], "time") == [0.000193, "193 µs"]
    assert cell(row, table["cols"], "share")[0] == pytest.approx(0.000193 / total, rel=1e-5)
    assert cell(row, table["cols"], "headroom")[0] == pytest.approx(0.000193 - 0.00013891141446533252, rel=1e-5)
    assert cell(row, table["cols"], "bound") == "compute"


def test_hover_details_name_shape_dtype_time_fraction_and_bound() -> None:
    data = data_block(report_html([read_document(H200)]))
    assert data["tipNames"] == list(TIP_NAMES)
    tip = dict(zip(TIP_NAMES, data["records"][0]["tip"], strict=True))
    assert tip["shape"].startswith("m=") and tip["dtype"].startswith("bf16 on BF16 tensor")
    assert tip["time"] == "193 µs" and tip["bound"] == "compute-bound"
    assert tip["% of roof"] == "72.0%"  # 138.9 / 193 µs


def test_records_with_counters_show_them_in_the_table_and_the_hover(tmp_path: Path) -> None:
    # a run --counters of kernels-h200 on the H200 (docs/results/counters/ours_call3.json.gz):
    # the page showed no counter at all (a new user's find); now a "bytes × min" column and a hover line
    import gzip

    path = tmp_path / "counters.json"
    path.write_bytes(gzip.decompress((ROOT / "docs" / "results" / "counters" /
                                      "ours_call3.json.gz").read_bytes()))
    doc = read_document(path)
    data = data_block(report_html([doc]))
    cols, rows = data["table"]["cols"], data["table"]["rows"]
    relu = next(r for r in rows if cell(r, cols, "operator") == "relu bf16")
    x = cell(relu, cols, "bytes × min")
    assert x[1] == "1.00" and x[0] == pytest.approx(1.0, abs=0.005)  # DRAM reads + stored / minimum
    assert "DRAM reads + stored" in next(c["tip"] for c in cols if c["h"] == "bytes × min")
    tip = dict(zip(TIP_NAMES, data["records"][5]["tip"], strict=True))  # relu, the sixth record
    assert tip["counters"] is not None and "ncu stored bytes: 536,870,912" in tip["counters"]
    # a document without counters has neither
    plain = data_block(report_html([read_document(H200)]))
    assert "bytes × min" not in [c["h"] for c in plain["table"]["cols"]]


def test_record_texts_cannot_break_out_of_the_page(tmp_path: Path) -> None:
    doc = read_document(H200)
    evil = dataclasses.replace(doc.records[0], op="</script><img src=x onerror=alert(1)>")
    page = report_html([Document(doc.device, [evil, *doc.records[1:]])])
    assert page.count("</script>") == 2  # the data block's and the script's own
    assert "<img" not in page


def test_a_profile_page_has_its_summary_what_if_and_roll_ups() -> None:
    doc = read_document(VIT)
    page = report_html([doc])
    data = data_block(page)
    for text in ('id="profile"', "what if", 'id="fusions"', 'id="rollup-module"',
                 "blocks.<wbr>{0..11}.<wbr>mlp.<wbr>fc1", "GPU idle between kernels"):
        assert text in page
    # The table opens on the largest shares, as the chart numbers them: 1 is the patch embedding's conv.
    first = data["table"]["rows"][0]
    assert cell(first, data["table"]["cols"], "#") == [1, "1"]
    assert "patch_embed.proj" in cell(first, data["table"]["cols"], "module")
    skipped = [r for r in data["records"] if r["p"] is None]
    assert len(skipped) == 39 and "not drawn (39, listed in the table)" in data["chart"]["notes"][0]


def test_a_300_op_profile_stays_a_few_hundred_kb() -> None:
    doc = read_document(VIT)
    summary = dict(doc.extra["profile"])
    n = len(doc.records)
    copy = [dataclasses.replace(r, module=f"copy.{r.module}") for r in doc.records]
    summary["dataflow"] = summary["dataflow"] + [[a + n, b + n, *rest] for a, b, *rest in summary["dataflow"]]
    big = Document(doc.device, [*doc.records, *copy], extra={"profile": summary})
    size = len(report_html([big]).encode())
    assert len(big.records) == 302 and size < MAX_300_OP_BYTES


def test_the_module_roll_up_is_cut_at_rollup_rows() -> None:
    doc = read_document(VIT)
    recs = [dataclasses.replace(r, module=f"m{i}") for i, r in enumerate(doc.records)]
    page = report_html([Document(doc.device, recs, extra=doc.extra)])
    table = page.split('id="rollup-module"')[1].split("</table>")[0]
    assert table.count("<tr>") == 1 + ROLLUP_ROWS
    assert f"{len(recs) - ROLLUP_ROWS} more" in page


# ---------------------------------------------------------------- the commands
def test_report_writes_one_page_and_refuses_to_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.html"
    code, _, err = run(capsys, "report", str(H200), str(ANALYTIC), "-o", str(out))
    assert code == 0 and "report written" in err
    assert "roofline report" in out.read_text()
    code, _, err = run(capsys, "report", str(H200), "-o", str(out))
    assert code == 1 and err.strip() == f"error: {out} exists: not overwriting it (pass --force to replace it)"
    assert run(capsys, "report", str(H200), "-o", str(out), "--force")[0] == 0


@pytest.mark.parametrize(("content", "expect"), [
    (None, "no such file"),
    ('{"hello": 1}', "not a roofline results document"),
    ("[1, 2", "malformed JSON"),
])
def test_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None,
                               expect: str) -> None:
    path = tmp_path / "in.json"
    if content is not None:
        write(path, content)
    code, _, err = run(capsys, "report", str(path), "-o", str(tmp_path / "r.html"))
    assert code == 2 and expect in err and err.count("\n") == 1
    assert not (tmp_path / "r.html").exists()


def test_the_page_must_be_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "report", str(H200), "-o", str(tmp_path / "r.png"))
    assert code == 2 and "ends in .html" in err


def slower(doc: Document, op: str, factor: float) -> Document:
    """The document with one operator's samples (and median) `factor` times slower."""
    recs = [dataclasses.replace(r, time_samples_s=[t * factor for t in r.time_samples_s or []],
                                time_s=(r.time_s or 0) * factor) if r.op == op else r for r in doc.records]
    return Document(doc.device, recs, tool_version=doc.tool_version, created=doc.created)


def test_check_html_shows_the_verdicts_with_p_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = read_document(H200)
    results = write(tmp_path / "results.json", dumps(slower(base, "gemv", 1.5)))
    page_path = tmp_path / "reports" / "check.html"
    code, _, _ = run(capsys, "check", str(results), "--baseline", str(H200), "--html", str(page_path))
    # 5 samples a side, all slower: the exact two-sided Mann-Whitney p = 2/C(10,5) = 2/252 = 0.0079 < 0.01.
    assert code == 1
    page = page_path.read_text()
    assert '<span class="status fail">' in page and 'class="v-worse"' in page and "0.0079" in page
    report = judge(read_document(results), base)
    worse = [r for r in report.rows if r.verdict == "worse"]
    assert len(worse) == 1 and f"{worse[0].p_value:.2g}" == "0.0079"
    # Every judged row is in the page, with its p-value as the markdown summary writes it.
    assert page.count('class="v-') == len(report.rows)
    assert all(f"{r.p_value:.2g}" in page for r in report.rows if r.p_value is not None)


# ---------------------------------------------------------------- in a browser (the `browser` fixture: conftest.py)


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("pages")
    out = {"two": folder / "two.html", "vit": folder / "vit.html"}
    out["two"].write_text(report_html([read_document(H200), read_document(ANALYTIC)], labels=["H200", "analytic"]))
    out["vit"].write_text(report_html([read_document(VIT)]))
    return out


def open_page(browser: Any, path: Path) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(path.as_uri())
    WebDriverWait(browser, 10).until(lambda d: d.find_element("css selector", "body[data-ready]"))
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []


def visible_rows(browser: Any, table: str) -> list[str]:
    """The texts of the rows a filter left visible (one script call, not one per row)."""
    return browser.execute_script(  # type: ignore[no-any-return]
        f"return [...document.querySelectorAll('{table} tbody tr')].filter(r => r.style.display !== 'none')"
        ".map(r => r.textContent)")


def marker_by_radius(browser: Any, pick: str) -> Any:
    """The profile chart's circle with the smallest (pick='min') or largest ('max') radius."""
    i = browser.execute_script(
        "const c = [...document.querySelectorAll('svg.roofline circle.pt')];"
        f"const r = c.map(e => +e.getAttribute('r')); return c[r.indexOf(Math.{pick}(...r))].dataset.i")
    return browser.find_element("css selector", f'svg.roofline .pt[data-i="{i}"]')


def test_chart_and_table_render_and_nothing_is_fetched(browser: Any, pages: dict[str, Path]) -> None:
    open_page(browser, pages["two"])
    chart = chart_model([read_document(H200), read_document(ANALYTIC)])
    assert len(browser.find_elements("css selector", "svg.roofline .pt")) == len(chart.points) == 11
    assert len(browser.find_elements("css selector", "svg.roofline line.roof")) == len(chart.roofs)
    assert len(visible_rows(browser, "#records")) == 11
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0


def test_hovering_a_point_shows_its_details(browser: Any, pages: dict[str, Path]) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    open_page(browser, pages["two"])
    point = browser.find_element("css selector", 'svg.roofline .pt[data-i="0"]')  # gemm bf16 of results_h200
    ActionChains(browser).move_to_element(point).perform()
    tip = browser.find_element("css selector", ".tip")
    assert tip.is_displayed()
    text = tip.text
    for want in ("gemm bf16", "m=", "bf16 on BF16 tensor", "193 µs", "72.0%", "compute-bound"):
        assert want in text
    row = browser.find_element("css selector", '#records tbody tr[data-i="0"]')
    assert "hl" in row.get_attribute("class")  # its table row lights up, and a ring marks the point
    assert len(browser.find_elements("css selector", "svg.roofline .ring")) == 1


def test_a_profile_point_a_few_pixels_wide_can_be_hovered(browser: Any, pages: dict[str, Path]) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    open_page(browser, pages["vit"])
    smallest = marker_by_radius(browser, "min")
    assert float(smallest.get_attribute("r")) < 3  # PROFILE_MIN_PT = 3 pt: 4 px across
    ActionChains(browser).move_to_element_with_offset(smallest, 3, 3).perform()  # beside it, not on it
    assert browser.find_element("css selector", ".tip").is_displayed()


def column_values(browser: Any, table: str, name: str) -> list[float]:
    """The sort values (data-v) of one column, in the rows' order on the page."""
    k = [h.text for h in browser.find_elements("css selector", f"{table} th")].index(name)
    script = f"return [...document.querySelectorAll('{table} tbody tr')].map(r => r.cells[{k}].dataset.v)"
    return [float(v) for v in browser.execute_script(script)]


def test_sorting_by_a_column_orders_the_rows(browser: Any, pages: dict[str, Path]) -> None:
    open_page(browser, pages["two"])
    header = next(h for h in browser.find_elements("css selector", "#records th") if h.text == "roofline time")
    before = column_values(browser, "#records", "roofline time")
    assert before != sorted(before)  # document order first: the test can see a change
    header.click()
    values = column_values(browser, "#records", "roofline time")
    assert values == sorted(before) and header.get_attribute("aria-sort") == "ascending"
    header.click()
    assert column_values(browser, "#records", "roofline time") == sorted(before, reverse=True)


def test_filtering_toggling_roofs_and_zooming(browser: Any, pages: dict[str, Path]) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    open_page(browser, pages["two"])
    browser.find_element("css selector", ".filterbar input").send_keys("gemm fp32")
    rows = visible_rows(browser, "#records")
    assert len(rows) == 1 and "gemm fp32" in rows[0]  # of 11 rows, the one fp32 GEMM (results_h200)
    assert len(browser.find_elements("css selector", "line.roof.measured")) > 0
    browser.find_element("id", "roof-measured").click()
    assert browser.find_elements("css selector", "line.roof.measured") == []
    assert len(browser.find_elements("css selector", "line.roof.datasheet")) > 0

    def ticks() -> list[str]:
        return [t.text for t in browser.find_elements("css selector", "svg.roofline .axis text")]

    before = ticks()
    svg = browser.find_element("css selector", "svg.roofline")
    ActionChains(browser).move_to_element_with_offset(svg, -200, -150).click_and_hold().move_by_offset(
        120, 90).release().perform()
    assert ticks() != before
    browser.find_element("id", "reset-zoom").click()
    assert ticks() == before


def test_screenshot(browser: Any, pages: dict[str, Path], tmp_path: Path) -> None:
    """A screenshot of the profile page with a point hovered: kept in ROOFLINE_SCREENSHOTS when set. The chart
    must have drawn in colour: the bound colours (style.BOUND_COLOURS) appear among its pixels."""
    from PIL import Image
    from selenium.webdriver.common.action_chains import ActionChains

    open_page(browser, pages["vit"])
    biggest = marker_by_radius(browser, "max")
    ActionChains(browser).move_to_element(biggest).perform()
    shot = tmp_path / "report.png"
    assert browser.save_screenshot(str(shot))
    if folder := os.environ.get("ROOFLINE_SCREENSHOTS"):
        shutil.copy(shot, Path(folder) / "report-vit.png")
    colours = {c for _, c in Image.open(shot).convert("RGB").getcolors(1 << 20) or []}
    assert (0xD7, 0x30, 0x1F) in colours and (0x21, 0x66, 0xAC) in colours  # compute red, memory blue


def test_at_1400_px_nothing_is_clipped_or_scrolled_sideways(browser: Any, tmp_path: Path) -> None:
    """A 1400 px window: the records table of the ViT profile fits without scrolling sideways (its unwrapped
    operator, shape and module columns made it 1,558 px wide), and a CPU document's long roof label ('CPU FP32
    matmul 1.2 TFLOP/s (measured)', wider than the chart's right margin) breaks onto two lines inside the chart
    instead of running past its edge."""
    import dataclasses

    h200 = read_document(H200)
    rec = dataclasses.replace(h200.records[1], gpu="cpu", roof_source="measured", compute_pipe="cpu_fp32",
                              compute_pipe_label="CPU FP32 matmul", peak_flops_per_s=1.2e12, peak_bytes_per_s=40e9)
    cpu = Document(records=[rec], device={"kind": "cpu", "name": "AMD EPYC", "ceilings": {
        "device_id": "cpu", "source": "measured", "compute_flops_per_s": {"cpu_fp32": 1.2e12},
        "memory_bytes_per_s": {"dram": 40e9}}})
    size = browser.get_window_size()
    browser.set_window_size(1400, 1000)
    try:
        for name, docs in (("vit", [read_document(VIT)]), ("cpu", [cpu])):
            page = tmp_path / f"{name}.html"
            page.write_text(report_html(docs))
            open_page(browser, page)
            widths = browser.execute_script(
                "const w = document.querySelector('#records .tablewrap') || document.querySelector('#records');"
                "return [w.scrollWidth, w.clientWidth, document.documentElement.scrollWidth,"
                " document.documentElement.clientWidth]")
            assert widths[0] <= widths[1] and widths[2] <= widths[3], (name, widths)
            overhang = browser.execute_script(
                "const s = document.querySelector('svg.roofline').getBoundingClientRect();"
                "return [...document.querySelectorAll('svg.roofline .roof-label')]"
                ".map(t => t.getBoundingClientRect().right - s.right)")
            assert overhang and max(overhang) <= 0, (name, overhang)
        assert browser.find_elements("css selector", "svg.roofline .roof-label tspan")  # the label broke
    finally:
        browser.set_window_size(size["width"], size["height"])


ROOF_LABEL_CLASHES = """
const root = document.querySelector('svg.roofline');
const labels = [...root.querySelectorAll('.labels text.roof-label[transform]')];
const markers = [...root.querySelectorAll('.points .pt')];
const at = (x, y, from, to) => { let p = root.createSVGPoint(); p.x = x; p.y = y;
  return p.matrixTransform(from.getCTM()).matrixTransform(to.getCTM().inverse()); };
const inside = (p, b, pad) => p.x > b.x - pad && p.x < b.x + b.width + pad
  && p.y > b.y - pad && p.y < b.y + b.height + pad;
const out = [];
for (const t of labels) {
  const b = t.getBBox();
  for (const m of markers) {
    const mb = m.getBBox(), c = at(mb.x + mb.width / 2, mb.y + mb.height / 2, m, t);
    if (inside(c, b, mb.width / 2)) out.push(t.textContent + ' covers point ' + m.dataset.i);
  }
  for (const o of labels) {
    if (o === t) continue;
    const ob = o.getBBox();
    const corners = [[ob.x, ob.y], [ob.x + ob.width, ob.y], [ob.x, ob.y + ob.height],
                     [ob.x + ob.width, ob.y + ob.height]];
    if (corners.some(([x, y]) => inside(at(x, y, o, t), b, 0))) out.push(t.textContent + ' overlaps ' + o.textContent);
  }
}
return [labels.length, out];
"""


def test_memory_roof_labels_cover_no_point_and_no_other_label(browser: Any, pages: dict[str, Path],
                                                              tmp_path: Path) -> None:
    """Issue 30: the DRAM roof's label sat on the H200 run's three memory-bound points (gemv, swiglu, rmsnorm at
    AI ~1) and on the measured DRAM roof's label 4 px below it. Each diagonal label's box, in its own rotated
    frame (getBBox under its transform), holds no marker's centre (padded by the marker's radius) and no corner
    of another roof label; every memory roof of the page keeps its label (SMEM, L2, DRAM, DRAM measured)."""
    page = tmp_path / "h200.html"
    page.write_text(report_html([read_document(H200)]))
    for path in (page, pages["two"], pages["vit"]):
        open_page(browser, path)
        count, clashes = browser.execute_script(ROOF_LABEL_CLASHES)
        assert clashes == [], (path.name, clashes)
        if path == page:
            assert count == 4  # datasheet DRAM; measured DRAM, L2 and shared memory


def _analytic(op: str, dtype: str, flops: float, module: str) -> dict[str, Any]:
    return {"op": op, "variant": None, "params": {}, "dtype": dtype, "flops": flops, "bytes_read": 1e6,
            "bytes_written": 1e6, "bytes": 2e6, "arithmetic_intensity": flops / 2e6, "gpu": "h100",
            "peak_flops_per_s": 67e12, "peak_bytes_per_s": 3.35e12, "ridge_point": 20.0, "bound": "memory",
            "roofline_time_s": 2e6 / 3.35e12, "time_s": None, "module": module, "count": 1}


def test_a_profile_title_lists_the_dtypes_of_its_compute_not_its_indices() -> None:
    """Issue 52: an fp32 profile's title read 'int64, fp32' for one aten::arange (position ids): 64 FLOPs beside
    the GEMM's 2 x 512^3 = 2.7e8."""
    doc = Document(device={"kind": "gpu", "name": "NVIDIA H100"},
                   records=[Record.from_dict(_analytic("aten::add.Tensor", "int64", 64.0, "model")),
                            Record.from_dict(_analytic("aten::mm", "fp32", 2 * 512**3, "model.layers.0.mlp"))],
                   extra={"profile": {"name": "p", "mode": "analytic", "calls": 2, "notes": []}})
    title = chart_model([doc]).title
    assert "fp32" in title and "int64" not in title


def test_module_cells_break_between_path_components_never_inside_a_name() -> None:
    """Issue 52: module cells wrapped mid-word ('LlamaForCausalLM.model.no' / 'rm'): a break opportunity after each
    dot before a name, none inside a name or a number, and the CSS breaks a word only when it alone overflows."""
    from roofline.report.html import _breakable

    assert _breakable("model.layers.{0..15}.post_attention_layernorm") == \
        "model.<wbr>layers.<wbr>{0..15}.<wbr>post_attention_layernorm"
    assert "<wbr>" not in _breakable("0.125") and _breakable("a<b>.c") == "a&lt;b&gt;.<wbr>c"  # escaped
    css = (ROOT / "roofline" / "report" / "html_assets" / "report.css").read_text()
    rule = re.search(r"table\.data td\.wrap \{([^}]*)\}", css)
    assert rule is not None and "overflow-wrap: break-word" in rule.group(1)  # 'anywhere' shrinks the column
