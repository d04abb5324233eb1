"""`roofline analyze OP`: one operator placed on the roofline, timed when a device is there. One sub-command
per registered operator, with one option per shape parameter."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from roofline.cli.common import (
    TERMINAL,
    OptionSpec,
    check_choice,
    check_outputs,
    note,
    op_command,
    out,
    register_op_commands,
)
from roofline.cli.results import save_and_print
from roofline.core.dtypes import DTYPES
from roofline.core.errors import UsageError
from roofline.measuring.timing import DEFAULT_POWER, METHODS, POWER_MODES
from roofline.report.chart.model import ROOF_CHOICES

if TYPE_CHECKING:
    from roofline.core.document import Document

analyze_app = typer.Typer(no_args_is_help=True, help="Place one operator on the roofline (timed when a device is "
                          "there; --no-time for the model alone). `roofline ops list` shows every operator.")

# The options every `analyze OP` command has beside the operator's own.
COMMON: list[OptionSpec] = [
    ("dtype", Optional[str], typer.Option(None, "--dtype", help=f"{', '.join(DTYPES)} "
                                          "(default: fp16 on a GPU, fp32 on the CPU).")),
    ("gpu", Optional[str], typer.Option(None, "--gpu", help="Spec id or alias for the roof (default: the local "
                                        "GPU; another GPU's spec means analytic only).")),
    ("device", Optional[str], typer.Option(None, "--device", help="Where to time: cpu, cuda, cuda:N "
                                           "(default: the GPU if there is one, else the CPU).")),
    ("no_time", bool, typer.Option(False, "--no-time", help="The analytic model only; time nothing.")),
    ("no_tensor_cores", bool, typer.Option(False, "--no-tensor-cores", help="Use the CUDA-core (plain) ceiling.")),
    ("warm_l2", bool, typer.Option(False, "--warm-l2", help="Do not flush the L2 between samples (cache-hot).")),
    ("timer", str, typer.Option("auto", "--timer", help="auto, graph, graph-loop or events.")),
    ("power", str, typer.Option(DEFAULT_POWER, "--power", help="burst (default: a low-power gap before each "
                                "sample of a compute-bound operator, the kernel as in isolation and under Nsight "
                                "Compute) or sustained (back to back after a warm-up: the steady state, power cap "
                                "included).")),
    ("kernels", bool, typer.Option(True, "--kernels/--no-kernels", help="Record the kernel names (torch "
                                   "profiler; its first use costs ~3 s).")),
    ("counters", bool, typer.Option(False, "--counters", help="Also run the operator once under Nsight Compute "
                                    "(ncu on PATH; slow: seconds) and add its DRAM/L2/L1 bytes and FLOPs per pipe "
                                    "to the record (docs/counters.md).")),
    ("roof", Optional[str], typer.Option(None, "--roof", help="datasheet, measured or both (default both when a "
                                         "calibration exists).")),
    ("json_", bool, typer.Option(False, "--json", help="Print the results document as JSON.")),
    ("output", Optional[Path], typer.Option(None, "-o", "--output", help="Write the results document here.")),
    ("force", bool, typer.Option(False, "--force", help="Overwrite --output if it exists.")),
    ("plot", Optional[str], typer.Option(None, "--plot", help="Also draw a roofline chart (a .png/.svg/.pdf path, "
                                         "or - for the terminal).")),
]


# What a note about a long CPU timing suggests instead.
SHORTER = "a smaller shape, or --no-time for the model alone, is quicker"


def run_analyze(op_name: str, shape: dict[str, Any], *, dtype: str | None, gpu: str | None, device: str | None,
                no_time: bool, no_tensor_cores: bool, warm_l2: bool, timer: str, power: str, kernels: bool,
                roof: str | None, json_: bool, output: Path | None, force: bool, plot: str | None,
                counters: bool = False) -> None:
    """Place (and time) one operator; print its record or the document, write and draw what was asked."""
    from roofline.analysis.advice import with_advice
    from roofline.core.dtypes import get_dtype
    from roofline.core.record import analytic_record
    from roofline.measuring.progress import StatusLine
    from roofline.measuring.target import resolve_target
    from roofline.ops import make

    op = make(op_name, **shape)
    check_choice("--timer", timer, METHODS)
    check_choice("--roof", roof, ROOF_CHOICES)
    check_choice("--power", power, POWER_MODES)
    check_outputs(force, files=(output,), charts=(plot,))
    ncu = counters_preflight(no_time) if counters else None
    with StatusLine(shorter=SHORTER) as line:  # a CPU without a stored roofline measures it now
        target = resolve_target(gpu=gpu, device=device, time=not no_time, roof=roof,  # type: ignore[arg-type]
                                progress=line.status)
    dt = get_dtype(dtype or ("fp32" if target.is_cpu else "fp16"))
    for msg in target.messages:
        note(msg)
    if ncu is not None:
        counters_target(target)
    if target.time_device is None:
        record = analytic_record(op, dt, target.ceilings, not no_tensor_cores)
    else:
        from roofline.measuring.runner import measure_op

        with StatusLine(shorter=SHORTER) as line:
            record = measure_op(op, dt, target, warm_l2=warm_l2, method=timer, tensor_cores=not no_tensor_cores,
                                power=power, kernels=kernels, progress=line)
    if ncu is not None:
        (record,) = add_counters([record], [(op, dt)], target, ncu)
    record = with_advice(record, target.spec)
    doc = target.document([record])
    save_and_print(doc, output, force, json_)
    if not json_:
        from roofline.report.text import record_table, show

        show(record_table(record))
        if target.is_cpu and target.time_device:
            note(f"timed on the CPU ({target.device_info['name']}): no GPU on this machine")
    if plot:
        draw(doc, plot)


def counters_preflight(no_time: bool) -> str:
    """`--counters`: the ncu to run, checked before any work (no ncu, or --no-time: one line, exit 2)."""
    from roofline.measuring.ncu import find_ncu

    if no_time:
        raise UsageError("--counters runs the operator under Nsight Compute: it cannot go with --no-time")
    return find_ncu()


def counters_target(target: Any) -> None:
    """`--counters` needs the operators timed on an NVIDIA GPU: checked before the timing starts."""
    if not (target.time_device or "").startswith("cuda"):
        raise UsageError("--counters needs the operators timed on an NVIDIA GPU (Nsight Compute profiles CUDA "
                         "kernels)")


def add_counters(records: list[Any], ops: list[tuple[Any, Any]], target: Any, ncu: str) -> list[Any]:
    """The records with their ncu counters (`measuring.ncu`), under a progress line that says ncu is slow."""
    from roofline.measuring.ncu import attach_counters
    from roofline.measuring.progress import StatusLine

    with StatusLine(shorter="leave out --counters: the timing alone takes a second") as line:
        return attach_counters(records, ops, line, ncu, str(target.device_info.get("name") or ""))


def draw(doc: Document, where: str) -> None:
    """The roofline chart of one document: in the terminal (`-`) or to a chart file (checked beforehand)."""
    if where == TERMINAL:
        from roofline.report.terminal import render_terminal, terminal_width

        out(render_terminal([doc], width=terminal_width()))
        return
    from roofline.report.chart.draw import save_chart

    note(f"chart written to {save_chart([doc], Path(where))}")


# `analyze all_reduce --gpus 8`, as the issue and nccl-tests' -g speak of it, is --ranks (compare's --gpus
# names GPU specs instead: there the ranks are --ranks only).
RANKS_ALIASES = {"ranks": ("--gpus",)}


def _make_analyze(cls: type) -> Any:
    return op_command(cls, COMMON, lambda shape, **kw: run_analyze(cls.name, shape, **kw), cls.name,
                      f"{cls.summary}\n\n{cls.ignores}", aliases=RANKS_ALIASES)


register_op_commands(analyze_app, _make_analyze, lambda cls: f"{cls.summary}. {cls.ignores}")
