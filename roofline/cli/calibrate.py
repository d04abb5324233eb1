"""`roofline calibrate`: measure this machine's ceilings and store them for `analyze`, `run` and `plot`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from roofline.cli.common import THREADS, check_outputs, note, out, use_threads
from roofline.core.device import cuda_index
from roofline.core.errors import Interrupted, UsageError
from roofline.core.model import Ceilings


def calibrate_cmd(
    quick: Annotated[bool, typer.Option("--quick", help="Fewer shapes: no L2 sweep on a GPU (about 10 s), one "
                                                     "matmul size per dtype on the CPU (under 1 s).")] = False,
    device: Annotated[str | None, typer.Option("--device", help="cpu, cuda or cuda:N (default: the GPU, "
                                                  "else the CPU).")] = None,
    json_: Annotated[bool, typer.Option("--json", help="Print the measured ceilings as JSON.")] = False,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Also write the measured ceilings "
                                                   "(the JSON of --json) to this file.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --output if it exists.")] = False,
    threads: Annotated[str | None, THREADS.annotated()] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Store this CPU calibration even when it ran on a busy "
                                          "machine and measured less than the stored roof (kept by default).")]
    = False,
    ops: Annotated[bool, typer.Option("--ops", help="Sweep the catalog's operators over shapes (suites/sweeps/ops.toml"
                                      ") and store their measured efficiency, for predicted times "
                                      "(docs/prediction.md).")] = False,
    suite: Annotated[Path | None, typer.Option("--suite", help="--ops: the sweep file (default "
                                                "suites/sweeps/ops.toml).")] = None,
    budget: Annotated[str | None, typer.Option("--budget", help="--ops: stop starting points after this long "
                                               "(10m, 90s, 1h30m; default 10m); run again to resume.")] = None,
    db: Annotated[Path | None, typer.Option("--db", help="--ops: the database file to add to (default: this "
                                            "device's in the cache).")] = None,
    energy: Annotated[bool, typer.Option("--energy", help="Fit the GPU's energy model instead (about 20 s): pJ per "
                                         "FLOP per pipe, pJ per HBM byte, static watts, the power cap; stored "
                                         "beside the ceilings, which stay as they are (docs/energy.md).")] = False,
) -> None:
    """Measure this machine's ceilings (HBM, L2, shared memory, matmul per dtype, FP32 FMA) and store them;
    `analyze` and `plot` then draw measured roofs beside the datasheet's. With --ops, measure how close each
    operator family comes to its roof instead (the operator database predictions use)."""
    if ops and energy:
        raise UsageError("--ops and --energy are two calibrations: run one at a time")
    if ops:
        for flag, given in (("--quick", quick), ("-o/--output", output), ("--force", force), ("--replace", replace),
                            ("--threads", threads)):
            if given:  # the sweep writes only --db: an -o it ignored would leave no file where one was asked for
                raise UsageError(f"{flag} is not an option of --ops (its database is --db FILE)")
        return _calibrate_ops(suite, device, db, budget, json_)
    for flag, given in (("--suite", suite), ("--budget", budget), ("--db", db)):
        if given is not None:
            raise UsageError(f"{flag} is an option of --ops")
    from roofline.ceilings.store import store_path
    from roofline.measuring.calibrate import calibrate
    from roofline.measuring.device import detect_gpus
    from roofline.measuring.target import local_device
    from roofline.report.progress import StatusLine
    from roofline.report.text import calibration_table, l2_sweep_table

    local_device(device, detect_gpus())  # `cuda:x`, or a GPU this machine lacks: one line, exit 2
    check_outputs(force, files=(output,))  # before the work: a calibration takes seconds to minutes
    if energy:
        _energy(device, json_, output, replace)
        return
    use_threads(threads)  # measure_cpu records torch.get_num_threads() in the details and notes
    # the command line's one status line (report/progress.py): its clock moves, and a pipe or a log gets no
    # blank line where rich's own transient bar left one
    with StatusLine(shorter="--quick measures fewer shapes") as line:
        line.status("calibrating")
        ceilings, details = calibrate(device, quick, line.status, replace=replace)
    tables = [] if json_ else [calibration_table(ceilings, details),
                               *([l2_sweep_table(details["l2_sweep"])] if details.get("l2_sweep") else [])]
    _emit(calibration_json(ceilings, details), output, json_, tables)
    if details.get("kept_stored"):
        note(details["kept_stored"])
    else:
        note(f"stored in {store_path()}" + (f"; written to {output}" if output is not None else ""))


def calibration_json(ceilings: Ceilings, details: dict[str, Any]) -> str:
    """What `--json` prints and `-o` writes: the measured rates per pipe and per memory level, and the details
    of each measurement."""
    return json.dumps({"compute_flops_per_s": ceilings.compute, "memory_bytes_per_s": ceilings.memory,
                       "details": details}, indent=2, default=str)


def _calibrate_ops(suite: Path | None, device: str | None, db: Path | None, budget: str | None, json_: bool) -> None:
    from roofline.core import validate
    from roofline.measuring.opsweep import DEFAULT_BUDGET_S, SweepInterrupted, calibrate_ops
    from roofline.report.predict import sweep_summary
    from roofline.report.progress import StatusLine
    from roofline.report.text import console

    if device is not None and device != "cpu" and not device.startswith("cuda"):
        raise UsageError(f"unknown device '{device}' (use cpu, cuda or cuda:N)")
    budget_s = DEFAULT_BUDGET_S if budget is None else validate.duration_arg("", "budget", budget)
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


def _energy(device: str | None, json_: bool, output: Path | None, replace: bool) -> None:
    """`calibrate --energy`: the energy model of the GPU (`measuring.energy_calibrate`), stored and shown."""
    from roofline.ceilings.store import energy_store_path
    from roofline.measuring.energy import require_counter
    from roofline.measuring.energy_calibrate import calibrate_and_store
    from roofline.report.energy import energy_model_table
    from roofline.report.progress import StatusLine

    if device == "cpu" or (device is None and not _has_gpu()):
        require_counter("cpu")  # one line, exit 2
    index = cuda_index(device)
    with StatusLine() as line:
        model, details = calibrate_and_store(index, line.status, replace=replace)
    text = json.dumps({"energy_model": model.to_dict(), "details": details}, indent=2, default=str)
    _emit(text, output, json_, [] if json_ else [energy_model_table(model, details)])
    note(details.get("kept_stored") or f"stored in {energy_store_path()}"
         + (f"; written to {output}" if output is not None else ""))


def _has_gpu() -> bool:
    from roofline.measuring.device import detect_gpus

    return bool(detect_gpus())


def _emit(text: str, output: Path | None, json_: bool, tables: list[Any]) -> None:
    """A calibration's document written to `output` (when given), then printed as JSON or as its tables."""
    from roofline.core.files import atomic_write
    from roofline.report.text import console

    if output is not None:
        atomic_write(output, text + "\n")
    if json_:
        out(text)
    for table in tables:
        console().print(table)
