"""Every command line of the README's and docs/*.md's shell blocks runs, in order, in one scratch folder, so
the docs cannot drift from the tool: a later line uses an earlier line's files (the README's run -> plot ->
baseline update -> check chain).

Which blocks run: every ```sh / ```bash / ```console block, unless its fence names a word after the language:
- ```sh skip: never run (placeholders such as OPERATOR or train.py, or other tools: make, git, a CI's
  $GITHUB_STEP_SUMMARY chain);
- ```sh gpu: needs a GPU; run as written by tests/test_docs_commands_gpu.py (scripts/gpu_check.sh, stage docs).
A runnable block holds `roofline ...` lines only (no pipes, `&&` or loops: those blocks say `skip`).

On the CPU (CI), with small settings (`cpu_settings`): `analyze` gets --no-time (a GPU-sized shape takes
minutes on a CPU; the timed path is the README's `run`), `calibrate` --quick, `run` --no-kernels (torch
profiler's start-up), `collectives` without --sizes two small sizes, and `profile` lines are left to the
GPU test (a model on the CPU is 5-18 s each; tests/test_capture*.py profile small ones). Input files the
docs assume (results.json, a baseline, an ncu CSV) are copied in (`FIXTURES`). How long the CPU run takes is a
benchmark, not a test (a shared CI machine is slow on some days): scripts/bench_docs_commands.py.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path

import pytest
from helpers import ROOT, run

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELLS = ("sh", "bash", "console", "shell")
MARKS = ("skip", "gpu")
H200 = ROOT / "docs" / "results"
# Files the docs' commands read without making them, as the reader's own would be.
FIXTURES = {
    "results.json": H200 / "timing-vs-ncu" / "2026-11-30_kernels1.json",
    "before.json": H200 / "timing-vs-ncu" / "2026-11-30_kernels1.json",
    "after.json": H200 / "timing-vs-ncu" / "2026-11-30_kernels2.json",
    "model_profile.json": ROOT / "tests" / "data" / "vit_profile.json",
    "baselines/h200.json": H200 / "timing-vs-ncu" / "2026-11-30_kernels1.json",
    # `ncu --csv --page raw` of examples/cnn.py --preset tiny's forward on the H200 (2026-12-01, 110 kernels)
    "app.csv": ROOT / "tests" / "data" / "ncu_forward.csv",
}


def blocks(page: Path) -> list[tuple[str, list[str]]]:
    """Each shell block of `page`: (its mark, '' when none; its command lines, continuation lines joined,
    blank and comment lines dropped, a leading `$ ` removed)."""
    found = []
    for info, body in re.findall(r"^```([^\n]*)\n(.*?)^```", page.read_text(), re.S | re.M):
        words = info.split()
        if not words or words[0] not in SHELLS:
            continue
        mark = next((w for w in words[1:] if w in MARKS), "")
        lines = [line.strip().removeprefix("$ ") for line in re.sub(r"\\\n\s*", " ", body).splitlines()]
        found.append((mark, [line for line in lines if line and not line.startswith("#")]))
    return found


def commands(marks: tuple[str, ...]) -> list[tuple[str, list[str]]]:
    """(where, argv without `roofline`) of every line of the blocks with one of `marks`, in page order."""
    out = []
    for page in PAGES:
        for mark, lines in blocks(page):
            if mark not in marks:
                continue
            for line in lines:
                argv = shlex.split(os.path.expandvars(line), comments=True)
                where = f"{page.name}: {line}"
                assert argv[0] == "roofline", f"{where}: not a roofline command (fence the block ```sh skip)"
                assert not {"&&", "||", "|", ";", "for", "do", "done"} & set(argv), \
                    f"{where}: shell syntax (fence the block ```sh skip)"
                out.append((where, argv[1:]))
    return out


def cpu_settings(argv: list[str]) -> list[str] | None:
    """The command as CI runs it on the CPU (module docstring), or None when CI leaves it to the GPU test."""
    if argv[0] == "profile":
        return None
    if argv[0] == "analyze" and "--no-time" not in argv:
        return [*argv, "--no-time"]
    if argv[0] == "calibrate" and argv[1:2] not in (["ops"], ["energy"]) and "--ops" not in argv:
        return [*argv, "--quick"]  # the ceilings alone: the modes take no --quick (the sweep's --budget is its size)
    if argv[0] == "run":
        return [*argv, "--no-kernels"]
    if argv[0] == "collectives" and "--sizes" not in argv:  # gloo over 1KiB..64MiB is ~20 s on 2 cores
        return [*argv, "--sizes", "1KiB,64KiB"]
    return argv


def scratch(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder the commands run in: the checkout's suites and examples, the fixtures, $GITHUB_STEP_SUMMARY."""
    for name in ("suites", "examples"):
        (tmp / name).symlink_to(ROOT / name)
    for name, source in FIXTURES.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, tmp / name)
    monkeypatch.chdir(tmp)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp / "summary.md"))


def test_the_marks_are_used() -> None:
    """The blocks CI cannot run say so; the README's chain is in a runnable block."""
    every = {page.name: blocks(page) for page in PAGES}
    assert [m for m, _ in every["README.md"]] == ["skip", ""]  # `make demo`, then "What it does"
    readme = [line for _, lines in every["README.md"][1:] for line in lines]
    chain = [next(i for i, line in enumerate(readme) if line.startswith(f"roofline {c}"))
             for c in ("run ", "baseline update", "check ")]
    assert chain == sorted(chain)  # run, then the baseline from it, then check against that baseline
    assert {m for blocks_ in every.values() for m, _ in blocks_} == {"", "skip", "gpu"}


def test_no_documented_command_overwrites_another_ones_output() -> None:
    """The GPU test runs every runnable and gpu line in one folder, in page order: a second `-o X` without
    --force is refused there (the first one's file exists), as it was when docs/energy.md wrote the smoke.json
    that docs/collectives.md had written (found on the H200, 2026-12-02)."""
    written: dict[str, str] = {}
    clashes = []
    for where, argv in commands(("", "gpu")):
        outs = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("-o", "--output")]
        for out in outs:
            if out in written and "--force" not in argv:
                clashes.append(f"{where} writes {out}, which {written[out]} wrote")
            written.setdefault(out, where)
    assert not clashes, "\n".join(clashes)


def test_every_documented_command_runs_on_the_cpu(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    scratch(tmp_path, monkeypatch)
    cmds = commands(("",))
    assert len(cmds) >= 20
    ran = []
    for where, argv in cmds:
        small = cpu_settings(argv)
        if small is None:
            continue
        code, _, err = run(capsys, *small)
        assert code == 0, f"{where} (run as `roofline {shlex.join(small)}`): exit {code}\n{err}"
        ran.append(small[0])
    assert {"specs", "ops", "analyze", "calibrate", "run", "plot", "baseline", "check", "occupancy", "compare",
            "report"} <= set(ran)
    assert (tmp_path / "decode.png").is_file() and (tmp_path / "base.json").is_file()
