"""`--counters` on the command line, as `analyze`, `run` and `profile` share it: the refusals before any work,
the check of the target before the timing, and the Nsight Compute pass of operators under a progress line.
The work itself is `roofline.ncu`'s."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roofline.core.errors import UsageError

if TYPE_CHECKING:
    from roofline.analysis.suite import Suite
    from roofline.core.record import Record
    from roofline.measuring.target import Target

# What `--counters` runs again under Nsight Compute, as the --no-time refusal names it.
OPERATOR = "the operator"


def counters_preflight(no_time: bool, runs: str = OPERATOR) -> str:
    """`--counters`: the ncu to run, checked before any work (no ncu on PATH, or --no-time: one line, exit 2);
    `runs` names what would run under Nsight Compute."""
    from roofline.ncu.run import find_ncu

    if no_time:
        raise UsageError(f"--counters runs {runs} under Nsight Compute: it cannot go with --no-time (nothing "
                         "runs on a GPU to count)")
    return find_ncu()


def counters_target(target: Target) -> None:
    """`--counters` needs the work timed on an NVIDIA GPU: checked before the timing starts."""
    from roofline.ncu.run import require_cuda

    require_cuda(target.time_device)


def add_counters(records: list[Record], ops: list[tuple[Any, Any]], target: Target, ncu: str) -> list[Record]:
    """The records with their ncu counters (`ncu.run`), under a progress line that says ncu is slow."""
    from roofline.ncu.run import attach_counters
    from roofline.report.progress import StatusLine

    with StatusLine(shorter="leave out --counters: the timing alone takes a second") as line:
        return attach_counters(records, ops, line, ncu, str(target.device_info.get("name") or ""))


def suite_counters(spec: Suite, records: list[Record], target: Target, ncu: str) -> list[Record]:
    """`run --counters`: every entry's record of the suite `spec` with its ncu counters, advice redone (rules
    read the counters)."""
    from roofline.analysis.advice import with_advice
    from roofline.core.dtypes import get_dtype

    ops = [(e.operator(True), get_dtype(e.dtype_for(True))) for e in spec.entries]
    return [with_advice(r, target.spec) for r in add_counters(records, ops, target, ncu)]
