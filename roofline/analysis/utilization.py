"""Model FLOPs utilization (MFU) and memory bandwidth utilization (MBU) of a step, stated right.

MFU = the step's model FLOPs at peak / the step's time, where the model FLOPs at peak is the sum over compute
pipes of (FLOPs of the matrix products, convolutions and attention placed on that pipe) / (the pipe's dense
peak): with one dtype this is the usual FLOPs / (time x peak); with several (an fp32 head beside bf16 layers)
each is divided by its own peak. Attention counts the scores its mask leaves (causal: S(S+1)/2), grouped-query
attention its real heads, and peaks are dense, never sparse (the spec files hold dense figures only).
MBU = the step's minimum bytes (capture/records.py `step_min_bytes`: the weights, the KV cache and the inputs
read once, the outputs written once) / (time x DRAM bandwidth): the decode figure inference benchmarks quote.

Each is stated for every time there is (`kernel`: the device time of the step's kernels; `wall`: a plain
call's elapsed time, measured outside the profiler; `predicted`: the roofline time of an analytic run) against
every roof there is (`datasheet`: the spec's dense peak and bandwidth; `measured`: this machine's calibrated
ceilings; a CPU has only measured ones). A figure above 100% is refused (None), with the reason in `refused`:
no step beats its roof, so the time, the peak or the count is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping

from roofline.core.format import percent
from roofline.core.model import Ceilings
from roofline.core.notes import Note
from roofline.core.summary import Utilization, UtilizationPeak

# Above this the figure is refused rather than printed: a step cannot do more than its roof allows. There is
# no slack for clocks above the datasheet's: the spec files quote dense peaks at the maximum boost clock.
MAX_UTILIZATION = 1.0
TIMES = ("kernel", "wall", "predicted")
REFUSED = "utilization.refused"  # the code of a refused figure's note (core/notes.py)


def at_peak_s(model_flops_by_pipe: Mapping[str, float], ceilings: Ceilings) -> float | None:
    """Seconds the model FLOPs take at `ceilings`' peaks, pipe by pipe; None when a pipe has no peak there."""
    total = 0.0
    for pipe, flops in model_flops_by_pipe.items():
        peak = ceilings.compute.get(pipe)
        if not peak:
            return None
        total += flops / peak
    return total


def dominant_pipe(model_flops_by_pipe: Mapping[str, float]) -> str | None:
    """The pipe holding the most model FLOPs (what a one-line MFU names)."""
    return max(model_flops_by_pipe, key=lambda p: model_flops_by_pipe[p], default=None)


def utilization(model_flops_by_pipe: Mapping[str, float], min_bytes: float, times: Mapping[str, float | None],
                roofs: Mapping[str, Ceilings | None], tokens: int | None = None) -> Utilization:
    """MFU and MBU (module docstring) for each of `times` (kernel, wall, predicted: seconds or None) against
    each of `roofs` (datasheet, measured: ceilings or None), tokens/s and FLOPs per token when `tokens` is set."""
    flops = float(sum(model_flops_by_pipe.values()))
    pipe = dominant_pipe(model_flops_by_pipe)
    peak = UtilizationPeak(pipe, {roof: c.compute.get(pipe) if c is not None and pipe else None
                                  for roof, c in roofs.items()},
                           {roof: c.dram_bytes_per_s if c is not None else None for roof, c in roofs.items()})
    mfus: dict[str, dict[str, float | None]] = {}
    mbus: dict[str, dict[str, float | None]] = {}
    refused: list[str] = []
    for kind in TIMES:
        t = times.get(kind)
        mfu: dict[str, float | None] = {}
        mbu: dict[str, float | None] = {}
        for roof, c in roofs.items():
            if c is None or not t:
                continue
            need = at_peak_s(model_flops_by_pipe, c)
            mfu[roof] = _checked(need / t if need is not None and flops else None, "MFU", kind, roof, refused)
            mbu[roof] = _checked(min_bytes / (t * c.dram_bytes_per_s) if min_bytes else None, "MBU", kind, roof,
                                 refused)
        if mfu:
            mfus[kind], mbus[kind] = mfu, mbu
    return Utilization(flops, float(min_bytes), {k: times.get(k) for k in TIMES}, mfus, mbus, tuple(refused), peak,
                       tokens or None, flops / tokens if tokens else None,
                       {k: tokens / t for k in TIMES if (t := times.get(k))} if tokens else None)


def _checked(value: float | None, what: str, kind: str, roof: str, refused: list[str]) -> float | None:
    if value is None or value <= MAX_UTILIZATION:
        return value
    refused.append(Note(REFUSED, f"{what} ({kind} time, {roof} roof) would read {percent(value)}: above 100% the "
                        "time, the peak or the count is wrong (a clock above the datasheet's boost, a time that "
                        "misses kernels, or FLOPs counted that did not run)"))
    return None
