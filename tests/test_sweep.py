"""Shape sweeps: the grammar (`roofline.core.sweep`), `analyze` with a list or range (one document, one row
per shape, progress n of N when timed), and the chart joining a sweep's points."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import run

from roofline.core.document import read_document
from roofline.core.errors import UsageError
from roofline.core.sweep import MAX_SHAPES, expand, parse_values
from roofline.report.chart.model import chart_model


@pytest.mark.parametrize(("text", "values"), [
    ("4096", [4096]),
    ("1024,4096", [1024, 4096]),
    ("1024:16384:x2", [1024, 2048, 4096, 8192, 16384]),  # 1024 * 2^0..2^4
    ("1000:5000:x3", [1000, 3000]),  # 9000 > 5000
    ("128:512:+128", [128, 256, 384, 512]),
    ("1:10:+4", [1, 5, 9]),  # 13 > 10
    ("7:7:x2", [7]),  # a range of one value
])
def test_values(text: str, values: list[int]) -> None:
    assert parse_values("--m", text) == values


@pytest.mark.parametrize(("text", "needle"), [
    ("4096:1024:x2", "empty range"),
    ("1:8:x1", "factor"),
    ("1:8:+0", "step"),
    ("1:8", "A:B:xF"),
    ("1.5", "not an integer"),
    ("1024,abc", "'abc' is not an integer"),
    ("1:8:x1.5", "not an integer"),
    (f"1:{MAX_SHAPES + 1}:+1", f"more than {MAX_SHAPES}"),
])
def test_bad_values(text: str, needle: str) -> None:
    with pytest.raises(UsageError, match=needle) as err:
        parse_values("--m", text)
    assert "--m" in str(err.value)


def test_product_varies_the_first_parameter_slowest() -> None:
    shapes, swept = expand({"m": "1,2", "n": "3,4", "k": None, "epilogue": "a,b"}, {"m": "--m", "n": "--n", "k": "--k"})
    assert swept == ["m", "n"]  # the choice "a,b" is no integer parameter: kept as given, never parsed
    assert [(s["m"], s["n"]) for s in shapes] == [(1, 3), (1, 4), (2, 3), (2, 4)]
    assert all(s["k"] is None and s["epilogue"] == "a,b" for s in shapes)
    with pytest.raises(UsageError, match="the sweep has 1024 shapes"):  # 32 x 32 > MAX_SHAPES (1000)
        expand({"m": "1:32:+1", "n": "1:32:+1"}, {"m": "--m", "n": "--n"})


def test_analyze_sweep_is_one_document(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "sweep.json"
    code, out, err = run(capsys, "analyze", "gemm", "--m", "1024:16384:x2", "--n", "4096", "--k", "4096",
                         "--gpu", "h100", "--no-time", "-o", str(path))
    assert code == 0, err
    doc = read_document(path)
    assert doc.extra["sweep"] == ["m"]
    assert [r.params["m"] for r in doc.records] == [1024, 2048, 4096, 8192, 16384]
    assert doc.records[0].flops == 2 * 1024 * 4096 * 4096  # 34,359,738,368
    for m in (1024, 16384):  # the table's shape column tells the rows apart
        assert f"m={m} n=4096 k=4096" in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_analyze_without_a_sweep_is_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "analyze", "gemm", "--m", "4096", "--gpu", "h100", "--no-time", "--json")
    doc = json.loads(out)
    assert code == 0 and len(doc["records"]) == 1 and "sweep" not in doc
    assert doc["records"][0]["params"]["n"] == 4096  # n defaults to m, as before


@pytest.mark.parametrize(("value", "needle"), [("4096:1024:x2", "empty range"), ("1:8:+0", "step"),
                                               ("2.5", "not an integer"), ("0,4", "--m must be >= 1")])
def test_bad_sweep_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], value: str, needle: str) -> None:
    code, out, err = run(capsys, "analyze", "gemm", "--m", value, "--gpu", "h100", "--no-time")
    assert code == 2 and needle in err and err.count("\n") == 1 and not out


def test_timed_sweep_reports_shape_n_of_n(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    """Timed on the CPU (measure_op faked): one measure_op call per shape, and the status bar steps through
    them with the total known up front."""
    import roofline.measuring.runner
    import roofline.measuring.target
    from roofline.core.record import Record, analytic_record, with_time
    from roofline.report.progress import StatusLine

    timed: list[int] = []
    steps: list[tuple[int | None, int, str]] = []

    def fake_measure_op(op: Any, dtype: Any, target: Any, **kwargs: Any) -> Record:
        timed.append(op.m)
        return with_time(analytic_record(op, dtype, target.ceilings, True), 1e-3)

    def step(self: StatusLine, done: int, head: str) -> None:
        steps.append((self._total, done, head))

    monkeypatch.setattr(roofline.measuring.runner, "measure_op", fake_measure_op)
    monkeypatch.setattr(roofline.measuring.target, "runtime_info", lambda device: {"time_device": device})
    monkeypatch.setattr(StatusLine, "step", step)
    code, out, err = run(capsys, "analyze", "gemm", "--m", "64,128,256", "--no-kernels", "--json")
    assert code == 0, err
    assert timed == [64, 128, 256]
    assert steps == [(3, 0, "gemm m=64"), (3, 1, "gemm m=128"), (3, 2, "gemm m=256")]
    assert [r["time_s"] for r in json.loads(out)["records"]] == [1e-3] * 3


def test_chart_joins_a_sweep(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """gemm m=64..1024 with n, k following m (their default): one line through the five points in m's
    order. A product sweep over m and n=512,1024 is one line along m per n."""
    from roofline.report.chart.draw import build_figure
    from roofline.report.terminal import render_terminal

    path = tmp_path / "s.json"
    assert run(capsys, "analyze", "gemm", "--m", "64:1024:x2", "--gpu", "h100", "--no-time", "-o", str(path))[0] == 0
    doc = read_document(path)
    chart = chart_model([doc])
    assert chart.lines == (("0:0", "0:1", "0:2", "0:3", "0:4"),)
    assert "~ a sweep" in " ".join(render_terminal([doc], width=80).split())  # the legend, wrapped
    fig = build_figure([doc])
    assert [a.get_gid() for ax in fig.axes for a in ax.lines if str(a.get_gid()).startswith("sweep:")] == ["sweep:0"]

    grid = tmp_path / "g.json"
    assert run(capsys, "analyze", "gemm", "--m", "64,128,256", "--n", "512,1024", "--k", "512", "--gpu", "h100",
               "--no-time", "-o", str(grid))[0] == 0
    # records in product order: (64,512) (64,1024) (128,512) (128,1024) (256,512) (256,1024)
    assert chart_model([read_document(grid)]).lines == (("0:0", "0:2", "0:4"), ("0:1", "0:3", "0:5"))


def test_a_suite_is_no_sweep(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Two records of one op differing in one parameter, in a document that is no sweep: no line."""
    path = tmp_path / "two.json"
    assert run(capsys, "analyze", "gemm", "--m", "64,128", "--gpu", "h100", "--no-time", "-o", str(path))[0] == 0
    doc = read_document(path)
    del doc.extra["sweep"]
    assert chart_model([doc]).lines == ()
