"""`roofline profile SCRIPT.py [-- ARGS]`: every aten op a PyTorch script runs, on the roofline."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from roofline.analysis.profile_view import BY
from roofline.cli.common import at_least, check_choice, check_outputs, note
from roofline.cli.history import HistoryOption, add_to_history
from roofline.cli.results import save_and_print
from roofline.core.device import cuda_index
from roofline.core.document import Document
from roofline.core.errors import UsageError
from roofline.core.files import existing_file
from roofline.core.progress import QUIET
from roofline.report.progress import StatusLine

if TYPE_CHECKING:  # torch: imported when a script is profiled, not when the command line starts
    from roofline.capture.profile import Profile
    from roofline.measuring.target import Target


def profile_cmd(
    script: Annotated[Path, typer.Argument(help="The Python script to run (as `python SCRIPT ARGS` would).")],
    args: Annotated[list[str] | None, typer.Argument(help="The script's own arguments, after `--`.")] = None,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write the results document here.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --output if it exists.")] = False,
    json_: Annotated[bool, typer.Option("--json", help="Print the results document.")] = False,
    top: Annotated[int, typer.Option("--top", parser=at_least("--top"), help="Operators in the top table.")] = 20,
    by: Annotated[str, typer.Option("--by", help="Roll-up: op, module, kernel or phase.")] = "op",
    depth: Annotated[int | None, typer.Option("--depth", parser=at_least("--depth"), help="Module path components "
                                              "kept in the module roll-up (layers.0 and layers.1 roll together).")
                     ] = None,
    no_group: Annotated[bool, typer.Option("--no-group", help="Each record, layer and fusion on a row of its own "
                                           "(by default repeated layers are one row: layers.{0..15}.mlp).")
                        ] = False,
    region: Annotated[list[str] | None, typer.Option("--region", help="Keep only this region (repeatable); "
                                                     "the script marks regions with roofline.region(NAME).")] = None,
    gpu: Annotated[str | None, typer.Option("--gpu", help="Spec for the roof (another GPU: analytic only).")] = None,
    device: Annotated[str | None, typer.Option("--device", help="cpu, cuda or cuda:N.")] = None,
    no_time: Annotated[bool, typer.Option("--no-time", help="Run without data (FakeTensorMode): FLOPs, bytes "
                                          "and the predicted time only; tensors hold no data, nothing is computed "
                                          "but small constants, the program is left as found (docs/profile.md)."
                                          )] = False,
    counters: Annotated[bool, typer.Option("--counters", help="Then run the script once more under Nsight "
                                           "Compute (ncu): each record gets its kernels' DRAM/L2/L1 bytes and "
                                           "FLOPs (the last entry of each region; docs/counters.md).")] = False,
    ncu_csv: Annotated[Path | None, typer.Option("--ncu-csv", help="With --counters: keep ncu's raw CSV "
                                                 "here.")] = None,
    tokens: Annotated[int | None, typer.Option("--tokens", parser=at_least("--tokens"), help="Tokens the profiled "
                                               "step processes (batch x sequence; a decode step: the batch): "
                                               "tokens/s and FLOPs per token beside MFU.")] = None,
    db: Annotated[Path | None, typer.Option("--db", help="Operator database for predicted times (default: "
                                            "this GPU's, from `roofline calibrate ops`).")] = None,
    energy: Annotated[bool, typer.Option("--energy", help="Each operator's energy: the stored energy model's "
                                         "estimate (`roofline calibrate energy`; a script's step runs once, so "
                                         "it is modeled, not measured: docs/energy.md).")] = False,
    history: HistoryOption = None,
) -> None:
    """Profile a script: every aten operator it runs, with FLOPs, minimum bytes, device time and what fixing
    each is worth. Profiles the regions the script marks with `with roofline.region("step"):` (the whole run
    when it marks none). Inside a torchrun job each rank profiles its own GPU and writes its own document."""
    check_choice("--by", by, BY)
    ncu = _counters_preflight(counters, no_time, ncu_csv)
    if energy:
        from roofline.cli.energy import energy_preflight

        energy_preflight(no_time)
    rank, device, output = _torchrun(device, output, no_time)
    check_outputs(force, files=(output, ncu_csv))
    existing_file(script, "script")
    import roofline.capture.script  # noqa: F401  (torch, ~3 s: imported before the analysis is timed)

    started = time.perf_counter()
    prof = _profile(script, args or [], region or (), json_, rank, _starting(script, device, no_time, ncu, energy),
                    gpu=gpu, device=device, time=not no_time, tokens=tokens, db=db)
    said = prof.target.messages if prof.target else []
    for msg in said:
        note(msg)
    prof.require_ops(script.name)
    _say(f"{prof.summary.calls or 0} op calls in {len(prof.records)} records, analysed in "
         f"{time.perf_counter() - started:.1f} s")
    if ncu:
        _counters(prof, script, args or [], ncu, ncu_csv, force)
    if energy:
        _energy(prof)
    doc = prof.document()
    save_and_print(doc, output, force, json_ and rank == 0)
    if not rank:  # a torchrun job's first rank: one run of the job in the store
        add_to_history(doc, history, where=str(output or script))
    if rank and output is not None:
        note(f"rank {rank}: results written to {output}")
    elif not rank and not json_:
        _views(doc, prof, said, top, by, depth, not no_group)
        if output is not None:
            note(f"results written to {output}")


def _starting(script: Path, device: str | None, no_time: bool, ncu: str | None,
              energy: bool) -> Callable[[Target], None]:
    """What runs once the target is resolved and before the script does: refuse (--counters, --energy where
    they cannot run), or say what follows."""

    def starting(target: Target) -> None:
        if ncu:
            from roofline.cli.counters import counters_target

            counters_target(target)
        if energy:
            from roofline.cli.energy import profile_energy_target

            profile_energy_target(target)
        timed = target.time_device is not None  # --gpu of a GPU not here: analytic too
        _say(f"profiling {script.name} ({'timed' if timed else 'analytic'}; the script's output follows)")
        _warn_if_shared(device, no_time)

    return starting


def _profile(script: Path, args: list[str], regions: Sequence[str], json_: bool, rank: int,
             check: Callable[[Target], None], **options: Any) -> Profile:
    """The script profiled (capture/script.py): with --json its own prints go to stderr (stdout carries the
    document alone); the analysis after its run (seconds on a GPU: the profiler's trace) under a moving status
    line on rank 0, drawn from the first step the profile reports after the run; a script that raised has its
    traceback written before the one-line error."""
    from roofline.capture.script import ScriptError, profile_script  # torch: after the refusals (3 s here)

    quiet = contextlib.redirect_stdout(sys.stderr) if json_ else contextlib.nullcontext()
    line = StatusLine(shorter="--region keeps fewer op calls") if rank == 0 else contextlib.nullcontext(QUIET)
    try:
        with quiet, line as progress:
            return profile_script(script, args, regions=regions, check=check, progress=progress, **options)
    except ScriptError as exc:
        sys.stderr.write(exc.script_traceback)
        raise


def _energy(prof: Profile) -> None:
    """`--energy`: each record's modeled energy, and the step's in one note."""
    from roofline.capture.energy import model_profile_energy
    from roofline.cli.energy import profile_energy_note

    model_profile_energy(prof)
    if prof.summary.energy is not None:
        note(profile_energy_note(prof.records, prof.summary.energy.to_dict()))


def _views(doc: Document, prof: Profile, said: Sequence[str], top: int, by: str, depth: int | None,
           group: bool) -> None:
    """The terminal views of the profile, less the notes said already (the target's, noted above); `group`:
    repeated layers one row each (analysis/repeats.py)."""
    from roofline.analysis.profile_view import profile_view
    from roofline.report.profile import profile_views, profile_warnings
    from roofline.report.text import console

    con = console()
    view = profile_view(doc, top=top, by=by, depth=depth, summary=prof.summary, group=group).without_notes(said)
    for part in profile_views(view, width=con.width, warnings=profile_warnings(doc.records)):
        con.print(part)


def _counters_preflight(counters: bool, no_time: bool, ncu_csv: Path | None) -> str | None:
    """`--counters`: the ncu to run, checked before any work (no ncu, --no-time, a torchrun job, --ncu-csv
    alone: one line, exit 2); None without --counters."""
    if ncu_csv is not None and not counters:
        raise UsageError("--ncu-csv keeps the CSV of a --counters run: add --counters")
    if not counters:
        return None
    from roofline.cli.counters import counters_preflight
    from roofline.measuring.collectives import in_torchrun

    ncu = counters_preflight(no_time, runs="the script again")
    if in_torchrun() and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise UsageError("--counters profiles one process: run it outside torchrun")
    return ncu


def _counters(prof: Profile, script: Path, args: list[str], ncu: str, keep: Path | None, force: bool) -> None:
    """The profile's records with their Nsight Compute counters (ncu/profile.py), under a progress line
    that says ncu is slow; a join that did not match is a note (the summary's notes say why)."""
    from roofline.ncu.profile import add_counters
    from roofline.ncu.run import SLOW
    from roofline.report.progress import StatusLine

    started = time.perf_counter()
    _say(f"counters: running {script.name} again under Nsight Compute ({SLOW})")
    with StatusLine(shorter="leave out --counters: the timed profile alone is much quicker") as line:
        add_counters(prof, script, args, ncu, line, keep, force)
    got = prof.summary.counters
    if got is not None and got.error:
        note(f"counters left off: {got.error} (in {got.profiled})")
    elif got is not None:
        _say(f"counters of {got.kernels or 0} kernels on {got.records or 0} records ({got.profiled}), in "
             f"{time.perf_counter() - started:.1f} s")
    if keep is not None:
        note(f"ncu's raw CSV written to {keep}")


def _torchrun(device: str | None, output: Path | None, no_time: bool) -> tuple[int, str | None, Path | None]:
    """(rank, device, output) in a torchrun job of 2 ranks or more: each rank times its own GPU (LOCAL_RANK,
    unless --device names one) and writes its own document (rank 0 FILE, rank R FILE.rankR.json); only rank 0
    prints the views. Outside one: rank 0 and the options as given."""
    from roofline.measuring.collectives import in_torchrun

    if not in_torchrun() or int(os.environ["WORLD_SIZE"]) < 2:
        return 0, device, output
    rank = int(os.environ["RANK"])
    if device is None and not no_time:
        import torch

        if torch.cuda.is_available():
            device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
            torch.cuda.set_device(device)
    if rank and output is not None:
        output = output.with_name(f"{output.stem}.rank{rank}{output.suffix}")
    return rank, device, output


def _say(msg: str) -> None:
    """A progress line on stderr (stdout stays the script's and the views')."""
    sys.stderr.write(f"roofline: {msg}\n")
    sys.stderr.flush()


def _warn_if_shared(device: str | None, no_time: bool) -> None:
    """Say so when NVML sees other processes on the GPU about to be timed: their kernels share its SMs."""
    if no_time:
        return
    from roofline.measuring.device import detect_gpus, other_processes

    gpus = detect_gpus()
    if not gpus or (device or "cuda").startswith("cpu"):
        return
    index = cuda_index(device)
    pids = other_processes(index) if index < len(gpus) else []
    if pids:
        note(f"GPU {index} is shared with {len(pids)} other process(es) (PIDs {', '.join(map(str, pids[:5]))}): "
             "their kernels compete for it, so times can be longer than on the GPU alone")
