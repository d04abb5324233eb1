"""`roofline run SUITE`: every entry of a suite into one results document (the input of `check` and `plot`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from roofline.cli.common import THREADS, at_least, check_choice, check_outputs, note, use_threads
from roofline.cli.energy import HELP as ENERGY_HELP
from roofline.cli.history import HistoryOption, add_to_history
from roofline.cli.results import save_and_print
from roofline.measuring.choices import DEFAULT_POWER, TIMER_HELP

# What a long-run note suggests for a suite.
SHORTER = "smaller shapes in the suite, or --no-time for the model alone, are quicker"


def run_cmd(
    suite: Annotated[Path, typer.Argument(help="Suite file (TOML), e.g. suites/smoke.toml.")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write the results document here.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --output if it exists.")] = False,
    gpu: Annotated[str | None, typer.Option("--gpu", help="Spec for the roof (another GPU: analytic only).")] = None,
    device: Annotated[str | None, typer.Option("--device", help="cpu, cuda or cuda:N.")] = None,
    no_time: Annotated[bool, typer.Option("--no-time", help="The analytic model only.")] = False,
    warm_l2: Annotated[bool, typer.Option("--warm-l2", help="Do not flush the L2 between samples.")] = False,
    timer: Annotated[str, typer.Option("--timer", help=TIMER_HELP)] = "auto",
    power: Annotated[str, typer.Option("--power", help="burst or sustained (see analyze --help).")] = DEFAULT_POWER,
    no_kernels: Annotated[bool, typer.Option("--no-kernels", help="Do not record kernel names (the torch "
                                             "profiler's: ~3 s the first time).")] = False,
    threads: Annotated[str | None, THREADS.annotated()] = None,  # text: use_threads says what is wrong
    json_: Annotated[bool, typer.Option("--json", help="Print the results document.")] = False,
    wide: Annotated[bool, typer.Option("--wide", help="Every column of the table (every parameter, AI, "
                                       "achieved FLOP/s and bytes/s, SM clock), at full width.")] = False,
    counters: Annotated[bool, typer.Option("--counters", help="Also run every entry once under Nsight Compute "
                                           "(ncu on PATH; slow) and add its DRAM/L2/L1 bytes and FLOPs per pipe "
                                           "to the records (docs/counters.md).")] = False,
    energy: Annotated[bool, typer.Option("--energy", help=ENERGY_HELP)] = False,
    repeat: Annotated[int, typer.Option("--repeat", parser=at_least("--repeat"),
                                        help="Run the suite N times, each in a fresh process, "
                                        "into one document keeping every run's samples: each record then knows "
                                        "its between-run noise (for baseline update and check).")] = 1,
    devices: Annotated[str | None, typer.Option("--devices", help="all, none or GPU indices (0,1,...): the suite "
                                                "on each GPU, one process per GPU, into one document with a "
                                                "record per entry and GPU; a GPU slower than its peers is "
                                                "named.")] = None,
    devices_mode: Annotated[str, typer.Option("--devices-mode", help="parallel (all GPUs at once, the default) "
                                              "or serial (one after another).")] = "parallel",
    db: Annotated[Path | None, typer.Option("--db", help="Operator database for predicted times (default: this "
                                            "GPU's, from `roofline calibrate ops`).")] = None,
    history: HistoryOption = None,
) -> None:
    """Run every entry of a suite (timed when a device is there) into one results document."""
    from functools import partial

    from roofline.analysis.suite import load_suite
    from roofline.cli.analyze import check_timing_choices
    from roofline.cli.run_many import DEVICES_MODES, check_conflicts, child_args, device_indices, run_many
    from roofline.report.text import records_table, show
    from roofline.session import Options, Where, check_options, place_ops, suite_entries

    check_timing_choices(timer, power)
    spec = load_suite(suite)
    check_outputs(force, files=(output,))
    check_conflicts(repeat=repeat, devices=devices, no_time=no_time, counters=counters, energy=energy)
    options = Options(warm_l2=warm_l2, timer=timer, power=power, kernels=not no_kernels, energy=energy,
                      counters=counters, db=db)
    check_options(options, not no_time)  # ncu on PATH, --no-time: before any child run
    check_choice("--devices-mode", devices_mode, DEVICES_MODES)
    if not no_time:
        use_threads(threads)
    indices = device_indices(devices, device=device, repeat=repeat, no_time=no_time)
    if indices or repeat > 1:
        args = child_args(gpu=gpu, device=None if indices else device, warm_l2=warm_l2, timer=timer, power=power,
                          kernels=not no_kernels, threads=threads, db=db)
        doc = run_many(suite, spec.name, indices, devices_mode, repeat, args, counters=counters, db=db,
                       output=output, force=force, json_=json_, wide=wide)
        add_to_history(doc, history, where=str(output or suite))
        return
    placed = place_ops(partial(suite_entries, spec), Where(gpu, device, not no_time), options, say=note,
                       shorter=SHORTER, step=lambda e: f"{spec.name}: {e.label}", suite=spec.name)
    save_and_print(placed.document, output, force, json_)
    if not json_:
        title = f"{spec.name} on {placed.target.ceilings.device_name}"
        show(records_table(placed.records, title=title, wide=wide), wide=wide)
        if output is not None:
            note(f"results written to {output}")
    add_to_history(placed.document, history, where=str(output or suite))
