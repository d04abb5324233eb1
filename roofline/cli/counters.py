"""`--counters` of `roofline profile`: the refusals before any work and the check of the target before the script
runs (`analyze` and `run` place their counters through `roofline.session`). The work itself is `roofline.ncu`'s."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from roofline.measuring.target import Target

# What `--counters` runs again under Nsight Compute, as the --no-time refusal names it.
OPERATOR = "the operator"


def counters_preflight(no_time: bool, runs: str = OPERATOR) -> str:
    """`--counters`: the ncu to run, checked before any work (`session.ncu_to_run`); `runs` names what would run
    under Nsight Compute."""
    from roofline.session import ncu_to_run

    return ncu_to_run(not no_time, runs)


def counters_target(target: Target) -> None:
    """`--counters` needs the work timed on an NVIDIA GPU: checked before the timing starts."""
    from roofline.ncu.run import require_cuda

    require_cuda(target.time_device)
