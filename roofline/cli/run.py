"""`roofline run SUITE`: every entry of a suite into one results document (the input of `check` and `plot`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from roofline.cli.common import check_choice, check_outputs, note
from roofline.cli.results import save_and_print
from roofline.core.errors import UsageError
from roofline.measuring.timing import DEFAULT_POWER, METHODS, POWER_MODES


def parse_slowdown(text: str | None) -> dict[int, float]:
    """`--inject-slowdown ENTRY=FRACTION` (test only) as {entry: fraction}."""
    if not text:
        return {}
    try:
        k, v = text.split("=")
        return {int(k): float(v)}
    except ValueError:
        raise UsageError("--inject-slowdown takes ENTRY=FRACTION, e.g. 2=0.07") from None


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
    timer: Annotated[str, typer.Option("--timer", help="auto, graph, graph-loop or events.")] = "auto",
    power: Annotated[str, typer.Option("--power", help="burst or sustained (see analyze --help).")] = DEFAULT_POWER,
    kernels: Annotated[bool, typer.Option("--kernels/--no-kernels", help="Record kernel names (torch "
                                          "profiler; ~3 s the first time).")] = True,
    json_: Annotated[bool, typer.Option("--json", help="Print the results document.")] = False,
    wide: Annotated[bool, typer.Option("--wide", help="Every column of the table (every parameter, AI, "
                                       "achieved FLOP/s and bytes/s, SM clock), at full width.")] = False,
    inject_slowdown: Annotated[str | None, typer.Option("--inject-slowdown", hidden=True,
                                                           help="TEST ONLY: ENTRY=FRACTION, e.g. 2=0.07.")] = None,
) -> None:
    """Run every entry of a suite (timed when a device is there) into one results document."""
    from roofline.analysis.suite import load_suite
    from roofline.measuring.progress import StatusLine
    from roofline.measuring.runner import run_suite
    from roofline.measuring.target import resolve_target
    from roofline.report.text import records_table, show

    check_choice("--timer", timer, METHODS)
    check_choice("--power", power, POWER_MODES)
    spec = load_suite(suite)
    check_outputs(force, files=(output,))
    slow = parse_slowdown(inject_slowdown)
    with StatusLine(total=len(spec.entries), shorter=SHORTER) as line:  # one transient line on stderr
        target = resolve_target(gpu=gpu, device=device, time=not no_time, progress=line.status)
        for msg in target.messages:
            note(msg)

        def tick(i: int, n: int, what: str) -> None:
            line.step(i - 1, f"{spec.name}: {what}")

        records = run_suite(spec, target, warm_l2=warm_l2, timer=timer, slowdown=slow, progress=tick,
                            kernels=kernels, power=power, reporter=line)
    doc = target.document(records, suite=spec.name)
    save_and_print(doc, output, force, json_)
    if not json_:
        show(records_table(records, title=f"{spec.name} on {target.ceilings.device_name}", wide=wide), wide=wide)
        if output is not None:
            note(f"results written to {output}")
