"""`roofline history add|show|detect|plot` end to end, on both backends (`store_url`), and the HTML page in a real
browser (headless Chromium through selenium, as tests/test_html_report.py; skipped, saying why, without them).

Documents: tests/data/results_h200.json times a factor per run (test_history_fixtures), so each series' values
are the file's times (gemm bf16 193 µs) times the factors chosen here.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
import test_history_fixtures as fixtures
from helpers import run
from test_history_fixtures import GEMM_S, scaled, write_docs

store_url = fixtures.store_url  # every test on SQLite and on PostgreSQL

# 12 runs: 1% alternating noise, then a 10% slowdown from run 6 (index 6) on
STEP = [1.0, 1.01, 0.99, 1.0, 1.01, 0.99, 1.1, 1.11, 1.09, 1.1, 1.11, 1.09]
FLAT = [1.0, 1.01, 0.99, 1.0, 1.01, 0.99, 1.0, 1.01, 0.99, 1.0, 1.01, 0.99]


def add_all(capsys: pytest.CaptureFixture[str], store: str, paths: list[Path]) -> None:
    for i, p in enumerate(paths):
        code, out, err = run(capsys, "history", "add", str(p), "--commit", f"c{i:02d}", "--branch", "main",
                             "--machine", "m1", "--history", store)
        assert (code, err) == (0, ""), err
        assert out.startswith(f"added run {i + 1} (6 records) to the history store")


def test_add_show_and_json(capsys: pytest.CaptureFixture[str], tmp_path: Path, store_url: str) -> None:
    add_all(capsys, store_url, write_docs(tmp_path, FLAT[:5]))
    code, out, _ = run(capsys, "history", "add", str(tmp_path / "run000.json"), "--history", store_url)
    assert code == 0 and out.startswith("already in the history store") and "as run 1: not added again" in out
    code, out, _ = run(capsys, "history", "show", "gemm bf16", "--history", store_url)
    lines = out.splitlines()
    assert code == 0 and len(lines) == 2 and max(len(line) for line in lines) <= 80
    assert lines[0] == "gemm bf16 m=4096 n=4096 k=4096 batch=1 epilogue=none · h200-sxm · 5 runs"
    # levels: (f - 0.99) / 0.02 x 7 -> 1.00: 3.5 (rounds to 4, ▅), 1.01: 7 (█), 0.99: 0 (▁); the last run is
    # 1.01 x 193 µs = 194.93 µs -> "195 µs", the range 0.99 x .. 1.01 x: 191 µs-195 µs; the runs' spread: MAD 0.01
    # of a median 1.00 x 1.4826 = 1.5%
    assert lines[1].startswith("  ▅█▁▅█ ") and "last 195 µs  runs ±1.5%  191 µs–195 µs" in lines[1]
    code, out, _ = run(capsys, "history", "show", "gemm bf16", "--history", store_url, "--json")
    [s] = json.loads(out)
    assert [p["median_s"] for p in s["points"]] == pytest.approx([GEMM_S * f for f in FLAT[:5]], rel=1e-12)
    assert [p["commit"] for p in s["points"]] == ["c00", "c01", "c02", "c03", "c04"]
    assert {p["machine"] for p in s["points"]} == {"m1"} and s["points"][0]["sm_clock_mhz"] == 1980.0


def test_detect_finds_the_step_and_fails_the_gate(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                  store_url: str) -> None:
    add_all(capsys, store_url, write_docs(tmp_path, STEP))
    code, out, _ = run(capsys, "history", "detect", "gemm bf16", "--history", store_url)
    assert code == 1
    assert "at c06 (run 7 of 12): worse +10.0%, 193 µs -> 212 µs" in out and out.rstrip().endswith("failed")
    code, out, _ = run(capsys, "history", "detect", "--history", store_url, "--fail-on", "median:15%", "--json")
    data = json.loads(out)
    assert code == 0 and data["threshold"] == 0.15 and not data["failed"]
    changes = [c for s in data["series"] for c in s["changes"]]
    assert len(changes) == 6 and {(c["commit"], c["direction"]) for c in changes} == {("c06", "worse")}
    assert all(c["size"] == pytest.approx(0.10, rel=1e-9) and c["confidence"] > 0.99 for c in changes)


def test_detect_on_flat_runs_passes_and_too_few_is_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                          store_url: str) -> None:
    add_all(capsys, store_url, write_docs(tmp_path, FLAT))
    code, out, _ = run(capsys, "history", "detect", "--history", store_url)
    assert code == 0 and out.rstrip().endswith("0 changes in 6 series judged; 0 worse by more than 5.0%: passed")
    code, _, err = run(capsys, "history", "detect", "--history", store_url, "--last", "3")
    assert code == 2 and err == "error: no series has enough runs to judge: nothing was compared\n"


def test_a_slower_clock_is_named_and_the_fraction_at_clock_does_not_move(capsys: pytest.CaptureFixture[str],
                                                                         tmp_path: Path, store_url: str) -> None:
    """Runs 6-11 at 1584 MHz (1980 x 0.8) and 1.25 x slower: the compute-bound GEMM's time is worse by 25%, its
    fraction of the roofline at each run's clock unchanged."""
    paths = []
    for i, f in enumerate(FLAT):
        slow = i >= 6
        d = scaled(f * (1.25 if slow else 1.0), i, clock_mhz=1584.0 if slow else None)
        paths.append(tmp_path / f"r{i}.json")
        paths[-1].write_text(json.dumps(d))
    add_all(capsys, store_url, paths)
    code, out, _ = run(capsys, "history", "detect", "gemm bf16", "--history", store_url)
    assert code == 1 and "worse +25.0%" in out and "SM clock 1980 -> 1584 MHz there too" in out
    code, out, _ = run(capsys, "history", "detect", "gemm bf16", "--history", store_url, "--metric", "fraction")
    assert code == 0 and "0 changes in 1 series judged" in out


def test_bad_input_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path, store_url: str) -> None:
    bad = scaled(1.0, 0)
    bad["records"][0]["time_samples_s"][0] = -1.0
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    code, _, err = run(capsys, "history", "add", str(tmp_path / "bad.json"), "--history", store_url)
    assert code == 2 and err.count("\n") == 1 and "time_samples_s" in err
    code, _, err = run(capsys, "history", "show", "--history", str(tmp_path / "none.sqlite"))
    assert code == 2 and "no history store there" in err
    add_all(capsys, store_url, write_docs(tmp_path, FLAT[:2]))
    for args, words in ((["show", "conv"], "no series matches 'conv'"), (["detect", "--fail-on", "p90:5%"],
                        "judges each run's median"), (["show", "--metric", "energy"], "--metric 'energy'"),
                        (["add", str(tmp_path / "run000.json"), "--commit", "a\nb"], "printable characters"),
                        (["plot", "-o", str(tmp_path / "x.gif")], "use .png, .svg, .pdf, .html")):
        code, _, err = run(capsys, "history", *args, "--history", store_url)
        assert code == 2 and err.count("\n") == 1 and words in err, (args, err)


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])  # type: ignore[return-value]


def test_plot_writes_a_chart_and_keeps_what_is_there(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                     store_url: str) -> None:
    add_all(capsys, store_url, write_docs(tmp_path, STEP))
    png = tmp_path / "h.png"
    code, out, _ = run(capsys, "history", "plot", "gemm", "-o", str(png), "--history", store_url)
    width, height = _png_size(png)
    assert code == 0 and out == f"{png} written\n" and width > 800 and height > 400  # two panels, 150 dpi
    code, _, err = run(capsys, "history", "plot", "gemm", "-o", str(png), "--history", store_url)
    assert code == 1 and "exists: not overwriting it" in err
    code, _, _ = run(capsys, "history", "plot", "gemm", "-o", str(png), "--history", store_url, "--force")
    assert code == 0


# ---------------------------------------------------------------- the page in a browser


def test_the_page_shows_series_changes_and_filters_in_a_browser(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                                 browser: Any) -> None:
    store = str(tmp_path / "h.sqlite")
    add_all(capsys, store, write_docs(tmp_path, STEP))
    page = tmp_path / "h.html"
    code, _, _ = run(capsys, "history", "plot", "-o", str(page), "--history", store)
    assert code == 0
    browser.get(page.as_uri())
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
    charts = browser.find_elements("css selector", "section.series svg.series")
    assert len(charts) == 6 and all(c.size["width"] > 700 and c.size["height"] > 150 for c in charts)
    assert len(browser.find_elements("css selector", "svg.series circle.run")) == 6 * 12
    changes = browser.find_elements("css selector", "svg.series line.change.worse")
    assert len(changes) == 6
    title = changes[0].find_element("css selector", "title").get_attribute("textContent")
    assert title.startswith("worse +10.0% at c06, confidence")
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    box = browser.find_element("id", "filter")
    box.send_keys("gemv")
    shown = [s for s in browser.find_elements("css selector", "section.series") if s.is_displayed()]
    assert [s.get_attribute("data-name") for s in shown] == ["gemv bf16 m=1 n=8192 k=8192"]


def test_check_and_trace_add_their_results_with_history(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                         store_url: str) -> None:
    """`--history STORE` on the commands that make results (run, profile, trace, check): the results one run of the
    store, said on stderr; here `check` (two of the fixture's documents: the results added, never the baseline)
    and `trace` of a plain torch.profiler trace (its CPU ops timed)."""
    first, second = write_docs(tmp_path, [1.0, 1.01])
    code, _out, err = run(capsys, "check", str(second), "--baseline", str(first), "--history", store_url)
    assert code == 0 and "added run 1 (6 records) to the history store" in " ".join(err.split()), err
    code, out, _ = run(capsys, "history", "show", "gemm bf16", "--history", store_url, "--json")
    [s] = json.loads(out)
    assert [p["median_s"] for p in s["points"]] == pytest.approx([GEMM_S * 1.01], rel=1e-12)  # the results only
    import torch

    trace = tmp_path / "trace.json"
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        torch.ones(64, 64) @ torch.ones(64, 64)
    prof.export_chrome_trace(str(trace))
    code, _out, err = run(capsys, "trace", str(trace), "--history", store_url)
    assert code == 0 and "added run 2" in " ".join(err.split()), err


def test_run_adds_its_results_with_history(capsys: pytest.CaptureFixture[str], store_url: str) -> None:
    """`roofline run SUITE --history STORE`: the suite's timed records one run of the store (the smoke suite's
    eight entries on the CPU); analytic results (--no-time) are no run: refused in one line."""
    from helpers import ROOT

    code, _out, err = run(capsys, "run", str(ROOT / "suites" / "smoke.toml"), "--no-kernels", "--history", store_url)
    assert code == 0 and "added run 1 (8 records) to the history store" in " ".join(err.split()), err
    code, _out, err = run(capsys, "run", str(ROOT / "suites" / "smoke.toml"), "--no-time", "--history", store_url)
    assert code == 2 and "no timed record" in err
