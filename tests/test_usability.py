"""Defects a new user met in this session's features (check on a profile with counters, the terminal chart's
points, profile's refusals), each pinned by what it printed before the fix."""

from __future__ import annotations

import copy
import gzip
import json

from helpers import DATA
from rich.console import Console

from roofline.ci.judge import judge
from roofline.core.document import validate_document
from roofline.report.check import render_table


def _profile_with_counters() -> dict:
    # The H200 profile of examples/cnn.py --preset tiny with ncu counters (61 records; conv1 read+wrote
    # 209,152 DRAM bytes, bn1 179,200)
    return json.loads(gzip.decompress((DATA / "profile_counters_cnn.json.gz").read_bytes()))


def _render(table: object, width: int = 80) -> str:
    con = Console(record=True, width=width, highlight=False)
    con.print(table)
    return con.export_text()


def test_check_prints_counter_rules_in_bytes_not_seconds() -> None:
    base = _profile_with_counters()
    cur = copy.deepcopy(base)
    conv1 = next(r for r in cur["records"] if r.get("module") == "conv1")
    conv1["counters"]["dram_bytes"] *= 1.2  # 209,152 -> 250,982.4 B: +20%, past dram_bytes:1%
    report = judge(validate_document(cur, "cur"), validate_document(base, "base"), "dram_bytes:1%")
    text = _render(render_table(report, wide=True), width=400)
    line = next(x for x in text.splitlines() if "conv1" in x and "convolution" in x)
    # 209,152 B at 4 significant digits: 209.2 kB; 250,982 B: 251 kB. Before: "2.092e+05 s"
    assert "209.2 kB" in line and "251 kB" in line and " s " not in line, line
    assert text.splitlines()[0].strip() == "roofline check (dram_bytes; alpha 0.01)"  # before: "(time; ...)"


def test_a_profile_check_at_80_columns_cuts_no_number() -> None:
    # op (max_pool2d_with_indices, 23 letters) and where (forward: layer1.0.downsample.0, 21) at their longest
    # words, beside baseline, current, change, p-value and verdict, need more than 80 columns: the words fold,
    # the numbers stay whole. Before: "209.2 …", "chan…", "p-va…"
    base = _profile_with_counters()
    report = judge(validate_document(base, "cur"), validate_document(base, "base"), "median:5%,dram_bytes:1%")
    lines = _render(render_table(report)).splitlines()
    assert max(len(x) for x in lines) <= 80
    assert not [x for x in lines if "…" in x]
    assert lines[1].split() == ["op", "where", "baseline", "current", "change", "p-value", "verdict"]
    # conv1's median kernel time on both sides (the time rule's row: both rules say same), whole
    assert any(x.count("23.62 µs") == 2 for x in lines)


def test_a_profile_charts_points_keep_their_share_of_the_time_at_80_columns() -> None:
    from roofline.report.terminal import render_terminal

    # the eight largest of the cnn profile: "A   aten::convolution direct bf16 in conv1   816 GFLOP/s   0% of roof
    # 8.1% of time   timed" is 95 columns or more: before, each line was cut at 80 ("0% of roo")
    text = render_terminal([validate_document(_profile_with_counters(), "cnn")], width=80)
    points = [x for x in text.splitlines() if x.startswith("  ") and "of roof" in x]
    assert len(points) == 8 and all(len(x) <= 80 and x.endswith("of time") for x in points), points
    assert "8.1% of time" in points[0] and "in conv1" in points[0]  # conv1: 8.1% of the profile's time
    assert len({x.split("   ")[2] for x in points}) == 8  # the shortened labels still tell the points apart


def test_profile_refuses_bad_flags_before_importing_torch(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    from helpers import ROOT

    # each refusal is one line and exit 2 without the 3 s of `import torch` (a 2-core VM) that came first before
    code = ("import sys; from roofline.cli.app import main\n"
            "for args in (['profile', 'x.py', '--ncu-csv', 'n.csv'], ['profile', 'no_such_script.py'],\n"
            "             ['profile', 'x.py', '--counters', '--no-time']):\n"
            "    print(main(args), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, check=True)
    assert out.stdout.split("\n")[:3] == ["2 False"] * 3, out.stdout + out.stderr
    assert "add --counters" in out.stderr and "no such script" in out.stderr and "--no-time" in out.stderr


def test_the_instrumented_note_names_only_the_fields_the_summary_has() -> None:
    from roofline.capture.profile import instrumented_note

    # a script's profile on the CPU: no gpu_idle_s, no wall_uninstrumented_s (no timed warm-up call); before,
    # the note said "wall_uninstrumented_s is a plain call (warm-up)" beside "wall_uninstrumented_s": null
    cpu = instrumented_note({"wall_s": 3e-3, "gpu_idle_s": None, "wall_uninstrumented_s": None})
    assert cpu == "wall_s includes the profiler's and the op trace's host overhead"
    gpu = instrumented_note({"wall_s": 3e-3, "gpu_idle_s": 1e-3, "wall_uninstrumented_s": 2e-3})
    assert gpu == ("wall_s and gpu_idle_s include the profiler's and the op trace's host overhead, which widens "
                   "the gaps between kernels; wall_uninstrumented_s is a plain call (warm-up)")


def test_an_analytic_profile_runs_compiled_code_eager() -> None:
    import torch

    from roofline.capture.profile import profile

    # under FakeTensorMode a compiled kernel would read fake tensors' data: Inductor's C++ kernels crashed the
    # process on the CPU (`roofline profile examples/compiled_mlp.py --no-time`: segmentation fault). The
    # backend below runs the graph in Python, so here the crash is a graph run on fake tensors: none may run.
    runs = []

    def backend(gm: torch.fx.GraphModule, inputs: list[torch.Tensor]) -> object:
        def run(*args: torch.Tensor) -> object:
            runs.append(1)
            return gm(*args)
        return run

    torch._dynamo.reset()
    lin = torch.compile(torch.nn.Linear(16, 32, bias=False), backend=backend)
    with torch.no_grad():
        prof = profile(lambda: torch.nn.functional.silu(lin(torch.randn(8, 16))), warmup=0, time=False)
    assert runs == []
    # eager, unfused: the matmul 8x32x16 (2*8*32*16 = 8,192 FLOPs) and the silu
    assert {r.op for r in prof.records} >= {"aten::mm", "aten::silu"}
    assert sum(r.flops * r.count for r in prof.records if r.op == "aten::mm") == 2 * 8 * 32 * 16
    assert any("compiled code ran eager in the analytic run" in n for n in prof.summary["notes"])
    torch._dynamo.reset()


def test_the_compiled_modules_count_only_the_kept_regions() -> None:
    import torch

    from roofline.capture.profile import profile, region

    # two warm-up calls outside the region, one inside: the summary's compiled modules, like its Triton launches,
    # count the region's one (before: 3, as examples/compiled_mlp.py's 3 warm-ups + 1 read {'': 4})
    torch._dynamo.reset()
    lin = torch.compile(torch.nn.Linear(16, 16), backend="eager")
    x = torch.randn(4, 16)
    with torch.no_grad(), profile(device="cpu") as prof:
        lin(x)
        lin(x)
        with region("step"):
            lin(x)
    assert prof.summary["compiled"]["modules"] == {"": 1}
    torch._dynamo.reset()


def test_an_output_under_a_file_says_the_file_is_not_a_folder(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pytest

    from roofline.core.errors import RooflineError
    from roofline.core.files import refuse_existing

    # `profile ... -o c.json/x.json` with c.json a file said "no folder c.json", which is there
    (tmp_path / "c.json").write_text("{}")
    with pytest.raises(RooflineError, match=r"c.json is a file, not a folder$"):
        refuse_existing(tmp_path / "c.json" / "x.json", force=False)
    with pytest.raises(RooflineError, match=r"no folder .*nope$"):
        refuse_existing(tmp_path / "nope" / "x.json", force=False)


def test_the_root_module_has_one_name_in_every_view() -> None:
    from roofline.ci.judge import where_text
    from roofline.report.html import report_html
    from roofline.report.profile import ROOT

    # ops the root module runs itself: the profile views said "(root)", check and the HTML report "(top)"
    assert ROOT == "(root)" and where_text("", "forward") == "forward: (root)" and where_text(None, None) == "(root)"
    doc = _profile_with_counters()
    doc["records"][0]["module"] = ""  # conv1's op, as if the root module ran it
    page = report_html([validate_document(doc, "cnn")])
    assert "(top)" not in page and "forward: (root)" in page
