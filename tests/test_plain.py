"""`roofline.report.plain`: one record's table drawn without rich gives rich's bytes, byte for byte, wherever
it draws at all; where it cannot be sure it says so (None) and rich draws. A timed record, from a GPU, is drawn
by tests/test_plain_gpu.py."""

from __future__ import annotations

import io
import os
import random
import sys

import pytest
from helpers import ROOT, run
from rich.console import Console

from roofline.analysis.advice import with_advice
from roofline.ceilings.specs import gpu_ceilings, resolve
from roofline.core.dtypes import get_dtype
from roofline.core.record import analytic_record
from roofline.ops import OPERATORS, make
from roofline.report import plain
from roofline.report.rows import record_rows
from roofline.report.text import rows_table


def rich_bytes(title: str, rows: list[tuple[str, str]], width: int, terminal: str | None = None) -> str:
    """What `show(record_table(r))` writes at `width` columns: to a pipe (`text.console` off a terminal), or
    to a terminal of the colour system `terminal` (bold and italic read the same in each)."""
    buf = io.StringIO()
    Console(file=buf, width=width, highlight=False, soft_wrap=False, force_terminal=terminal is not None,
            color_system=terminal).print(rows_table(title, rows))  # type: ignore[arg-type]
    return buf.getvalue()


@pytest.mark.parametrize("gpu", ["h100", "mi300x"])
def test_every_catalog_operator_reads_as_rich_draws_it(gpu: str) -> None:
    spec = resolve(gpu)
    drawn = 0
    for name in OPERATORS:
        op = make(name)
        dt = get_dtype("fp16" if "fp16" in op.dtypes else op.dtypes[0])
        r = with_advice(analytic_record(op, dt, gpu_ceilings(spec), True), spec)
        for width in (80, 60):
            text = plain.boxed(f"roofline: {r.op}", record_rows(r), width)
            if text is not None:
                assert text == rich_bytes(f"roofline: {r.op}", record_rows(r), width), (name, width)
                styled = plain.boxed(f"roofline: {r.op}", record_rows(r), width, styled=True)
                assert styled == rich_bytes(f"roofline: {r.op}", record_rows(r), width, "truecolor"), (name, width)
                drawn += 1
    assert drawn == 2 * len(OPERATORS)  # every one drawn here, none left to rich: plain characters only


# rich's colour systems of a terminal (256 colours: "256"; Windows' legacy console is left to rich).
SYSTEMS = ["standard", "256", "truecolor"]
# Words to wrap: short and long, one longer than any cell (folded), runs of spaces, a trailing space, µ and ±.
WORDS = ["m=4096", "n=8192", "x", "bandwidth-bound", "1.11", "ms", "±", "2.0%", "µs", "(IQR/2;", "samples)",
         "a" * 70, "kernel_name_" * 4, "", " ", "  "]


def test_random_rows_wrap_and_fold_as_rich_does() -> None:
    rng = random.Random(19)  # fixed: the same 250 tables every run
    drawn = 0
    for _ in range(250):
        rows = []
        for i in range(rng.randint(1, 5)):
            words = [rng.choice(WORDS) for _ in range(rng.randint(0, 14))]
            value = " ".join(words)
            if rng.random() < 0.2:
                value = value.replace(" ", "\n", 2)  # a value of several lines (the kernels row)
            rows.append((rng.choice(["operator", "shape", "measured (median)", "note", "k"]) + str(i), value))
        width = rng.randint(30, 130)
        text = plain.boxed("roofline: gemm", rows, width)
        if text is not None:
            assert text == rich_bytes("roofline: gemm", rows, width), (rows, width)
            styled = plain.boxed("roofline: gemm", rows, width, styled=True)
            assert styled == rich_bytes("roofline: gemm", rows, width, rng.choice(SYSTEMS)), (rows, width)
            drawn += 1
    assert drawn > 220  # 245 of these 250: the rest are narrower than their title, which rich wraps


@pytest.mark.parametrize(("title", "rows"), [
    ("roofline: [bold]x", [("a", "b")]),  # markup rich would read
    ("roofline: :fire:", [("a", "b")]),  # an emoji code
    ("roofline: gemm", [("a", "宽字符")]),  # wide characters
    ("roofline: gemm", [("a", "tab\there")]),  # a tab, expanded by rich
    ("roofline: gemm", [("a" * 90, "b")]),  # a label wider than the console
])
def test_what_it_cannot_be_sure_of_goes_to_rich(title: str, rows: list[tuple[str, str]]) -> None:
    assert plain.boxed(title, rows, 80) is None


def test_the_width_and_styles_are_rich_s(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    for name in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE", "TERM"):
        monkeypatch.delenv(name, raising=False)
    assert plain.layout() == (plain.DEFAULT_WIDTH, False) == (80, False)  # a pipe: 80 columns, no styles
    monkeypatch.setenv("COLUMNS", "100")
    assert plain.layout() == (100, False)
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich's switch: it decides
    assert plain.layout() is None
    monkeypatch.delenv("FORCE_COLOR")
    monkeypatch.setattr(out, "isatty", lambda: True)  # a terminal: styles, COLUMNS or the terminal's width
    assert plain.layout() == (100, True)
    monkeypatch.delenv("COLUMNS")
    monkeypatch.setattr(plain.os, "get_terminal_size", lambda fd: os.terminal_size((132, 40)))
    assert plain.layout() == (132, True)
    monkeypatch.setenv("TERM", "dumb")  # rich writes no styles to a dumb terminal: it decides
    assert plain.layout() is None


# ---------------------------------------------------------------- scripts/startup.py
def _startup_script():  # type: ignore[no-untyped-def]
    import importlib.util

    spec = importlib.util.spec_from_file_location("startup_script", ROOT / "scripts" / "startup.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_startup_script_checks_a_document_s_tables(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    doc = tmp_path / "sweep.json"
    assert run(capsys, "analyze", "gemm", "--m", "1024,4096", "--no-time", "--gpu", "h100", "-o", str(doc))[0] == 0
    assert _startup_script().check_table(str(doc)) == 0
    # 2 records x 2 widths (80, 160) x plain and styled = 8 tables
    assert capsys.readouterr().out.startswith("8 of 8 tables the same bytes as rich's")


def test_startup_script_interleaves_the_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    script = _startup_script()
    order: list[str] = []
    monkeypatch.setattr(script, "_once", lambda argv, env: order.append(argv[-1]) or 0.1)
    times = script.measure("python", 2)
    # one warm-up of each of the 4, then 2 rounds of the 4: 12 runs, each round in the same order
    assert len(order) == 12 and order[:4] == order[4:8] == order[8:]
    assert {len(t) for t in times.values()} == {2}
    env = script._env("/tmp/x")
    assert "PYTHONDONTWRITEBYTECODE" not in env and env["ROOFLINE_CACHE_DIR"] == "/tmp/x"
