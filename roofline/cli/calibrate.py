"""`roofline calibrate`: measure this machine's ceilings and store them for `analyze`, `run` and `plot`."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from roofline.cli.common import note, out
from roofline.core.errors import UsageError


def calibrate_cmd(
    quick: Annotated[bool, typer.Option("--quick", help="Fewer shapes: no L2 sweep on a GPU (about 10 s), one "
                                                     "matmul size per dtype on the CPU (under 1 s).")] = False,
    device: Annotated[str | None, typer.Option("--device", help="cpu, cuda or cuda:N (default: the GPU, "
                                                  "else the CPU).")] = None,
    json_: Annotated[bool, typer.Option("--json", help="Print the measured ceilings as JSON.")] = False,
) -> None:
    """Measure this machine's ceilings (HBM, L2, shared memory, matmul per dtype, FP32 FMA) and store them;
    `analyze` and `plot` then draw measured roofs beside the datasheet's."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from roofline.ceilings.calibrate import calibrate
    from roofline.ceilings.store import store_path
    from roofline.report.text import calibration_table, console, l2_sweep_table

    if device is not None and device != "cpu" and not device.startswith("cuda"):
        raise UsageError(f"unknown device '{device}' (use cpu, cuda or cuda:N)")
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=console(stderr=True), transient=True, auto_refresh=False) as bar:
        task = bar.add_task("calibrating", total=None)

        def say(msg: str) -> None:
            bar.update(task, description=msg)
            bar.refresh()

        ceilings, details = calibrate(device, quick, say)
    if json_:
        out(json.dumps({"compute_flops_per_s": ceilings.compute, "memory_bytes_per_s": ceilings.memory,
                        "details": details}, indent=2, default=str))
        return
    console().print(calibration_table(ceilings, details))
    if details.get("l2_sweep"):
        console().print(l2_sweep_table(details["l2_sweep"]))
    note(f"stored in {store_path()}")
