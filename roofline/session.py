"""The use cases the command line, the Python API and the pytest plugin share: one catalog operator placed on
a target's roof (`roofline analyze`, `roofline.analyze`, the `roofline(op=...)` fixture), and a suite of them
(`roofline run`). One behaviour for all of them:

- a dtype not given is the target's default (`default_dtype`: fp16 on a GPU's roof, fp32 on the CPU's);
- the operator is built and timed on the target's device when it has one (`measuring.runner.measure_op`), and
  is the analytic model alone otherwise;
- the record carries the advice `roofline analyze` prints (`record.advice`);
- what the target had to say (a CPU roofline measured now, "analytic only: ...", the CPU timed because torch
  cannot reach the GPU) is kept last among the record's notes (`Target.noted`); a command also prints it once.

The target is resolved by the caller (`measuring.target.resolve_target`), once for a sweep, a suite or a
pytest session. The measuring code is imported only when something is timed: the analytic path stays light.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from roofline.analysis.advice import with_advice
from roofline.core.dtypes import DEFAULT_DTYPE, DType, get_dtype
from roofline.core.errors import RooflineError
from roofline.core.progress import QUIET, Reporter
from roofline.core.record import Record, analytic_record
from roofline.measuring.choices import DEFAULT_POWER

if TYPE_CHECKING:
    from roofline.analysis.suite import Suite
    from roofline.measuring.target import Target
    from roofline.ops.base import Operator


def default_dtype(target: Target) -> DType:
    """The dtype an operator is placed in on `target` when none is given (`core.dtypes.DEFAULT_DTYPE`)."""
    return get_dtype(DEFAULT_DTYPE[target.ceilings.kind])


def place(op: Operator, dtype: DType, target: Target, *, tensor_cores: bool = True, warm_l2: bool = False,
          timer: str = "auto", power: str = DEFAULT_POWER, kernels: bool = True, rep_s: float | None = None,
          progress: Reporter = QUIET) -> Record:
    """The record of `op` in `dtype` on the target's roof: timed on its device when it has one, the analytic
    model otherwise; with its advice, and the target's messages last among its notes.

    `tensor_cores=False` places it on the CUDA-core pipe. The timing options are the command line's: `warm_l2`
    keeps the L2 warm between samples, `timer` and `power` choose how a GPU is timed, `kernels` records the
    kernels' names, `rep_s` is the sampling budget in seconds (None: the timers' default); `progress` hears
    each step of the timing."""
    if target.time_device is None:
        record = analytic_record(op, dtype, target.ceilings, tensor_cores)
    else:
        from roofline.measuring import runner

        budget = {} if rep_s is None else {"rep_s": rep_s}
        record = runner.measure_op(op, dtype, target, warm_l2=warm_l2, method=timer, tensor_cores=tensor_cores,
                                   power=power, kernels=kernels, progress=progress, **budget)
    return target.noted(with_advice(record, target.spec))


def run_suite(suite: Suite, target: Target, *, warm_l2: bool = False, timer: str = "auto", kernels: bool = True,
              power: str = DEFAULT_POWER, progress: Callable[[int, int, str], None] | None = None,
              reporter: Reporter = QUIET) -> list[Record]:
    """Every entry of `suite` placed on the target (`place`), in its shape and dtype for the target's kind of
    roof, each record with its entry's threshold and number (1-based, `suite_entry`). `progress(i, n, what)`
    hears of each entry and `reporter` of each step inside one (warm-up, samples)."""
    on_gpu = not target.is_cpu
    records = []
    for i, entry in enumerate(suite.entries, start=1):
        op = entry.operator(on_gpu)
        dt = get_dtype(entry.dtype_for(on_gpu))
        if progress:
            progress(i, len(suite.entries), f"{op.name} {dt.name}")
        try:
            record = place(op, dt, target, tensor_cores=entry.tensor_cores, warm_l2=warm_l2, timer=timer,
                           power=power, kernels=kernels, progress=reporter)
        except RooflineError as exc:  # which entry could not run (out of memory, a dtype the roof lacks)
            raise type(exc)(f"entry {i} ({op.name} {dt.name}): {exc}") from None
        records.append(dataclasses.replace(record, threshold=entry.threshold or None, suite_entry=i))
    return records
