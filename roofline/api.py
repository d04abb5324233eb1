"""The Python facade (docs/api.md), side by side: `roofline.measure(fn, flops=..., bytes=...)` times a user's
own callable (implemented in `roofline.measuring.runner`), and `roofline.analyze(op, **params)` places one
catalog operator as `roofline analyze OP` places it (`roofline.session.place_ops`): timed when a device is there,
the analytic model alone otherwise or with `time=False`. Every error is a RooflineError."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from roofline.core import validate
from roofline.core.dtypes import DType
from roofline.core.errors import UsageError
from roofline.measuring.choices import DEFAULT_POWER, METHODS, POWER_MODES
from roofline.measuring.runner import measure
from roofline.report.chart.model import ROOF_CHOICES

if TYPE_CHECKING:
    from roofline.core.record import Record
    from roofline.measuring.target import RoofChoice
    from roofline.ops.base import Operator

__all__ = ["analyze", "measure"]

# What a long CPU timing's note suggests instead (the `shorter` of the status line).
SHORTER = "a smaller shape, or time=False for the model alone, is quicker"


def analyze(op: str | Operator, *, dtype: str | DType | Any | None = None, gpu: str | None = None,
            device: str | None = None, time: bool = True, tensor_cores: bool = True, warm_l2: bool = False,
            timer: str = "auto", power: str = DEFAULT_POWER, kernels: bool = True, roof: str | None = None,
            rep_s: float | None = None, db: str | Any | None = None, energy: bool = False, **params: Any) -> Record:
    """The record of one catalog operator: `analyze("gemm", m=4096, n=4096, k=4096, dtype="bf16")`.

    `op` is an operator name (`roofline ops list`) with its shape as keywords (the `analyze` command's flags,
    `head_dim=128` for `--head-dim 128`), or an operator built by `roofline.ops.make`. The options are the
    command's: `dtype` a name or a torch dtype (default fp16 on a GPU, fp32 on the CPU); `gpu` the spec whose
    roof to use (another GPU's spec means analytic only, and the record's notes say so); `device` where to
    time; `time=False` the model alone (`--no-time`); `tensor_cores=False` the CUDA-core roof; `warm_l2`,
    `timer`, `power`, `kernels`, `roof` as on the command line; `rep_s` the sampling budget in seconds; `db`
    the operator database of the predicted time (default: this device's; docs/prediction.md); `energy` the
    joules per call on the GPU's energy counter (`--energy`: a UsageError on the CPU or with time=False).
    The record carries the advice `roofline analyze` prints. A step that takes long shows a transient
    status line on stderr when stderr is a terminal."""
    from roofline.ops.base import Operator, make
    from roofline.session import Options, Where, op_entries, place_ops

    if isinstance(op, Operator):
        if params:
            raise UsageError(f"analyze: {op.name} is already built; its shape cannot also be given "
                             f"({', '.join(sorted(params))})")
        operator = op
    elif isinstance(op, str):
        operator = make(op, **params)
    else:
        raise UsageError(f"analyze: op is an operator name (e.g. 'gemm') or an Operator, not {type(op).__name__}")
    for flag, on in (("time", time), ("tensor_cores", tensor_cores), ("warm_l2", warm_l2), ("kernels", kernels),
                     ("energy", energy)):
        validate.boolean("analyze", flag, on)  # time="no" was truthy: it timed
    for flag, value, choices in (("timer", timer, METHODS), ("power", power, POWER_MODES),
                                 ("roof", roof, ROOF_CHOICES)):
        if value is not None:
            validate.choice("analyze", flag, value, choices)
    if rep_s is not None:
        validate.number("analyze", "rep_s", rep_s, positive=True)
    entries = op_entries([operator], dtype, tensor_cores)  # a bad dtype is refused before any calibration
    options = Options(warm_l2=warm_l2, timer=timer, power=power, kernels=kernels, rep_s=rep_s, energy=energy, db=db)
    where = Where(gpu, device, time, cast("RoofChoice | None", roof))  # checked above: one of ROOF_CHOICES
    return place_ops(entries, where, options, shorter=SHORTER).records[0]
