"""`roofline sol PROBLEM.py|DIR [--time [--candidate NEW.py|DIR]]`: the speed of light of kernel-benchmark
problems (KernelBench's files, or SOL-ExecBench's folders: one row per workload), and candidates timed by a timer
they cannot fool (docs/sol.md, docs/sol-execbench.md)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Annotated

import typer

from roofline.cli.common import at_least, check_choice, check_outputs, note
from roofline.cli.results import save_and_print
from roofline.core.errors import RooflineError

DTYPE_CHOICES = ("fp32", "fp16", "bf16", "fp64")


def sol_cmd(
    path: Annotated[Path, typer.Argument(help="A problem file (class Model, get_inputs, get_init_inputs) or a "
                                              "folder of them; or a SOL-ExecBench problem folder (definition.json, "
                                              "workload.jsonl: one row per workload) or a folder of them.")],
    gpu: Annotated[str | None, typer.Option("--gpu", help="Spec for the roof (any GPU: the speed of light needs "
                                                          "no data).")] = None,
    dtype: Annotated[str | None, typer.Option("--dtype", help="Cast the model and its floating inputs: fp32, fp16, "
                                                              "bf16 or fp64 (default: as the problem makes them).")
                     ] = None,
    time: Annotated[bool, typer.Option("--time", help="Time the reference here (and --candidate), check the "
                                                      "outputs, judge the times against the bounds.")] = False,
    candidate: Annotated[Path | None, typer.Option("--candidate", help="With --time: a file defining ModelNew (run "
                                                   "in a child process), or for a folder of problems a folder of "
                                                   "files named as the problems; for SOL-ExecBench a solution.json "
                                                   "(Python languages) or a .py defining run.")] = None,
    device: Annotated[str | None, typer.Option("--device", help="cpu, cuda or cuda:N.")] = None,
    scale: Annotated[int | None, typer.Option("--scale", parser=at_least("--scale"),
                                              help="SOL_SCALE for problems that read it "
                                              "(suites/sol: 1 for a CPU, 64 for a large GPU).")] = None,
    rtol: Annotated[float | None, typer.Option("--rtol", help="Relative tolerance of the output check (default: "
                                               "the dtype's).")] = None,
    atol: Annotated[float | None, typer.Option("--atol", help="Absolute tolerance (default: rtol x the RMS of the "
                                               "reference's output).")] = None,
    top: Annotated[int, typer.Option("--top", parser=at_least("--top"), help="Ops listed for one problem.")] = 10,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write the results document here.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --output if it exists.")] = False,
    json_: Annotated[bool, typer.Option("--json", help="Print the results document.")] = False,
) -> None:
    """The speed of light of a problem (the fastest any kernel could run it): its FLOPs, minimum bytes, the sum
    of its ops' roofline times and the bound for it as one fused kernel. With --time, the reference (and a
    candidate's ModelNew) timed as device time of every kernel on any stream, outputs checked on fresh inputs,
    a time below the fused bound refused as impossible; a candidate's SOL-Score (SOL-ExecBench's, against the
    reference's time and the fused bound) and KernelBench's fast_p beside its speedup. Exit status 1 when a
    problem failed or a verdict is not ok."""
    check_choice("--dtype", dtype, DTYPE_CHOICES)
    check_outputs(force, files=(output,))
    from roofline.capture.sol import sol  # torch: after the refusals
    from roofline.measuring.untrusted import TimerSettings
    from roofline.report.progress import StatusLine

    settings = TimerSettings(rtol=rtol, atol=atol)
    # with --json stdout carries the document alone: a problem's own prints go to stderr
    quiet = contextlib.redirect_stdout(sys.stderr) if json_ else contextlib.nullcontext()
    with quiet, StatusLine(shorter="leave out --time: the speed of light alone needs no timing") as line:
        run = sol(path, gpu=gpu, dtype=dtype, time=time, candidate=candidate, device=device, scale=scale,
                  settings=settings, progress=line)
    for msg in run.target.messages:
        note(msg)
    doc = run.document()
    save_and_print(doc, output, force, json_)
    if not json_:
        from roofline.report.sol import sol_views
        from roofline.report.text import show

        show(*sol_views(doc, top=top))
        if output is not None:
            note(f"results written to {output}")
    if not run.ok:
        bad = len(run.failed) + sum(1 for r in run.results for v in r.verdicts.values() if not v.ok)
        raise RooflineError(f"{bad} problem(s) or timing(s) did not pass (see above)")
