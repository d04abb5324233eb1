"""Every command's default view at 80 columns (issue 19): no line wider than 80 and no cell cut.

A cut shows as an ellipsis ("…") or as a number or id broken over two lines; so each test also looks up the
view's key values, whole, on the row they belong to, taking the values from the command's own --json (or
from the spec files), never from the table itself. Output goes to capsys, not a terminal: the console is
COLUMNS wide (80 here), as in a pipe or a CI log.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import DATA, ROOT, SUITES, profile_with_counters, rendered, run, write
from rich.cells import cell_len
from rich.console import Console

from roofline.core.format import count, duration, number
from roofline.report.check import TIME_DIGITS

WIDTH = 80
ELLIPSIS = "…"
SMOKE = str(SUITES / "smoke.toml")
PRICES = str(ROOT / "examples" / "prices.toml")
TINY = """[suite]
name = "tiny"

[[entry]]
op = "gemm"
params = { m = 64 }

[[entry]]
op = "relu"
params = { numel = 4096 }
"""


@pytest.fixture(autouse=True)
def _eighty_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(WIDTH))


def fits(text: str) -> str:
    """`text`, after checking that no line is wider than WIDTH and nothing was cut with an ellipsis."""
    wide = [line for line in text.splitlines() if cell_len(line) > WIDTH]
    assert not wide, f"{len(wide)} lines wider than {WIDTH}, the first: {wide[0]!r}"
    assert ELLIPSIS not in text
    return text


def view(capsys: pytest.CaptureFixture[str], *args: str, code: int = 0) -> str:
    """`roofline ARGS`'s stdout, checked by `fits`."""
    got, out, err = run(capsys, *args)
    assert got == code, err
    return fits(out)


def row(out: str, start: str) -> str:
    """The one line that starts with `start` (a row's first cells)."""
    lines = [line for line in out.splitlines() if line.startswith(start)]
    assert len(lines) == 1, f"{len(lines)} lines start with {start!r}"
    return lines[0]


def as_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    code, out, err = run(capsys, *args, "--json")
    assert code == 0, err
    return json.loads(out)


# ---------------------------------------------------------------- specs and operators
def test_specs_list(capsys: pytest.CaptureFixture[str]) -> None:
    from roofline.ceilings.specs import load_all

    out = view(capsys, "specs", "list")
    for s in load_all().values():  # every id and its peaks, whole, on its row
        line = row(out, s.id + " ")
        for key in ("sm_count", "fp32_dense_tflops", "bf16_tensor_dense_tflops", "memory_bandwidth_gbps"):
            x = s.get(key)
            assert x is None or re.search(rf"(^| ){re.escape(f'{x:g}')}( |$)", line), (s.id, key, line)


def test_specs_list_wide_has_every_column(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "specs", "list", "--wide")
    assert "NVIDIA H200 SXM 141GB" in row(out, "h200-sxm ") and "h200-sxm-141gb" in out  # name and alias
    assert ELLIPSIS not in out and max(cell_len(line) for line in out.splitlines()) > WIDTH


def test_specs_show(capsys: pytest.CaptureFixture[str]) -> None:
    spec = as_json(capsys, "specs", "show", "h200")
    out = view(capsys, "specs", "show", "h200")
    for key, value in spec["specs"].items():  # each field with its value on one line, its source beneath
        if isinstance(value, (int, float)):
            assert re.search(rf"^{key} +{re.escape(f'{value:g}')}$", out, re.MULTILINE), key
    assert "whitepaper" in out


def test_ops_list(capsys: pytest.CaptureFixture[str]) -> None:
    ops = as_json(capsys, "ops", "list")
    out = view(capsys, "ops", "list")
    for name in ops:
        assert re.search(rf"^{name} +--", out, re.MULTILINE), name


# ---------------------------------------------------------------- analyze
def test_analyze_gemm(capsys: pytest.CaptureFixture[str]) -> None:
    out = view(capsys, "analyze", "gemm", "--gpu", "h100", "--no-time")
    # 2 x 4096^3 = 137,438,953,472 FLOPs; / 989.4 TFLOP/s (H100 SXM5 FP16 tensor, dense) = 139 µs
    assert "137,438,953,472" in out and "139 µs" in out


def test_analyze_attention(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("analyze", "attention", "--gpu", "h100", "--batch", "8", "--heads", "32", "--seq", "4096",
            "--head-dim", "128", "--causal", "--no-time")
    (rec,) = as_json(capsys, *args)["records"]
    out = view(capsys, *args)
    assert count(rec["flops"]) in out and count(rec["bytes"]) in out and duration(rec["roofline_time_s"]) in out


# ---------------------------------------------------------------- run
def test_run_analytic(capsys: pytest.CaptureFixture[str]) -> None:
    # an A100: no database ships for it, so the table is the analytic one (no predicted-time column)
    records = as_json(capsys, "run", SMOKE, "--gpu", "a100", "--no-time")["records"]
    out = view(capsys, "run", SMOKE, "--gpu", "a100", "--no-time")
    for r in records:  # one op per row in smoke.toml: the row's first cell names it
        line = row(out, r["op"] + " ")
        assert duration(r["roofline_time_s"]) in line and number(r["attainable_flops_per_s"] / 1e12) in line
    assert "*" not in out  # the attainable FLOP/s has its own column, named in the header
    assert "attainable" in out and "the analytic model alone" in out


def test_run_rows_can_be_told_apart(capsys: pytest.CaptureFixture[str]) -> None:
    """llm-decode.toml's eight gemv entries differ only in n and k: each row shows them."""
    out = view(capsys, "run", str(SUITES / "llm-decode.toml"), "--gpu", "h200", "--no-time")
    gemv = [line for line in out.splitlines() if line.startswith("gemv ")]
    assert len(gemv) == 8 and len(set(gemv)) == 8
    assert all(re.search(r" n=\d+ k=\d+ ", line) for line in gemv)


def test_run_wide_has_every_parameter(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "run", SMOKE, "--gpu", "h200", "--no-time", "--wide")
    assert "m=4096 n=4096 k=4096 batch=1 epilogue=none" in row(out, "gemm ") and ELLIPSIS not in out


def test_run_timed_on_the_cpu(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    res = tmp_path / "r.json"
    out = view(capsys, "run", str(write(tmp_path / "tiny.toml", TINY)), "--no-kernels", "-o", str(res))
    for r in json.loads(res.read_text())["records"]:  # measured time and % of roof, whole, on the op's row
        line = row(out, r["op"] + " ")
        assert duration(r["time_s"]) in line and f"{r['roofline_fraction']:.0%}" in line
    assert "% of roof: roofline time / measured time" in out


def test_gpu_run_table_at_80() -> None:
    """An H200 run (its records carry SM clocks and IQRs): the timed table with every column that fits."""
    from roofline.core.document import read_document
    from roofline.report.text import records_table

    doc = read_document(DATA / "results_h200.json")
    con = Console(width=WIDTH, record=True, highlight=False)
    con.print(records_table(doc.records, title="h200"))
    out = fits(con.export_text())
    for r in doc.records:
        assert duration(r.time_s) in out and f"{r.roofline_fraction:.0%}" in out


# ---------------------------------------------------------------- occupancy
def test_occupancy(capsys: pytest.CaptureFixture[str]) -> None:
    out = view(capsys, "occupancy", "--gpu", "h100", "-T", "256", "-R", "64", "-S", "48KB")
    # the arithmetic once: the warp limit's working appears one time, in the table
    assert out.count("floor(64 warps per SM / 8 per block) = 8") == 1
    assert out.count("carve-out needed") == 1 and "* the limit that sets the occupancy" in out
    assert "min(8, 4, 4, 32) = 4 blocks" in out and "50.0%" in out  # 65536 / 2048 = 32 warps: 4 blocks of 8


def test_occupancy_sweep(capsys: pytest.CaptureFixture[str]) -> None:
    out = view(capsys, "occupancy", "--gpu", "h100", "--sweep", "registers")
    for steps in ("1-24", "25-32", "33-40", "129-255"):
        assert re.search(rf"^ *\S? *{steps} ", out, re.MULTILINE) or f" {steps} " in out


# ---------------------------------------------------------------- compare
def test_compare_with_prices(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("compare", "gemv", "--gpus", "a100,h100,h200", "--prices", PRICES)
    gpus = as_json(capsys, *args)["gpus"]
    out = view(capsys, *args)
    for g in gpus:  # the cost columns, the point of --prices, whole on each GPU's row
        line = row(out, f"{g['rank']} {g['gpu']} ")
        assert number(g["cost_per_million_calls"]) in line and f"{g['price_per_hour']:g}" in line
        assert duration(g["roofline_time_s"]) in line


def test_compare_every_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    view(capsys, "compare", "gemm", "--dtype", "fp8", "--prices", PRICES)  # unsupported rows and "no price"


def test_compare_suite_with_prices(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("compare", "suite", SMOKE, "--gpus", "a100,h100,h200", "--prices", PRICES)
    gpus = as_json(capsys, *args)["gpus"]
    out = view(capsys, *args)
    for g in gpus:  # the JSON calls a run of the suite a call
        line = row(out, f"{g['rank']} {g['gpu']} ")
        assert number(g["cost_per_million_calls"]) in line and duration(g["roofline_time_s"]) in line
    assert "--wide adds:" in out  # the per-operator columns


def test_compare_measured(capsys: pytest.CaptureFixture[str]) -> None:
    out = view(capsys, "compare", "gemm", "--m", "4096", "--dtype", "bf16", "--gpus", "h100,h200,a100",
               "--measured", str(DATA / "results_h200.json"), "--prices", PRICES)
    # results_h200.json: gemm 4096^3 bf16 in 193 µs; 2 x 4096^3 / 989.4e12 = 138.9 µs -> 72% of the roof
    assert "193 µs" in row(out, "2 h200-sxm ") and "72%" in row(out, "2 h200-sxm ")


# ---------------------------------------------------------------- other modules' views
def test_check(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doc = json.loads((DATA / "results_h200.json").read_text())
    rec = doc["records"][0]  # the gemm, 1.5x slower
    rec["time_s"] *= 1.5
    rec["time_samples_s"] = [t * 1.5 for t in rec["time_samples_s"]]
    slower = write(tmp_path / "b.json", json.dumps(doc))
    _, out, _ = run(capsys, "check", str(slower), "--baseline", str(DATA / "results_h200.json"))
    fits(out)
    assert "median:5%" in out and duration(rec["time_s"], TIME_DIGITS) in out


def test_plot_terminal(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    res = tmp_path / "r.json"
    assert run(capsys, "run", SMOKE, "--gpu", "h200", "--no-time", "-o", str(res))[0] == 0
    view(capsys, "plot", str(res), "--terminal")


def test_analyze_plot_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    view(capsys, "analyze", "gemm", "--gpu", "h100", "--no-time", "--plot", "-")


def test_profile(capsys: pytest.CaptureFixture[str]) -> None:
    out = view(capsys, "profile", str(ROOT / "tests" / "scripts" / "tiny_mlp.py"))
    assert "fc1" in out and "fc2" in out


# ---------------------------------------------------------------- the console, the table, --help
def test_console_width_of_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    from roofline.report.text import DEFAULT_WIDTH, console

    monkeypatch.delenv("COLUMNS")
    assert console().width == DEFAULT_WIDTH == 80  # capsys is no terminal: a pipe, a file, a CI log
    monkeypatch.setenv("COLUMNS", "132")
    assert console().width == console(stderr=True).width == 132


def test_fit_table_leaves_out_optional_columns_and_says_so() -> None:
    from roofline.report.text import WIDE, Column, FitTable

    cols = [Column("name", left=True), Column("words", left=True, wrap=True, want=0), Column("time\nµs"),
            Column("extra", drop=1), Column("detail", drop=WIDE)]
    rows = [["alpha-1234567", "three short words", "12,345", "x" * 12, "d"], ["b", "w", "1", "y", "d"]]
    con = Console(width=30, record=True)
    con.print(FitTable(cols, rows, caption=["a caption"]))
    out = con.export_text()
    assert "alpha-1234567" in out and "12,345" in out and "xxx" not in out  # extra left out, numbers whole
    assert "--wide adds: extra, detail" in out and ELLIPSIS not in out
    assert all(cell_len(line) <= 30 for line in out.splitlines())
    assert re.search(r"^alpha-1234567 three +12,345", out, re.MULTILINE)  # "words" wraps at a space
    assert FitTable(cols, rows, wide=True).natural_width() == 13 + 17 + 6 + 12 + 6 + 4  # columns + 4 gaps


@pytest.mark.parametrize("args", [["analyze", "gemm", "--help"], ["run", "--help"], ["--help"]])
def test_help_shows_no_bool_type(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    _, out, _ = run(capsys, *args)
    assert "--help" in out and "<bool>" not in out
    if args[0] == "analyze":
        assert "<int>" in out and re.search(r"--no-time +The analytic model", out)  # other types stay


def test_help_descriptions_have_room_and_whole_sentences(capsys: pytest.CaptureFixture[str]) -> None:
    """At 80 columns: a bounded option reads `<int>`, not `<int range> [x>=1]` (which pushed every description
    to column 57, 20 columns wide); the command list shows each command's first sentence, its docstring's line
    breaks not kept (`calibrate` read "... and store them;" then a new line "`analyze` and `plot` then")."""
    _, out, _ = run(capsys, "run", "--help")
    assert "range" not in out and "[x>=1]" not in out
    (line,) = [ln for ln in out.splitlines() if "--threads" in ln]
    assert line.index("CPU threads") <= 46  # the description column starts by column 46 of 80
    _, top, _ = run(capsys, "--help")
    assert re.search(r"│ check +Compare a run with a baseline\. +│", top)
    assert re.search(r"per dtype, FP32 FMA\) and store them\. +│", top) and "`analyze` and `plot` then" not in top


@pytest.mark.parametrize("op", ["attention", "gemm", "conv2d"])
def test_an_operators_help_leaves_its_descriptions_room(capsys: pytest.CaptureFixture[str], op: str) -> None:
    """At 80 columns the descriptions of `analyze OP --help` start by column 40: they started at 50 (30 columns
    wide) while an off-by-default flag showed its --no-x form (--no-causal) and --kernels/--no-kernels filled a
    column of negative forms of their own. A flag off by default is the flag alone; --no-kernels is one flag."""
    _, out, _ = run(capsys, "analyze", op, "--help")
    (line,) = [ln for ln in out.splitlines() if ln.startswith("│ --dtype ")]
    assert line.index("fp64") <= 40
    assert "--no-causal" not in out and "--kernels" not in out and "--no-kernels" in out


def test_import_ncu_of_a_real_report(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """110 kernels of a real forward (tests/data/ncu_forward.csv, H200): names up to 60 characters fold over
    lines; the numbers stay whole."""
    out = view(capsys, "import-ncu", str(DATA / "ncu_forward.csv"), "--gpu", "h200", "-o", str(tmp_path / "f.json"))
    assert re.search(r"^ +2 Kernel +forward +bf16 +19\.3 µs", out, re.M)  # ncu's 19,296 ns for kernel id 2


def test_import_ncu_shows_the_longest_kernels_and_counts_the_rest(capsys: pytest.CaptureFixture[str],
                                                                  tmp_path: Path) -> None:
    """The 110 kernels filled 330 lines: the table shows the 20 longest (--top), then '90 more kernels'; the
    document keeps all 110; --top 0 shows every one."""
    import json

    doc = tmp_path / "f.json"
    out = view(capsys, "import-ncu", str(DATA / "ncu_forward.csv"), "--gpu", "h200", "-o", str(doc))
    assert re.search(r"^90 more kernels \(\d+\.\d% of the time\): --top 0 shows every one$", out, re.M)
    assert len(json.loads(doc.read_text())["records"]) == 110
    every = view(capsys, "import-ncu", str(DATA / "ncu_forward.csv"), "--gpu", "h200", "--top", "0")
    assert "more kernels" not in every and len(every.splitlines()) > 2 * len(out.splitlines())


def test_the_h200_pairs_documents(capsys: pytest.CaptureFixture[str]) -> None:
    """The collectives and `run --devices` documents recorded on two H200s (docs/results, 2026-12-01)."""
    h200x2 = ROOT / "docs" / "results" / "collectives"
    out = view(capsys, "plot", str(h200x2 / "comm.json.gz"), "--terminal")
    assert "4 GiB" in out and "346 GB/s" in out  # all_reduce's busbw at 4 GiB in that run
    from roofline.core.document import read_document
    from roofline.report.text import records_table

    doc = read_document(h200x2 / "smoke_devices.json.gz")  # 8 entries on each of the two GPUs
    con = Console(width=WIDTH, record=True, highlight=False)
    con.print(records_table(doc.records, title="smoke on 2 GPUs"))
    assert re.search(r"^ +1 gemm ", fits(con.export_text()), re.M)  # the GPU column: GPU 1's GEMM row


def test_check_of_decode_sized_kernels(capsys: pytest.CaptureFixture[str]) -> None:
    """The H200's decode-small run against its 5-run baseline (docs/results, 2026-12-01): long shapes and
    `better_not_significant` once squeezed every number to an ellipsis at 80 columns."""
    small = ROOT / "docs" / "results" / "small-kernels"
    out = view(capsys, "check", str(small / "small1_call3.json.gz"), "--baseline", str(small / "aa_baseline.json.gz"),
               "--fail-on", "median:5%")
    assert re.search(r"^rmsnorm bf16 +rows=64 +7\.443 µs +7\.04 µs +-5\.4% .* better not", out, re.M)


# ---------------------------------------------------------------- a profile with counters
def test_a_profile_check_at_80_columns_cuts_no_number() -> None:
    from roofline.ci.judge import judge
    from roofline.core.document import validate_document
    from roofline.report.check import render_table

    # op (max_pool2d_with_indices, 23 letters) and where (forward: layer1.0.downsample.0, 21) at their longest
    # words, beside baseline, current, change, p-value and verdict, need more than 80 columns: the words fold,
    # the numbers stay whole. Before: "209.2 …", "chan…", "p-va…"
    base = profile_with_counters()
    report = judge(validate_document(base, "cur"), validate_document(base, "base"), "median:5%,dram_bytes:1%")
    lines = fits(rendered(render_table(report), WIDTH)).splitlines()
    assert lines[1].split() == ["op", "where", "baseline", "current", "change", "p-value", "verdict"]
    # conv1's median kernel time on both sides (the time rule's row: both rules say same), whole
    assert any(x.count("23.62 µs") == 2 for x in lines)


def test_a_profile_charts_points_keep_their_share_of_the_time_at_80_columns() -> None:
    from roofline.core.document import validate_document
    from roofline.report.terminal import render_terminal

    # the eight largest of the cnn profile: "A   aten::convolution direct bf16 in conv1   816 GFLOP/s   0% of roof
    # 8.1% of time   timed" is 95 columns or more: before, each line was cut at 80 ("0% of roo")
    text = render_terminal([validate_document(profile_with_counters(), "cnn")], width=WIDTH)
    points = [x for x in text.splitlines() if x.startswith("  ") and "of roof" in x]
    assert len(points) == 8 and all(len(x) <= WIDTH and x.endswith("of time") for x in points), points
    assert "8.1% of time" in points[0] and "in conv1" in points[0]  # conv1: 8.1% of the profile's time
    assert len({x.split("   ")[2] for x in points}) == 8  # the shortened labels still tell the points apart


def test_the_check_table_shows_a_shape_as_run_does(capsys: pytest.CaptureFixture[str]) -> None:
    """tests/data/results_h200.json against itself: the gemm rows read m, n, k, not `batch=1 epilogue=none`
    (every default printed made a conv2d row 11 lines tall); --wide keeps every parameter."""
    doc = str(DATA / "results_h200.json")
    _, out, _ = run(capsys, "check", doc, "--baseline", doc)
    assert re.search(r"^gemm bf16 +m=4096 n=4096 ", out, re.M)
    assert "batch=1" not in out and "epilogue=none" not in out and "parameters off their operator's default" in out
    _, wide, _ = run(capsys, "check", doc, "--baseline", doc, "--wide")
    assert "epilogue=none" in wide


def test_a_chart_legend_label_keeps_its_dtype_and_layer_index() -> None:
    """`plot --terminal` of a transformers profile cut 'aten::mm fp32 in model.layers.1.self_attn.o_proj' in its
    middle to 'aten::mm fp3…1.self_attn.o_proj' (the dtype and the layer index cut): the op and dtype stay whole,
    'aten::' goes, and the module is shortened from the left keeping its layer index."""
    from roofline.report.terminal import short_label

    label = "aten::mm fp32 in model.layers.1.self_attn.o_proj"
    assert short_label(label, 60) == label
    assert short_label(label, 40) == "mm fp32 in …layers.1.self_attn.o_proj"
    assert short_label(label, 30) == "mm fp32 in layers.1.…o_proj"
    assert short_label(label, 30) != short_label(label.replace("layers.1", "layers.0"), 30)
    # no room for the module beside 'convolution direct bf16': cut in the middle, 20 columns
    conv = "aten::convolution direct bf16 in layer4.1.conv2"
    assert short_label(conv, 20) == "convolut…er4.1.conv2"  # 8 + 1 + 11 (19 of 20)


@pytest.mark.parametrize("timed", [False, True], ids=["analytic", "timed"])
def test_run_table_with_a_prediction_column_keeps_each_parameter_whole(capsys: pytest.CaptureFixture[str],
                                                                      tmp_path: Path, timed: bool) -> None:
    """Issue 30: with the predicted-time column (an operator database) the 80-column table squeezed the shape
    column to 12 characters and split `numel=1048576` and `in_channels=16` over lines. The attainable rate, the
    AI and (timed) the IQR give way instead (--wide and the JSON keep them): every parameter stays whole on one
    line. Records: the smoke suite on this CPU, analytic, or timed (its relu, attention and conv2d: the longest op
    name and shape); predicted times set beside them (1.5 x the roof), memory-bound ones on an L3 roof ('memory (L3)',
    the widest bound)."""
    import dataclasses

    from roofline.core.document import validate_document
    from roofline.report.text import compact_shapes, records_table

    entries = [("relu", "{ numel = 1048576 }"),
               ("attention", "{ batch = 1, heads = 4, seq = 128, head_dim = 64, causal = true }"),
               ("conv2d", "{ batch = 2, in_channels = 16, height = 32, width = 32, out_channels = 32, "
                          "kernel_size = 3, padding = 1 }")]
    suite = write(tmp_path / "three.toml", '[suite]\nname = "three"\n' + "".join(
        f'\n[[entry]]\nop = "{op}"\nparams = {params}\n' for op, params in entries))
    code, out, err = run(capsys, "run", str(suite) if timed else SMOKE, "--json", *(() if timed else ("--no-time",)))
    assert code == 0, err
    records = [dataclasses.replace(r, predicted_time_s=1.5 * r.roofline_time_s, prediction_kind="db",
                                   prediction_source="database: tests (leave-one-out interval)",
                                   memory_level="l3" if r.bound == "memory" else None)  # as on a CPU with an L3 roof
               for r in validate_document(json.loads(out), "run --json").records]
    out = fits(rendered(records_table(records, title="t"), WIDTH))
    head, body = out.split("\n────")
    assert "predicted" in head
    for shape in compact_shapes(records):
        for word in shape.split():
            assert any(word in line.split() for line in body.splitlines()), f"{word!r} is not whole on a line"
    left = " ".join(out.split()).split("--wide adds: ")[1]
    assert "attainable" in left and ("± IQR/2" in left) == timed


def test_the_command_lists_show_each_operators_whole_summary(capsys: pytest.CaptureFixture[str]) -> None:
    """`analyze --help` lists each operator by its summary: click's short help cut at the first '.' and a
    space, so chain read "N unary elementwise ops applied in a row (e.g." (its summary's "e.g. scale")."""
    import typer

    from roofline.cli.analyze import analyze_group
    from roofline.ops.base import load_catalog

    group = typer.main.get_command(analyze_group())
    for name, cls in load_catalog().items():
        assert group.commands[name].get_short_help_str(limit=500) == f"{cls.summary}.", name  # type: ignore[attr-defined]
    _, out, _ = run(capsys, "analyze", "--help")
    assert "activation" in out
