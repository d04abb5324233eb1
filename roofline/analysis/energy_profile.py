"""A profiled step's energy and each operator's share of it (`roofline.profile(step, energy=True)`, `roofline
profile SCRIPT --energy`). Pure: the measured window comes from `measuring.energy`, the model from the store.

Attribution, in one of two ways, named in the summary's `energy.attribution`:
- measured step (the API, whose step can run back to back): the step's joules are the NVML counter's; the GPU's
  idle time between kernels (the step's time less its kernel time) is charged the static watts, and the rest
  is shared among the operators in proportion to the energy model's estimate of each (kernel time x its
  modeled power: static + active watts + the operator's own watts + pJ/FLOP x FLOPs + pJ/B x bytes), or to
  kernel time alone (the step's average power) without a stored model;
- modeled step (the command line, whose script runs its step once): every operator's energy is the model's
  estimate, the idle time charged the static watts; nothing is measured, and the summary says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roofline.analysis.families import catalog_op
from roofline.core.energy import EnergyModel
from roofline.core.errors import UsageError
from roofline.core.record import Record, evolve
from roofline.core.summary import EnergySummary, EnergyWindow, ProfileSummary

MEASURED_MODEL = "measured step; operators by the energy model's estimate (kernel time x modeled power), scaled"
MEASURED_TIME = "measured step; operators by kernel time (the step's average power; no stored energy model)"
MODELED = "modeled: the stored energy model's estimate per operator (kernel time x modeled power); not measured"


def op_estimate_j(record: Record, model: EnergyModel | None, power_w: float | None) -> float:
    """One operator's energy over all its calls in the step: the model's estimate, or time x `power_w`."""
    t = (record.time_s or 0.0) * (record.count or 1)
    if model is not None and record.compute_pipe:
        return (record.count or 1) * model.energy_j(record.compute_pipe, record.flops or 0.0, record.bytes_read or 0.0,
                                                    record.bytes_written or 0.0, record.time_s or 0.0,
                                                    op=catalog_op(record))
    return t * (power_w or 0.0)


def profile_energy(records: list[Record], summary: ProfileSummary | Mapping[str, Any], model: EnergyModel | None,
                   measured: dict[str, Any] | None, tokens: int | None = None) -> tuple[list[Record], EnergySummary]:
    """The records with `energy` (joules per call and share of the step) and the summary's `energy` block (see
    the module docstring). `summary`: the profile's (a stored one's dict reads too). `measured` is the step's
    energy fields (`core.energy.energy_fields`) or None."""
    if measured is None and model is None:
        raise UsageError("profile --energy from a script attributes the step by the stored energy model: run "
                         "`roofline calibrate energy` first, or measure the step with roofline.profile(step, "
                         "energy=True)")
    s = summary if isinstance(summary, ProfileSummary) else ProfileSummary.from_dict(summary)
    kernel_s = float(s.kernel_time_s or sum((r.time_s or 0.0) * (r.count or 1) for r in records))
    static = measured.get("static_w") if measured else None
    static = static if static is not None else (model.static_w if model else 0.0)
    if measured is not None:
        step_s, step_j = float(measured["per_call_s"]), float(measured["energy_j"])
        how = MEASURED_MODEL if model is not None else MEASURED_TIME
        estimates = [op_estimate_j(r, model, measured["power_w"]) for r in records]
    else:
        step_s = float(s.wall_uninstrumented_s or s.wall_s or kernel_s)
        how = MODELED
        estimates = [op_estimate_j(r, model, None) for r in records]
        step_j = sum(estimates) + static * max(0.0, step_s - kernel_s)
    idle_s = max(0.0, step_s - kernel_s)
    idle_j = min(step_j, static * idle_s)
    total = sum(estimates)
    scale = (step_j - idle_j) / total if total > 0 else 0.0
    out = []
    for r, est in zip(records, estimates, strict=True):
        j, calls = est * scale, r.count or 1
        out.append(evolve(r, energy={"energy_j": j / calls, "step_j": j, "step_share": j / step_j if step_j else None,
                                     "flops_per_j": (r.flops or 0.0) * calls / j if j > 0 and r.flops else None,
                                     "attribution": how}))
    window = None
    if measured is not None:
        window = EnergyWindow(measured.get("window_s"), measured.get("calls"), measured.get("counter"),
                              measured.get("method"))
    return out, EnergySummary(step_j, step_s, step_j / step_s if step_s else None, idle_s, idle_j, static, how,
                              step_j / tokens if tokens else None, window)
