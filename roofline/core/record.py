"""Turn an operator, a dtype and a device's ceilings into a results record (analytic, then timed)."""

from __future__ import annotations

from typing import Any

from roofline.core.dtypes import DType
from roofline.core.model import Analysis, Ceilings, achieved, choose_pipe
from roofline.ops.base import Operator


def ceilings_dict(ceilings: Ceilings) -> dict[str, Any]:
    """The ceilings as stored in a results document's `device` (what a chart draws)."""
    return {"device_id": ceilings.device_id, "source": ceilings.source, "sm_clock_mhz": ceilings.sm_clock_mhz,
            "compute_flops_per_s": dict(ceilings.compute), "memory_bytes_per_s": dict(ceilings.memory),
            "notes": list(ceilings.notes)}


def analytic_record(op: Operator, dtype: DType, ceilings: Ceilings, tensor_cores: bool = True) -> dict[str, Any]:
    """The roofline prediction for one operator: every field of schema v1 but the timed ones."""
    op.check_dtype(dtype)
    pipe = choose_pipe(ceilings, dtype, op.uses_tensor_cores, tensor_cores)
    traffic = op.traffic(dtype)
    flops = float(op.flops())
    a = Analysis(flops, traffic.total, pipe.flops_per_s, ceilings.dram_bytes_per_s)
    notes = [n for n in (pipe.note,) if n]
    return {
        "op": op.name,
        "variant": op.variant_name(),
        "params": op.params(),
        "dtype": dtype.name,
        "flops": flops,
        "bytes_read": traffic.bytes_read,
        "bytes_written": traffic.bytes_written,
        "bytes": traffic.total,
        "bytes_by_kind": traffic.by_kind(),
        "traffic": {"read": traffic.read, "written": traffic.written},
        "arithmetic_intensity": a.arithmetic_intensity,
        "gpu": ceilings.device_id,
        "device_kind": ceilings.kind,
        "roof_source": ceilings.source,
        "compute_pipe": pipe.key,
        "compute_pipe_label": pipe.label,
        "tensor_cores": pipe.key.split("_")[1] == "tensor" if ceilings.kind == "gpu" else None,
        "peak_flops_per_s": a.peak_flops_per_s,
        "peak_bytes_per_s": a.peak_bytes_per_s,
        "ridge_point": a.ridge_point,
        "bound": a.bound,
        "attainable_flops_per_s": a.attainable_flops_per_s,
        "roofline_time_s": a.roofline_time_s,
        "model_note": op.ignores,
        "notes": notes,
    }


def add_time(record: dict[str, Any], time_s: float) -> dict[str, Any]:
    """Derive the achieved rates and the fraction of the roofline from a median time."""
    a = Analysis(record["flops"], record["bytes"], record["peak_flops_per_s"], record["peak_bytes_per_s"])
    ach = achieved(a, time_s)
    record.update(time_s=ach.time_s, achieved_flops_per_s=ach.achieved_flops_per_s,
                  achieved_bytes_per_s=ach.achieved_bytes_per_s, roofline_fraction=ach.roofline_fraction)
    return record
