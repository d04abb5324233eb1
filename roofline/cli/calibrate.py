"""`roofline calibrate`: measure this machine's ceilings and store them for `analyze`, `run` and `plot`;
`calibrate ops`: the operator database predicted times come from; `calibrate energy`: the GPU's energy model.

Each mode checks its options, calls the one library function that measures and stores (`measuring.calibrate.
calibrate`, `measuring.opsweep.calibrate_ops`, `measuring.energy_calibrate.calibrate_and_store`) and prints
what it returned. `calibrate --ops` and `calibrate --energy`, the spellings from before the modes were
sub-commands, still run as they did (hidden from `--help`), with one note that names the new spelling.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from roofline.cli.common import THREADS, check_outputs, note, out, use_threads
from roofline.core.device import cuda_index
from roofline.core.errors import Interrupted, UsageError
from roofline.core.model import Ceilings

# The options of more than one mode, declared once (each mode's own --json and -o say what they hold).
Device = Annotated[str | None, typer.Option("--device", help="cpu, cuda or cuda:N (default: the GPU, else the "
                                            "CPU).")]
Force = Annotated[bool, typer.Option("--force", help="Overwrite --output if it exists.")]
# `calibrate --ops ...`, `calibrate --energy ...`: what the old spelling says before the mode runs.
OLD_SPELLING = "`calibrate {old}` is the old spelling: use `roofline calibrate {new}`"

calibrate_app = typer.Typer()


@calibrate_app.callback(invoke_without_command=True)
def calibrate_cmd(
    ctx: typer.Context,
    quick: Annotated[bool, typer.Option("--quick", help="Fewer shapes: no L2 sweep on a GPU (about 10 s), one "
                                                     "matmul size per dtype on the CPU (under 1 s).")] = False,
    device: Device = None,
    json_: Annotated[bool, typer.Option("--json", help="Print the measured ceilings as JSON.")] = False,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Also write the measured ceilings "
                                                   "(the JSON of --json) to this file.")] = None,
    force: Force = False,
    threads: Annotated[str | None, THREADS.annotated()] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Store this CPU calibration even when it ran on a busy "
                                          "machine and measured less than the stored roof (kept by default).")]
    = False,
    # the old spellings of `calibrate ops` and `calibrate energy`, and the options of the first
    ops: Annotated[bool, typer.Option("--ops", hidden=True, help="Old spelling of `calibrate ops`.")] = False,
    suite: Annotated[Path | None, typer.Option("--suite", hidden=True)] = None,
    budget: Annotated[str | None, typer.Option("--budget", hidden=True)] = None,
    db: Annotated[Path | None, typer.Option("--db", hidden=True)] = None,
    energy: Annotated[bool, typer.Option("--energy", hidden=True, help="Old spelling of `calibrate energy`.")]
    = False,
) -> None:
    """Measure this machine's ceilings (HBM, L2, shared memory, matmul per dtype, FP32 FMA) and store them;
    `analyze` and `plot` then draw measured roofs beside the datasheet's. `calibrate ops` measures how close each
    operator family comes to its roof instead (the operator database predictions use), `calibrate energy` the
    GPU's energy model."""
    given: dict[str, Any] = {"--quick": quick, "--device": device, "--json": json_, "-o/--output": output,
                             "--force": force, "--threads": threads, "--replace": replace, "--ops": ops,
                             "--suite": suite, "--budget": budget, "--db": db, "--energy": energy}
    if ctx.invoked_subcommand is not None:  # `calibrate --device cpu ops`: the mode's options go after it
        for flag, value in given.items():
            if value not in (None, False):
                raise UsageError(f"{flag} before `{ctx.invoked_subcommand}`: a mode's options go after it "
                                 f"(roofline calibrate {ctx.invoked_subcommand} --help)")
        return
    if ops or energy:
        _old_spelling(given)
        return
    for flag in ("--suite", "--budget", "--db"):
        if given[flag] is not None:
            raise UsageError(f"{flag} is an option of --ops")
    measure_ceilings(quick, device, json_, output, force, threads, replace)


@calibrate_app.command("ops")
def ops_cmd(
    suite: Annotated[Path | None, typer.Option("--suite", help="The sweep file (default "
                                                "suites/sweeps/ops.toml).")] = None,
    device: Device = None,
    budget: Annotated[str | None, typer.Option("--budget", help="Stop starting points after this long (10m, 90s, "
                                               "1h30m; default 10m); run again to resume.")] = None,
    db: Annotated[Path | None, typer.Option("--db", help="The database file to add to (default: this device's "
                                            "in the cache).")] = None,
    json_: Annotated[bool, typer.Option("--json", help="Print the sweep's summary as JSON.")] = False,
) -> None:
    """Sweep the catalog's operators over shapes (suites/sweeps/ops.toml) and store how close each comes to its
    roof: the operator database predicted times come from (docs/prediction.md). The database is written as the
    sweep goes: run again to resume."""
    sweep_ops(suite, device, db, budget, json_)


@calibrate_app.command("energy")
def energy_cmd(
    device: Device = None,
    json_: Annotated[bool, typer.Option("--json", help="Print the energy model as JSON.")] = False,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Also write the energy model (the JSON "
                                                   "of --json) to this file.")] = None,
    force: Force = False,
    replace: Annotated[bool, typer.Option("--replace", help="Store this fit even when the stored model fits "
                                          "better (kept by default).")] = False,
) -> None:
    """Fit the GPU's energy model (about 20 s): pJ per FLOP per pipe, pJ per HBM byte, static watts, the power
    cap; stored beside the ceilings, which stay as they are (docs/energy.md)."""
    fit_energy(device, json_, output, force, replace)


def _old_spelling(given: dict[str, Any]) -> None:
    """`calibrate --ops ...` and `calibrate --energy ...` as they ran before the modes were sub-commands: the
    same checks, each a usage error, then a note with the new spelling and the mode."""
    if given["--ops"] and given["--energy"]:
        raise UsageError("--ops and --energy are two calibrations: run one at a time")
    if given["--ops"]:
        for flag in ("--quick", "-o/--output", "--force", "--replace", "--threads"):
            if given[flag]:  # the sweep writes only --db: an -o it ignored would leave no file where one was asked
                raise UsageError(f"{flag} is not an option of --ops (its database is --db FILE)")
        sweep_ops(given["--suite"], given["--device"], given["--db"], given["--budget"], given["--json"],
                  said=OLD_SPELLING.format(old="--ops", new="ops"))
        return
    for flag in ("--suite", "--budget", "--db"):
        if given[flag] is not None:
            raise UsageError(f"{flag} is an option of --ops")
    # --quick and --threads were taken and not used by --energy: still so
    fit_energy(given["--device"], given["--json"], given["-o/--output"], given["--force"], given["--replace"],
               said=OLD_SPELLING.format(old="--energy", new="energy"))


def measure_ceilings(quick: bool, device: str | None, json_: bool, output: Path | None, force: bool,
                     threads: str | None, replace: bool) -> None:
    """`calibrate`: the ceilings (`measuring.calibrate.calibrate`), stored, shown as tables or JSON."""
    from roofline.ceilings.store import store_path
    from roofline.measuring.calibrate import calibrate
    from roofline.measuring.device import detect_gpus
    from roofline.measuring.target import local_device
    from roofline.report.progress import StatusLine
    from roofline.report.text import calibration_table, l2_sweep_table

    local_device(device, detect_gpus())  # `cuda:x`, or a GPU this machine lacks: one line, exit 2
    check_outputs(force, files=(output,))  # before the work: a calibration takes seconds to minutes
    use_threads(threads)  # measure_cpu records torch.get_num_threads() in the details and notes
    # the command line's one status line (report/progress.py): its clock moves, and a pipe or a log gets no
    # blank line where rich's own transient bar left one
    with StatusLine(shorter="--quick measures fewer shapes") as line:
        line.status("calibrating")
        ceilings, details = calibrate(device, quick, line.status, replace=replace)
    tables = [] if json_ else [calibration_table(ceilings, details),
                               *([l2_sweep_table(details["l2_sweep"])] if details.get("l2_sweep") else [])]
    _emit(calibration_json(ceilings, details), output, force, json_, tables)
    stored = f"stored in {store_path()}" if details.get("stored", True) else "not stored (see the note above)"
    note(details.get("kept_stored") or stored + _written(output))


def calibration_json(ceilings: Ceilings, details: dict[str, Any]) -> str:
    """What `--json` prints and `-o` writes: the measured rates per pipe and per memory level, and the details
    of each measurement."""
    return json.dumps({"compute_flops_per_s": ceilings.compute, "memory_bytes_per_s": ceilings.memory,
                       "details": details}, indent=2, default=str)


def sweep_ops(suite: Path | None, device: str | None, db: Path | None, budget: str | None, json_: bool,
              said: str | None = None) -> None:
    """`calibrate ops`: the operator sweep (`measuring.opsweep.calibrate_ops`) into its database, resumed where
    one is there; its summary as a table or JSON. `said`: a note for once the options are checked."""
    from roofline.core import validate
    from roofline.measuring.opsweep import DEFAULT_BUDGET_S, SweepInterrupted, calibrate_ops
    from roofline.report.predict import sweep_summary
    from roofline.report.progress import StatusLine
    from roofline.report.text import console

    if device is not None and device != "cpu" and not device.startswith("cuda"):
        raise UsageError(f"unknown device '{device}' (use cpu, cuda or cuda:N)")
    budget_s = DEFAULT_BUDGET_S if budget is None else validate.duration_arg("", "budget", budget)
    if said:
        note(said)
    try:
        with StatusLine(shorter="a shorter --budget is quicker") as line:
            store, result = calibrate_ops(suite, device, db, budget_s, line)
    except SweepInterrupted as stop:  # the database is written as the sweep goes: say what it keeps
        raise Interrupted(f"{stop.measured} points measured kept in {stop.db.path} ({len(stop.db.points)} in all); "
                          "the same command resumes") from None
    if json_:
        out(json.dumps({"db": str(store.path), "device": store.device, "points": len(store.points),
                        "measured": result.measured, "already_there": result.skipped_known,
                        "retimed": result.retimed,
                        "skipped": result.skipped, "left": result.left, "seconds": result.seconds}, indent=2))
    else:
        console().print(sweep_summary(store, result))
    note(f"operator database: {store.path}" + (f"; {result.left} points left: run again to resume"
                                               if result.left else ""))


def fit_energy(device: str | None, json_: bool, output: Path | None, force: bool, replace: bool,
               said: str | None = None) -> None:
    """`calibrate energy`: the GPU's energy model (`measuring.energy_calibrate.calibrate_and_store`), stored,
    shown as a table or JSON. `said`: a note for once the options are checked."""
    from roofline.ceilings.store import energy_store_path
    from roofline.measuring.device import detect_gpus
    from roofline.measuring.energy import require_counter
    from roofline.measuring.energy_calibrate import calibrate_and_store
    from roofline.measuring.target import local_device
    from roofline.report.energy import energy_model_table
    from roofline.report.progress import StatusLine

    gpus = detect_gpus()
    local_device(device, gpus)  # `cuda:x`, or a GPU this machine lacks: one line, exit 2
    check_outputs(force, files=(output,))  # before the work
    if device == "cpu" or (device is None and not gpus):
        require_counter("cpu")  # one line, exit 2
    if said:
        note(said)
    with StatusLine() as line:
        model, details = calibrate_and_store(cuda_index(device), line.status, replace=replace)
    text = json.dumps({"energy_model": model.to_dict(), "details": details}, indent=2, default=str)
    _emit(text, output, force, json_, [] if json_ else [energy_model_table(model, details)])
    note(details.get("kept_stored") or f"stored in {energy_store_path()}" + _written(output))


def _written(output: Path | None) -> str:
    """The end of the closing note when -o wrote the document too."""
    return f"; written to {output}" if output is not None else ""


def _emit(text: str, output: Path | None, force: bool, json_: bool, tables: list[Any]) -> None:
    """A calibration's document written to `output` (when given; a file another writer made meanwhile is refused
    without `force`), then printed as JSON or as its tables."""
    from roofline.core.files import atomic_write
    from roofline.report.text import console

    if output is not None:
        atomic_write(output, text + "\n", exclusive=not force)
    if json_:
        out(text)
    for table in tables:
        console().print(table)
