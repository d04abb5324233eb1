"""`--energy` on the command line, as `analyze` and `run` share it: the refusals before any work (--no-time, the
CPU, a GPU without an energy counter: one line, exit 2) and the energy windows of the records under a
progress line. The work itself is `roofline.measuring.energy`'s (docs/energy.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roofline.core.errors import UsageError

if TYPE_CHECKING:
    from roofline.core.record import Record
    from roofline.measuring.target import Target

HELP = ("Also measure each operator's energy per call on the GPU's NVML energy counter (~2 s each: a window of "
        "back-to-back calls): joules, watts, FLOP/J, static and dynamic shares (docs/energy.md).")


def energy_preflight(no_time: bool) -> None:
    """`--energy` with `--no-time`: nothing runs, so nothing draws power to measure (exit 2)."""
    if no_time:
        raise UsageError("--energy measures the operator running on a GPU: it cannot go with --no-time")


def energy_target(target: Target) -> None:
    """Before the timing: the work must run on a CUDA device whose NVML has an energy counter (else exit 2)."""
    from roofline.measuring.energy import require_counter

    require_counter(target.time_device)


def add_energy(records: list[Record], ops: list[tuple[Any, Any]], target: Target) -> list[Record]:
    """The records with their `energy`, under a progress line."""
    from roofline.measuring.energy import attach_energy
    from roofline.report.progress import StatusLine

    assert target.time_device is not None
    with StatusLine(shorter="leave out --energy: the timing alone is quicker") as line:
        return attach_energy(records, ops, target.time_device, line)
