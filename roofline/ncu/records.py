"""An Nsight Compute report of the user's own application as a results document (`roofline import-ncu`): one
record per kernel, its counter FLOPs and DRAM bytes placed on a spec's roofs, timed by ncu's duration.

A record's op is "kernel", its params the kernel's own name (`ncu.join.kernel_key`) and ncu ID, its region
the NVTX range (when the report has one), its dtype the precision with most FLOPs (tensor pipe first),
`flops_source` "ncu". Its `counters` hold every level's bytes; `excess_traffic` stays unset: a report has no
model minimum to hold DRAM bytes against. The report is read by `ncu.read_csv` or `ncu.read_rep`.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from roofline.core.counters import derive
from roofline.core.dtypes import get_dtype
from roofline.core.errors import RooflineError, UsageError
from roofline.core.model import Ceilings
from roofline.core.record import Counters, Record, placed_record, with_time
from roofline.ncu.join import kernel_key
from roofline.ncu.read_csv import (
    COUNTER_METRICS,
    DRAM_RATE,
    NcuKernel,
    counters_from_kernel,
    nvtx_range,
    read_raw_csv,
)

OP = "kernel"
# A kernel with neither tensor nor CUDA-core FLOPs (a copy, a memset) is placed as fp32 CUDA-core work.
DEFAULT_DTYPE = "fp32"


def read_report(path: str | os.PathLike[str]) -> list[NcuKernel]:
    """A report's kernels: `.ncu-rep` through ncu_report, anything else as ncu's raw CSV. A file that is not
    such a report, or holds no kernel, is a one-line UsageError (exit 2)."""
    p = Path(path)
    if p.suffix == ".ncu-rep":
        from roofline.ncu.read_rep import read_ncu_rep

        kernels = read_ncu_rep(p, [*COUNTER_METRICS, DRAM_RATE])
    else:
        if p.is_file() and p.stat().st_size == 0:
            raise UsageError(f"{p}: empty file (expected `ncu --csv --page raw` output or a .ncu-rep)")
        try:
            kernels = read_raw_csv(p)
        except RooflineError as exc:
            raise UsageError(str(exc)) from None
    if not kernels:
        raise UsageError(f"{p}: the report holds no kernel (was the profiled range empty?)")
    return kernels


def dominant_dtype(c: Counters) -> tuple[str, bool]:
    """The precision with most FLOPs, and whether it ran on the tensor pipe."""
    candidates = [(v, p, True) for p, v in (c.tensor_flops or {}).items() if v] + \
        [(v, p, False) for p, v in (("fp32", c.fp32_flops), ("fp64", c.fp64_flops), ("fp16", c.fp16_flops)) if v]
    if not candidates:
        return DEFAULT_DTYPE, False
    _, precision, tensor = max(candidates)
    return precision, tensor


def kernel_record(kernel: NcuKernel, ceilings: Ceilings, source: str) -> Record:
    """One kernel placed on `ceilings` from its counters, timed by ncu's duration."""
    c = counters_from_kernel(kernel, source)
    precision, tensor = dominant_dtype(c)
    read = c.dram_bytes_read if c.dram_bytes_read is not None else (c.dram_bytes or 0.0)
    written = c.dram_bytes_written if c.dram_bytes_read is not None else 0.0
    rec = placed_record(op=OP, variant=None, params={"kernel": kernel_key(kernel.name), "id": kernel.id},
                        dtype=get_dtype(precision), flops=c.flops or 0.0, bytes_read=read,
                        bytes_written=written or 0.0, ceilings=ceilings, uses_tensor_cores=tensor,
                        model_note="FLOPs and bytes are Nsight Compute's counters of this kernel, not a model")
    if c.duration_s:
        rec = with_time(rec, c.duration_s)
    return dataclasses.replace(rec, region=nvtx_range(kernel), flops_source="ncu", kernels=[kernel.name],
                               counters=derive(c, None, None))


def report_records(kernels: list[NcuKernel], ceilings: Ceilings, source: str) -> list[Record]:
    return [kernel_record(k, ceilings, source) for k in kernels]


def report_device(kernels: list[NcuKernel]) -> str | None:
    """The GPU's name as the report recorded it (`device__attribute_display_name`), when it did."""
    for k in kernels:
        name = k.text.get("device__attribute_display_name")
        if name:
            return name
    return None
