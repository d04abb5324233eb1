"""`--energy` of `roofline profile`, and the option's help that `analyze` and `run` share: the refusals before any
work (--no-time, the CPU, a GPU without an energy counter: one line, exit 2) and the step's energy in one line
(`analyze` and `run` measure theirs through `roofline.session`). The work is `roofline.measuring.energy`'s."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roofline.core.device import cuda_index

if TYPE_CHECKING:
    from roofline.core.record import Record
    from roofline.measuring.target import Target

HELP = ("Also measure each operator's energy per call on the GPU's NVML energy counter (~2 s each: a window of "
        "back-to-back calls): joules, watts, FLOP/J, static and dynamic shares (docs/energy.md).")


def energy_preflight(no_time: bool) -> None:
    """`--energy` with `--no-time`: nothing runs, so nothing draws power to measure (exit 2)."""
    from roofline.session import refuse_energy_untimed

    refuse_energy_untimed(not no_time)


def profile_energy_target(target: Target) -> None:
    """`profile --energy`, before the script runs: a GPU with an energy counter and a stored energy model."""
    from roofline.analysis.energy_profile import profile_energy
    from roofline.measuring.energy import require_counter, stored_model

    require_counter(target.time_device)
    index = cuda_index(target.time_device)
    if stored_model(index) is None:
        profile_energy([], {}, None, None)  # its refusal: one line, exit 2


def profile_energy_note(records: list[Record], block: dict[str, Any]) -> str:
    """One line: the step's energy and the operators that take most of it."""
    from roofline.core.format import joules

    top = sorted(records, key=lambda r: -((r.energy or {}).get("step_j") or 0.0))[:3]
    parts = [f"{r.op}{f' ({r.module})' if r.module else ''} {((r.energy or {}).get('step_share') or 0):.1%}"
             for r in top]
    per_token = f", {joules(block['per_token_j'])} per token" if block.get("per_token_j") else ""
    idle = block["idle_j"] / block["step_j"] if block.get("step_j") else 0.0
    return (f"energy: {joules(block['step_j'])} per step at {block['power_w'] or 0:.0f} W{per_token}; the GPU idle "
            f"between kernels {idle:.0%} (static W x idle time); most in {', '.join(parts)} ({block['attribution']})")
