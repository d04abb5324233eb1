"""The analytic path's start-up: `analyze OP ... --no-time` runs without typer (`roofline.cli.fast`) and prints
what the typer command prints; other command lines fall back to typer; the spec files are read from a cache;
a machine without NVIDIA's device files is not asked through NVML. (docs/guide.md: "Start-up time".)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, run

import roofline.cli.app
from roofline.ceilings import specs


def _typer_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import roofline.cli.fast

    monkeypatch.setattr(roofline.cli.fast, "fast_path", lambda argv: None)


@pytest.mark.parametrize("args", [
    ["analyze", "gemm", "--m", "4096", "--no-time", "--gpu", "h100"],
    ["analyze", "gemm", "--m", "1024:4096:x2", "--n", "512", "--dtype", "bf16", "--no-time", "--gpu", "a100"],
    ["analyze", "attention", "--batch", "8", "--heads", "32", "--seq", "4096", "--head-dim", "128", "--causal",
     "--dtype", "bf16", "--no-time", "--gpu", "h200", "--json"],
    ["analyze", "gemm", "--epilogue", "gelu", "--variant", "unfused", "--no-tensor-cores", "--no-time",
     "--gpu", "h100", "--json"],
    ["analyze", "rmsnorm", "--no-time"],  # the CPU's (seeded) roof
    ["specs", "list"], ["specs", "list", "--wide", "--json"], ["ops", "list"],  # the listings (`fast.LISTINGS`)
])
def test_fast_path_prints_what_typer_prints(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                            args: list[str]) -> None:
    import roofline.cli.fast

    assert roofline.cli.fast.fast_path.__name__ == "fast_path"
    with monkeypatch.context() as m:  # the fast path is taken: typer is never built
        m.setattr(roofline.cli.app, "build_app", lambda argv: pytest.fail("typer ran"))
        fast = run(capsys, *args)
    _typer_only(monkeypatch)
    slow = run(capsys, *args)
    if "--json" in args:  # the same document, but for the time it was made
        docs = [json.loads(out) for _, out, _ in (fast, slow)]
        for d in docs:
            if isinstance(d, dict):  # a results document (a listing's JSON has no time)
                d.pop("created")
        assert docs[0] == docs[1]
    else:
        assert fast == slow
    assert fast[0] == 0


@pytest.mark.parametrize("args", [
    ["analyze", "gemm", "--no-time", "--help"],
    ["analyze", "gemm", "--m=4096", "--no-time"],
    ["analyze", "gemm", "--m", "4096", "--m", "8", "--no-time"],  # repeated: click takes the last
    ["analyze", "gemm", "--bogus", "1", "--no-time"],
    ["analyze", "gemm", "--m", "-5", "--no-time"],
    ["analyze", "gemm", "--no-time", "--m"],  # a missing value
    ["analyze", "gemm", "--m", "4096"],  # timed: torch's start-up dwarfs typer's
    ["analyze", "nosuchop", "--no-time"],
    ["specs", "show", "h100"],
    ["specs", "list", "--help"],
    ["specs", "list", "--json", "--json"],  # repeated
    ["ops", "list", "--wide"],  # a flag of another listing
])
def test_other_command_lines_go_to_typer(args: list[str]) -> None:
    from roofline.cli.fast import fast_path

    assert fast_path(args) is None


def test_errors_are_the_same_either_way(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    args = ["analyze", "gemm", "--m", "0", "--no-time", "--gpu", "h10"]
    fast = run(capsys, *args)
    _typer_only(monkeypatch)
    assert fast == run(capsys, *args) and fast[0] == 2 and fast[2].startswith("error: ")


def test_the_analytic_path_imports_neither_typer_nor_pydantic() -> None:
    code = ("import sys; from roofline.cli.app import main; rc = main(['analyze', 'gemm', '--no-time', '--gpu', "
            "'h100']); heavy = sorted(m for m in ('typer', 'pydantic', 'click', 'torch', 'matplotlib') "
            "if m in sys.modules); print(rc, heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.splitlines()[-1] == "0 []", out.stderr


def test_only_the_named_command_is_built() -> None:
    import typer

    app = typer.main.get_command(roofline.cli.app.build_app(["analyze", "gemm", "--m", "4"]))
    assert list(app.commands) == ["analyze"] and list(app.commands["analyze"].commands) == ["gemm"]
    whole = typer.main.get_command(roofline.cli.app.build_app(["--help"]))
    # every command of the registry, in its order (device ... compare: 17 since import-ncu, collectives, sol, trace)
    assert list(whole.commands) == [name for name, *_ in roofline.cli.app.COMMANDS] and len(whole.commands) == 18
    assert len(whole.commands["analyze"].commands) > 20  # every operator


def test_spec_files_are_read_from_a_cache_until_one_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The packaged spec files' parsed TOML is kept in the cache folder (conftest.py gives each test its own);
    a copy of the spec folder whose file changes is parsed again."""
    folder = tmp_path / "specs"
    shutil.copytree(specs.specs_dir(), folder)
    monkeypatch.setattr(specs, "specs_dir", lambda: folder)
    parsed: list[str] = []
    real = specs.read_toml

    def counting(path: Any, what: str) -> dict[str, Any]:
        parsed.append(Path(path).name)
        return real(path, what)

    monkeypatch.setattr(specs, "read_toml", counting)
    files = sorted(folder.glob("*.toml"))
    first = specs._parsed(files)
    assert len(parsed) == len(first) == len(files) > 30  # every file parsed once
    parsed.clear()
    assert specs._parsed(sorted(folder.glob("*.toml"))) == first and parsed == []  # from the cache
    h100 = folder / "h100-sxm.toml"
    h100.write_text(h100.read_text().replace('name = "NVIDIA H100 SXM5 80GB"', 'name = "changed"'))
    again = specs._parsed(sorted(folder.glob("*.toml")))
    assert len(parsed) == len(files) and again["h100-sxm.toml"]["name"] == "changed"


def test_no_nvidia_device_files_no_nvml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from roofline.measuring import device

    asked: list[str] = []
    fake = types.SimpleNamespace(nvmlInit=lambda: asked.append("init"))
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    control = tmp_path / "nvidiactl"
    monkeypatch.setattr(device, "NVIDIA_CONTROL", str(control))
    if not sys.platform.startswith("linux"):
        pytest.skip("the device files are Linux's")
    assert device._nvml() is None and asked == []  # no device file: NVML not asked
    control.write_text("")
    assert device._nvml() is fake and asked == ["init"]  # with it, as before


@pytest.mark.parametrize(("args", "families"), [
    (["analyze", "gemm", "--m", "4096", "--no-time", "--gpu", "h100"], ["base", "counts", "gemm"]),
    (["analyze", "attention", "--batch", "8", "--heads", "32", "--seq", "4096", "--head-dim", "128", "--causal",
      "--no-time", "--gpu", "h100"], ["attention", "base", "softmax"]),  # attention reads softmax's FLOPs
])
def test_the_analytic_path_imports_one_operator_family_and_no_rich(args: list[str], families: list[str]) -> None:
    """The import graph of `analyze OP --no-time` to a pipe (not its time, which a busy machine moves): no rich
    (`roofline.report.plain` draws the table), no typer, only the operator's own family of the catalog."""
    code = ("import sys; from roofline.cli.app import main; rc = main(sys.argv[1:]); sys.stdout.flush(); "
            "print(rc, sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'typer', 'click', 'pydantic', "
            "'torch', 'matplotlib') or m == 'roofline.report.text'), "
            "sorted(m.split('.')[2] for m in sys.modules if m.startswith('roofline.ops.')), file=sys.stderr)")
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}  # rich's own switches
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, check=True,
                         env=env)
    assert out.stdout.startswith(" " * 20) and "┌" in out.stdout  # the table was printed (to a pipe)
    assert out.stderr.splitlines()[-1] == f"0 [] {families}", out.stderr


def test_the_catalog_index_names_every_operator_where_it_is_defined() -> None:
    """`ops.base.CATALOG` (name -> module, what `get_operator` imports) agrees with the registrations, and
    `roofline.ops.OPERATORS` lists the catalog in its order whichever family was imported first."""
    code = ("import sys; from roofline.ops import get_operator; get_operator('rope'); "
            "first = sorted(m for m in sys.modules if m.startswith('roofline.ops.')); "
            "from roofline.ops import OPERATORS; from roofline.ops.base import CATALOG; "
            "print(first); print({n: c.__module__ for n, c in OPERATORS.items()} == CATALOG, "
            "list(OPERATORS) == list(CATALOG))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    # rope reads attention's head check, attention softmax's FLOPs: three families and the registry
    assert out.stdout.splitlines() == [str(["roofline.ops.attention", "roofline.ops.base", "roofline.ops.rope",
                                            "roofline.ops.softmax"]), "True True"], out.stderr


def test_the_listings_import_no_typer() -> None:
    code = ("import sys; from roofline.cli.app import main; rc = [main(['specs', 'list']), main(['ops', 'list'])]; "
            "print(rc, sorted(m for m in ('typer', 'pydantic', 'click') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.splitlines()[-1] == "[0, 0] []", out.stderr


@pytest.mark.parametrize(("args", "quick"), [
    (["analyze", "gemm", "--no-time", "--gpu", "h100"], True),  # the fast path: no teardown
    (["specs", "show", "h100"], False),  # typer's: the interpreter's own exit
])
def test_the_fast_path_exits_without_teardown(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                              args: list[str], quick: bool) -> None:
    asked: list[tuple[int, bool]] = []
    monkeypatch.setattr(sys, "argv", ["roofline", *args])
    monkeypatch.setattr(roofline.cli.app, "exit_now", lambda code, quick=False: asked.append((code, quick)))
    roofline.cli.app.run()
    assert asked == [(0, quick)] and capsys.readouterr().out


def test_a_quick_exit_leaves_whole_outputs(tmp_path: Path) -> None:
    """`python -m roofline analyze ... --no-time -o DOC --json` to a pipe, exiting by os._exit: both the pipe
    and the file hold the whole document."""
    doc = tmp_path / "doc.json"
    out = subprocess.run([sys.executable, "-m", "roofline", "analyze", "gemm", "--m", "1024,4096", "--no-time",
                          "--gpu", "h100", "-o", str(doc), "--json"], capture_output=True, text=True, cwd=ROOT,
                         check=True)
    printed, written = json.loads(out.stdout), json.loads(doc.read_text())
    assert printed == written and len(printed["records"]) == 2  # one record per shape of the sweep


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
@pytest.mark.parametrize("args", [["analyze", "gemm", "--m", "4096", "--no-time", "--gpu", "h100"],
                                  ["specs", "show", "h100"]])
def test_a_full_output_device_is_one_line_not_a_traceback(args: list[str]) -> None:
    # the fast path (analyze) and a typer command (specs show) writing into a device with no space left
    with open("/dev/full", "w") as full:
        got = subprocess.run([sys.executable, "-m", "roofline", *args], stdout=full, stderr=subprocess.PIPE,
                             text=True, check=False)
    assert got.returncode == 1 and got.stderr.strip().splitlines() == [
        "error: could not write the output: No space left on device"]
