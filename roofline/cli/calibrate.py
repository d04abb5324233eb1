"""`roofline calibrate`: measure this machine's ceilings and store them for `analyze`, `run` and `plot`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from roofline.cli.common import THREADS, check_outputs, note, out, use_threads
from roofline.core.errors import UsageError
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
    threads: Annotated[int | None, THREADS.annotated()] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Store this CPU calibration even when it ran on a busy "
                                          "machine and measured less than the stored roof (kept by default).")]
    = False,
) -> None:
    """Measure this machine's ceilings (HBM, L2, shared memory, matmul per dtype, FP32 FMA) and store them;
    `analyze` and `plot` then draw measured roofs beside the datasheet's."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.table import Column

    from roofline.ceilings.store import store_path
    from roofline.core.files import atomic_write
    from roofline.measuring.calibrate import calibrate
    from roofline.report.text import calibration_table, console, l2_sweep_table

    if device is not None and device != "cpu" and not device.startswith("cuda"):
        raise UsageError(f"unknown device '{device}' (use cpu, cuda or cuda:N)")
    check_outputs(force, files=(output,))  # before the work: a calibration takes seconds to minutes
    use_threads(threads)  # measure_cpu records torch.get_num_threads() in the details and notes
    with Progress(SpinnerColumn(), TextColumn("{task.description}", table_column=Column(overflow="fold")),
                  TimeElapsedColumn(),
                  console=console(stderr=True), transient=True, auto_refresh=False) as bar:
        task = bar.add_task("calibrating", total=None)

        def say(msg: str) -> None:
            bar.update(task, description=msg)
            bar.refresh()

        ceilings, details = calibrate(device, quick, say, replace=replace)
    text = calibration_json(ceilings, details)
    if output is not None:
        atomic_write(output, text + "\n")
    if json_:
        out(text)
    else:
        console().print(calibration_table(ceilings, details))
        if details.get("l2_sweep"):
            console().print(l2_sweep_table(details["l2_sweep"]))
    if details.get("kept_stored"):
        note(details["kept_stored"])
    else:
        note(f"stored in {store_path()}" + (f"; written to {output}" if output is not None else ""))


def calibration_json(ceilings: Ceilings, details: dict[str, Any]) -> str:
    """What `--json` prints and `-o` writes: the measured rates per pipe and per memory level, and the details
    of each measurement."""
    return json.dumps({"compute_flops_per_s": ceilings.compute, "memory_bytes_per_s": ceilings.memory,
                       "details": details}, indent=2, default=str)
