"""`roofline analyze OP`: one operator placed on the roofline, timed when a device is there. One sub-command
per registered operator, with one option per shape parameter.

typer is imported only by `analyze_group` (the typer group, built when the command line needs it):
`roofline.cli.fast` runs `analyze OP ... --no-time` from the same `COMMON` declarations without it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, cast

from roofline.cli.common import (
    TERMINAL,
    THREADS,
    Opt,
    OptionSpec,
    check_choice,
    check_outputs,
    int_flags,
    note,
    op_command,
    out,
    register_op_commands,
    use_threads,
)
from roofline.cli.energy import HELP as ENERGY_HELP
from roofline.cli.results import save_and_print
from roofline.core.dtypes import DTYPES
from roofline.core.notes import without
from roofline.measuring.choices import DEFAULT_POWER, METHODS, POWER_MODES, TIMER_HELP

if TYPE_CHECKING:
    from roofline.core.document import Document
    from roofline.measuring.target import RoofChoice
    from roofline.ops.base import Operator
    from roofline.session import Placement

HELP = ("Place one operator on the roofline (timed when a device is there; --no-time for the model alone). "
        "`roofline ops list` shows every operator.")

# The options every `analyze OP` command has beside the operator's own.
COMMON: list[OptionSpec] = [
    ("dtype", Optional[str], Opt(None, "--dtype", help=f"{', '.join(DTYPES)} "
                                 "(default: fp16 on a GPU, fp32 on the CPU).")),
    ("gpu", Optional[str], Opt(None, "--gpu", help="Spec id or alias for the roof (default: the local "
                               "GPU; another GPU's spec means analytic only).")),
    ("device", Optional[str], Opt(None, "--device", help="Where to time: cpu, cuda, cuda:N "
                                  "(default: the GPU if there is one, else the CPU).")),
    ("no_time", bool, Opt(False, "--no-time", help="The analytic model only; time nothing.")),
    ("no_tensor_cores", bool, Opt(False, "--no-tensor-cores", help="Use the CUDA-core (plain) ceiling.")),
    ("warm_l2", bool, Opt(False, "--warm-l2", help="Do not flush the L2 between samples (cache-hot).")),
    ("timer", str, Opt("auto", "--timer", help=TIMER_HELP)),
    ("power", str, Opt(DEFAULT_POWER, "--power", help="burst (default: a low-power gap before each "
                       "sample of a compute-bound operator, the kernel as in isolation and under Nsight "
                       "Compute) or sustained (back to back after a warm-up: the steady state, power cap "
                       "included).")),
    ("threads", Optional[str], THREADS),
    ("no_kernels", bool, Opt(False, "--no-kernels", help="Do not record the kernel names (they come from the "
                             "torch profiler, whose first use costs ~3 s).")),
    ("counters", bool, Opt(False, "--counters", help="Also run the operator once under Nsight Compute "
                           "(ncu on PATH; slow: seconds) and add its DRAM/L2/L1 bytes and FLOPs per pipe "
                           "to the record (docs/counters.md).")),
    ("energy", bool, Opt(False, "--energy", help=ENERGY_HELP)),
    ("roof", Optional[str], Opt(None, "--roof", help="datasheet, measured or both (default both when a "
                                "calibration exists).")),
    ("db", Optional[Path], Opt(None, "--db", help="Operator database for the predicted time (default: this "
                               "GPU's, from `roofline calibrate ops`; another GPU's is applied as a transfer).")),
    ("json_", bool, Opt(False, "--json", help="Print the results document as JSON.")),
    ("output", Optional[Path], Opt(None, "-o", "--output", help="Write the results document here.")),
    ("force", bool, Opt(False, "--force", help="Overwrite --output if it exists.")),
    ("plot", Optional[str], Opt(None, "--plot", help="Also draw a roofline chart (a .png/.svg/.pdf path, "
                                "or - for the terminal).")),
]

# The help's sentence on sweeps (roofline.core.sweep).
SWEEP_HELP = ("Any integer parameter takes a sweep: a list (--m 1024,4096), a geometric range (--m 1024:16384:x2) "
              "or an arithmetic one (--m 1024:4096:+1024); several swept parameters give every combination. "
              "One record per shape, in one document.")

# What a note about a long CPU timing suggests instead.
SHORTER = "a smaller shape, or --no-time for the model alone, is quicker"


def run_analyze(op_name: str, shape: dict[str, Any], *, dtype: str | None, gpu: str | None, device: str | None,
                no_time: bool, no_tensor_cores: bool, warm_l2: bool, timer: str, power: str, no_kernels: bool,
                roof: str | None, json_: bool, output: Path | None, force: bool, plot: str | None,
                counters: bool = False, db: Path | None = None, energy: bool = False,
                threads: str | None = None) -> None:
    """Place (and time) one operator, or each shape of a sweep (`roofline.core.sweep`: an integer parameter
    given as a list or range), as every front end places it (`roofline.session.place_ops`); print the target's
    messages (also kept in each record's notes), its record (a sweep: one row per shape) or the document, write
    and draw what was asked. A sweep is one document whose `sweep` field names the swept parameters."""
    from roofline.core.sweep import expand
    from roofline.ops import get_operator, make
    from roofline.session import Options, Where, op_entries, place_ops

    shapes, swept = expand(shape, int_flags(get_operator(op_name)))
    ops = [make(op_name, **s) for s in shapes]  # every shape checked before anything is timed
    check_timing_choices(timer, power, roof)
    entries = op_entries(ops, dtype, not no_tensor_cores)  # a bad dtype is refused before any calibration
    check_outputs(force, files=(output,), charts=(plot,))
    if not no_time:
        use_threads(threads)
    options = Options(warm_l2=warm_l2, timer=timer, power=power, kernels=not no_kernels, energy=energy,
                      counters=counters, db=db)
    labels = {id(op): f"{op_name} {' '.join(f'{k}={s[k]}' for k in swept)}" for op, s in zip(ops, shapes, strict=True)}
    where = Where(gpu, device, not no_time, cast("RoofChoice | None", roof))  # checked: one of ROOF_CHOICES
    placed = place_ops(entries, where, options, say=note, shorter=SHORTER, step=lambda e: labels[id(e.op)],
                       extra={"sweep": swept} if swept else None)
    save_and_print(placed.document, output, force, json_)
    if not json_:
        show_placed(placed, f"{op_name} sweep of {', '.join(swept)} on {placed.target.ceilings.device_name}")
    if plot:
        draw(placed.document, plot, force)


def check_timing_choices(timer: str, power: str, roof: str | None = None) -> None:
    """`--timer`, `--power` and `--roof` checked before any work (usage errors, exit 2)."""
    check_choice("--timer", timer, METHODS)
    if roof is not None:  # the chart model's import costs ~20 ms of the analytic path
        from roofline.report.chart.model import ROOF_CHOICES

        check_choice("--roof", roof, ROOF_CHOICES)
    check_choice("--power", power, POWER_MODES)


def show_placed(placed: Placement, title: str) -> None:
    """One record as `analyze` shows it (its notes less what was said already), or a sweep's table; and where it
    was timed when that was the CPU for want of a GPU."""
    records, target = placed.records, placed.target
    if len(records) == 1:
        from roofline.report.plain import show_record

        show_record(dataclasses.replace(records[0], notes=without(records[0].notes, placed.notes)))
    else:
        from roofline.report.text import records_table, show

        show(records_table(records, title=title))
    if target.is_cpu and target.time_device:
        note(f"timed on the CPU ({target.device_info['name']}): no GPU on this machine")


def draw(doc: Document, where: str, force: bool = False) -> None:
    """The roofline chart of one document: in the terminal (`-`) or to a chart file (checked beforehand; an
    existing one replaced only when `force`)."""
    if where == TERMINAL:
        from roofline.report.terminal import render_terminal, terminal_width

        out(render_terminal([doc], width=terminal_width()))
        return
    from roofline.report.chart.draw import save_chart

    note(f"chart written to {save_chart([doc], Path(where), force=force)}")


# `analyze all_reduce --gpus 8`, as the issue and nccl-tests' -g speak of it, is --ranks (compare's --gpus
# names GPU specs instead: there the ranks are --ranks only).
RANKS_ALIASES: dict[str, tuple[str, ...]] = {"ranks": ("--gpus",)}


def _make_analyze(cls: type[Operator]) -> Any:
    return op_command(cls, COMMON, lambda shape, **kw: run_analyze(cls.name, shape, **kw), cls.name,
                      f"{cls.summary}\n\n{cls.ignores}\n\n{SWEEP_HELP}", sweep=True, aliases=RANKS_ALIASES)


def analyze_group(only: str | None = None) -> Any:
    """The typer group `roofline analyze`: one command per operator, or only the operator `only` (the one
    the command line names: building all of them costs ~0.1 s)."""
    import typer

    group = typer.Typer(no_args_is_help=True, help=HELP)
    if only is not None:  # `analyze GEMM`: that operator, by the name typed; `analyze gemmm`: the closest ones
        from roofline.ops.base import get_operator, operator_name

        name = operator_name(only)
        if name != only:
            cls = get_operator(name)
            group.command(only, help=f"{cls.summary}. {cls.ignores}")(_make_analyze(cls))
            return group
    register_op_commands(group, _make_analyze, lambda cls: f"{cls.summary}. {cls.ignores}\n\n{SWEEP_HELP}",
                         only=only)
    return group
