"""The Python facade (docs/api.md), side by side: `roofline.measure(fn, flops=..., bytes=...)` times a user's
own callable (implemented in `roofline.measuring.runner`), and `roofline.analyze(op, **params)` places one
catalog operator as `roofline analyze OP` places it (`roofline.session.place`): timed when a device is there,
the analytic model alone otherwise or with `time=False`. Every error is a RooflineError."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roofline.core import validate
from roofline.core.dtypes import DType, get_dtype
from roofline.core.errors import UsageError
from roofline.measuring.choices import DEFAULT_POWER, METHODS, POWER_MODES
from roofline.measuring.runner import measure
from roofline.report.chart.model import ROOF_CHOICES

if TYPE_CHECKING:
    from roofline.core.record import Record
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
    from roofline.measuring.target import resolve_target
    from roofline.ops.base import Operator, make
    from roofline.report.progress import StatusLine
    from roofline.session import default_dtype, place

    if isinstance(op, Operator):
        if params:
            raise UsageError(f"analyze: {op.name} is already built; its shape cannot also be given "
                             f"({', '.join(sorted(params))})")
        operator = op
    elif isinstance(op, str):
        operator = make(op, **params)
    else:
        raise UsageError(f"analyze: op is an operator name (e.g. 'gemm') or an Operator, not {type(op).__name__}")
    for flag, value in (("time", time), ("tensor_cores", tensor_cores), ("warm_l2", warm_l2), ("kernels", kernels),
                        ("energy", energy)):
        validate.boolean("analyze", flag, value)  # time="no" was truthy: it timed
    for flag, value, choices in (("timer", timer, METHODS), ("power", power, POWER_MODES),
                                 ("roof", roof, ROOF_CHOICES)):
        if value is not None:
            validate.choice("analyze", flag, value, choices)
    if rep_s is not None:
        validate.number("analyze", "rep_s", rep_s, positive=True)
    given = None if dtype is None else get_dtype(dtype)  # a bad dtype is refused before any calibration
    with StatusLine(shorter=SHORTER) as line:  # a CPU without a stored roofline measures it now
        target = resolve_target(gpu=gpu, device=device, time=time, roof=roof,  # type: ignore[arg-type]
                                progress=line.status)
    from roofline.analysis.predict import predictor_for, with_prediction
    from roofline.ceilings.opdb import l2_state

    predictor = predictor_for(target.ceilings.device_id, db, l2_state(warm_l2))  # a bad database: refused
    # before any timing; a warm L2 is predicted from the warm points
    if energy:
        from roofline.measuring.energy import require_counter

        if not time:
            raise UsageError("analyze: energy=True measures the operator running on a GPU: not with time=False")
        require_counter(target.time_device)
    dt = given or default_dtype(target)
    with StatusLine(shorter=SHORTER) as line:
        record = place(operator, dt, target, tensor_cores=tensor_cores, warm_l2=warm_l2, timer=timer, power=power,
                       kernels=kernels, rep_s=rep_s, progress=line)
        if energy:
            from roofline.measuring.energy import attach_energy

            assert target.time_device is not None
            record = attach_energy([record], [(operator, dt)], target.time_device, line, target.spec)[0]
    return with_prediction(record, predictor)  # without a database: the bound, said in prediction_source
