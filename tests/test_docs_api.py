"""The docs say what the tool does: docs/api.md's and the README's Python examples run as written, the options
and command lines the docs show are the command line's, and every command exits as docs/guide.md's table of
exit status says. `roofline calibrate -o` is here too (the one output it lacked).

Convention: every ```python block of docs/api.md and README.md is run, in order, in one namespace (a later
block uses an earlier block's names), from a scratch folder in which `docs/` and `tests/` are this checkout's,
on the CPU against conftest.py's seeded roof. A block that must not run would be fenced otherwise (```text).
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT, run, write

API_MD = ROOT / "docs" / "api.md"
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "guide.md"
# Every Markdown page whose command lines are checked against the command line's options.
PAGES = [README, *sorted((ROOT / "docs").glob("*.md")), ROOT / "specs" / "README.md", ROOT / "examples" / "README.md"]


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(), re.S | re.M)


def run_blocks(blocks: list[str], where: Path, name: str) -> tuple[dict[str, Any], str]:
    """Run `blocks` in one namespace with `where` as the working folder; (namespace, what they printed)."""
    (where / "docs").symlink_to(ROOT / "docs")
    (where / "tests").symlink_to(ROOT / "tests")  # the H200 run the records example reads (tests/data)
    ns: dict[str, Any] = {"__name__": "__docs__"}
    printed = io.StringIO()
    cwd = os.getcwd()
    os.chdir(where)
    try:
        with contextlib.redirect_stdout(printed):
            for i, block in enumerate(blocks):
                exec(compile(block, f"{name} block {i + 1}", "exec"), ns)
    finally:
        os.chdir(cwd)
    return ns, printed.getvalue()


# ---------------------------------------------------------------- the Python examples
def test_the_api_page_runs_as_written(tmp_path: Path) -> None:
    blocks = python_blocks(API_MD)
    assert len(blocks) >= 7  # measure, torch dtypes, analyze, profile, occupancy, records, documents, errors
    ns, printed = run_blocks(blocks, tmp_path, "docs/api.md")
    lines = printed.splitlines()
    # what the comments beside the examples say they print
    assert lines[0] == "fp32"  # measure inferred the dtype of `a @ b` (float32)
    assert "bf16 cpu_bf16" in lines
    assert "compute 138.9 us" in lines  # 2 x 4096^3 / 989.4e12 s (specs/h100-sxm.toml, dense BF16)
    assert "4 50% ('registers', 'shared_memory')" in lines
    assert "dict_keys(['forward'])" in lines
    assert "NVIDIA H200 16" in lines
    assert "unknown GPU 'h10' (closest: h100, a10, h100nvl; `roofline specs list` shows all 31)" in lines
    assert lines[-2] == "True"  # the record survived write_document / read_document
    rec = ns["rec"]  # the CPU-timed rmsnorm of "A catalog operator", read in "Reading a record"
    assert rec.timed and rec.clocks is None and rec.sm_clock_mhz is None
    assert (tmp_path / "mine.json").is_file()


def test_the_readme_example_runs(tmp_path: Path) -> None:
    blocks = python_blocks(README)
    assert len(blocks) == 1
    ns, printed = run_blocks(blocks, tmp_path, "README.md")
    assert ns["rec"].dtype == "fp32" and ns["rec"].timed
    assert printed.splitlines()[1].startswith("compute 0.000138")


def test_every_name_the_api_page_uses_is_public() -> None:
    """Both ways: each `roofline.NAME` the page uses is exported from `roofline`, and each exported name is on
    the page."""
    import roofline

    used = set(re.findall(r"\broofline\.([A-Za-z_]\w*)\b(?!\.)", API_MD.read_text()))
    subpackages = {"ops", "core", "analysis", "ci", "measuring", "capture", "ceilings", "report", "session", "cli"}
    assert used - subpackages <= set(roofline.__all__), used - subpackages - set(roofline.__all__)
    assert set(roofline.__all__) - {"__version__"} <= used, set(roofline.__all__) - {"__version__"} - used


# ---------------------------------------------------------------- options and command lines
@functools.cache
def _command() -> Any:
    """The click command of the whole CLI (building it takes ~50 ms: once)."""
    import typer

    from roofline.cli.app import app

    return typer.main.get_command(app)


def test_the_guides_analyze_options_are_the_commands() -> None:
    """Both ways: each option of docs/guide.md's `analyze` table exists, and each option of the command is in
    the table (the operator's own shape options are documented per operator, in docs/operators.md)."""
    from roofline.cli.analyze import COMMON

    text = GUIDE.read_text()
    table = text[text.index("## Analyzing an operator"):text.index("Which ceiling:")]
    documented = {flag for row in table.splitlines() if row.startswith("| `")
                  for flag in re.findall(r"--[a-z][a-z0-9-]*|-o\b", row.split(" | ")[0])}
    # each option by its flags: `-o` and `--output` are one option, `--kernels/--no-kernels` one
    options = [{f for decl in option.param_decls for f in decl.split("/") if f.startswith("-")}
               for _, _, option in COMMON]
    assert [sorted(o) for o in options if not o & documented] == []  # an option the guide does not list
    assert documented - set().union(*options) == set()  # a flag the guide lists that the command lacks


def _documented_command_lines() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        text = re.sub(r"\\\n\s*", " ", page.read_text())  # shell continuation lines
        block = False
        for line in text.splitlines():
            if line.startswith("```"):
                block = not block
                continue
            if block and line.strip().removeprefix("$ ").startswith("roofline "):
                found.append((page.name, line.strip().removeprefix("$ ")))
            elif not block:
                found += [(page.name, m) for m in re.findall(r"`(roofline [^`]+)`", line)]
    return found


def test_every_documented_command_line_has_the_options_it_shows() -> None:
    """Each `roofline ...` line of the docs is parsed by the command it names, without running it: an option
    that does not exist or a value of the wrong type fails. Lines with placeholders (`roofline check`,
    `OPERATOR [shape options]`) are parsed as far as they go; missing arguments are not errors here."""
    lines = _documented_command_lines()
    assert len(lines) > 60
    bad = []
    for page, line in lines:
        try:
            args = shlex.split(line.split(" #")[0])[1:]
        except ValueError:  # prose in backquotes ("roofline time: ... the fastest GPU's time"), not a command
            continue
        cmd, path = _command(), []
        while hasattr(cmd, "commands") and args and args[0] in cmd.commands:
            path.append(args[0])
            cmd = cmd.commands[args.pop(0)]
        if hasattr(cmd, "commands"):
            continue
        try:
            cmd.make_context(" ".join(["roofline", *path]), args)
        except Exception as exc:
            if type(exc).__name__ in ("NoSuchOption", "BadParameter"):  # not: a value left out in prose
                bad.append(f"{page}: {line}: {exc.format_message()}")  # type: ignore[attr-defined]
    assert bad == []


# ---------------------------------------------------------------- exit status (docs/guide.md)
def test_the_guide_has_one_exit_status_table_and_the_readme_points_to_it() -> None:
    text = GUIDE.read_text()
    assert text.count("## Exit status") == 1
    table = text[text.index("## Exit status"):]
    assert [row.split("|")[1].strip() for row in table.splitlines() if re.match(r"\| [0-9] \|", row)] == \
        ["0", "1", "2"]
    assert "docs/guide.md#exit-status" in README.read_text()


H200_RUN = str(ROOT / "tests" / "data" / "kernels_h200.json")


def _files(tmp: Path) -> dict[str, str]:
    """Inputs and outputs the cases below name, made in `tmp`."""
    return {"exists": str(write(tmp / "exists.json", "{}")), "missing": str(tmp / "missing.json"),
            "garbage": str(write(tmp / "garbage.json", "not json")),
            "bad_toml": str(write(tmp / "bad.toml", "x = [")), "nofolder": str(tmp / "no" / "r.json"),
            "page": str(tmp / "report.html")}


@pytest.mark.parametrize(("args", "code"), [
    # 0: done
    (["specs", "show", "h100"], 0),
    (["--version"], 0),
    # 1: the work met a problem
    (["analyze", "relu", "--gpu", "h100", "--no-time", "-o", "{exists}"], 1),
    (["analyze", "relu", "--gpu", "h100", "--no-time", "-o", "{nofolder}"], 1),
    (["analyze", "gemm", "--m", "200000", "--device", "cpu", "--no-kernels"], 1),  # ~450 GiB of inputs
    # 2: bad input on the command line
    (["analyze", "gemm", "--bogus"], 2),
    (["analyze", "nosuchop"], 2),
    (["analyze", "gemm", "--m", "0", "--no-time"], 2),
    (["analyze", "gemm", "--dtype", "fp7", "--no-time"], 2),
    (["analyze", "gemm", "--gpu", "h10", "--no-time"], 2),
    (["analyze", "gemm", "--dtype", "fp8", "--gpu", "a100", "--no-time"], 2),
    (["analyze", "gemm", "--timer", "fast", "--gpu", "h100", "--no-time"], 2),
    (["analyze", "gemm", "--gpu", "h100", "--no-time", "--plot", "chart.gif"], 2),
    # 2: an input file named on the command line that is missing or malformed
    (["run", "{missing}", "--no-time"], 2),
    (["run", "{bad_toml}", "--no-time"], 2),
    (["check", "{missing}", "--baseline", H200_RUN], 2),
    (["check", "{garbage}", "--baseline", H200_RUN], 2),
    (["baseline", "update", "{missing}", "--baseline", "{exists}"], 2),
    (["compare", "gemm", "--gpus", "h100", "--prices", "{missing}"], 2),
    (["compare", "gemm", "--gpus", "h100", "--prices", "{bad_toml}"], 2),
    (["compare", "suite", "{missing}"], 2),
    (["profile", "{missing}"], 2),
    (["trace", "{missing}"], 2),
    (["trace", "{garbage}"], 2),
    (["plot", "{missing}", "--terminal"], 2),
    (["plot", "{garbage}", "--terminal"], 2),
    (["report", "{missing}", "-o", "{page}"], 2),
    (["compare", "gemm", "--gpus", "h100", "--measured", "{garbage}"], 2),
])
def test_every_command_follows_the_exit_status_table(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                     args: list[str], code: int) -> None:
    files = _files(tmp_path)
    got, _, err = run(capsys, *[a.format(**files) for a in args])
    assert got == code, err
    if code:  # one line of error, after what the command said it was starting (`profile` names the script)
        assert err.strip().splitlines()[-1].startswith("error: ") and err.count("error: ") == 1, err
        assert "Traceback" not in err


# ---------------------------------------------------------------- calibrate -o
@pytest.fixture
def fake_calibration(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """`calibrate` measuring nothing: fixed ceilings, and a log of each call (a refused output must leave it
    empty: the check comes before the work)."""
    import roofline.measuring.calibrate
    from roofline.core.model import Ceilings

    calls: list[str] = []

    def calibrate(device: str | None, quick: bool, progress: Any, **_: Any) -> tuple[Ceilings, dict[str, Any]]:
        calls.append(str(device))
        return (Ceilings(device_id="cpu", device_name="test CPU", kind="cpu", source="measured",
                         compute={"cpu_fp32": 1e11}, memory={"dram": 2e10}), {"matmul": {"fp32": {"n": 64}}})

    monkeypatch.setattr(roofline.measuring.calibrate, "calibrate", calibrate)
    return calls


def test_calibrate_writes_its_json_to_a_file(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                             fake_calibration: list[str]) -> None:
    out = tmp_path / "cal.json"
    code, printed, _ = run(capsys, "calibrate", "--device", "cpu", "--json", "-o", str(out))
    assert code == 0 and fake_calibration == ["cpu"]
    assert json.loads(out.read_text()) == json.loads(printed)  # -o writes what --json prints
    assert json.loads(printed)["compute_flops_per_s"] == {"cpu_fp32": 1e11}


def test_calibrate_refuses_an_existing_output_before_the_work(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                              fake_calibration: list[str]) -> None:
    out = write(tmp_path / "cal.json", "precious")
    code, _, err = run(capsys, "calibrate", "--device", "cpu", "-o", str(out))
    assert code == 1 and "--force" in err and fake_calibration == []
    assert out.read_text() == "precious"
    code, printed, err = run(capsys, "calibrate", "--device", "cpu", "-o", str(out), "--force")
    assert code == 0 and fake_calibration == ["cpu"]
    assert json.loads(out.read_text())["memory_bytes_per_s"] == {"dram": 2e10}
    assert "written to" in err and "cpu_fp32" in printed  # the table still prints without --json
