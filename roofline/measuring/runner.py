"""Measure an operator on a device and fold the timing into its roofline record (`measure_op`, what
`roofline.session.place` times a catalog operator with).

Also users' own kernels: `measure(fn, flops=..., bytes=...)`, exported as `roofline.measure` by roofline/api.py
(docs/api.md).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable
from typing import Any

from roofline.ceilings.specs import gpu_ceilings
from roofline.core import validate
from roofline.core.cpu_pipes import CPU_ARITHMETIC
from roofline.core.device import cuda_index
from roofline.core.dtypes import DType, get_dtype
from roofline.core.errors import RooflineError, UsageError
from roofline.core.format import percent
from roofline.core.model import ABOVE_ROOF, Ceilings, above_roof
from roofline.core.progress import QUIET, Reporter
from roofline.core.record import Clocks, Record, analytic_record, placed_record, requoted, with_time
from roofline.measuring.correctness import check_reference
from roofline.measuring.target import Target, resolve_target
from roofline.measuring.timing import DEFAULT_POWER, FLUSH_L2_MULTIPLE, Measurement
from roofline.measuring.timing_cpu import time_cpu
from roofline.measuring.timing_cuda import TimingOptions, time_cuda
from roofline.ops.base import Operator

# Peaks are re-quoted at the observed SM clock when it differs from the spec's by more than this:
# within 5% the difference is inside the run-to-run spread of long kernels.
CLOCK_SCALE_THRESHOLD = 0.05
# A minimum SM clock this far under the median means the clock moved during the run: say so.
CLOCK_DROP_WARN = 0.05
# Keep this fraction of the free memory for the allocator, the flush buffer's neighbours and cuBLAS workspaces.
MEMORY_HEADROOM = 0.9


def available_bytes(device: str) -> float:
    """Free device memory (CUDA) or available host memory (CPU, from /proc/meminfo)."""
    if device.startswith("cuda"):
        import torch

        free, _ = torch.cuda.mem_get_info(torch.device(device))
        return float(free)
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))


def guard_memory(need: float, device: str, what: str) -> None:
    """Refuse before allocating when the inputs would not fit."""
    have = available_bytes(device)
    if need > have * MEMORY_HEADROOM:
        raise RooflineError(f"{what} needs about {need / 2**30:.1f} GiB but {device} has {have / 2**30:.1f} GiB "
                            "free: use a smaller shape")


def kernel_profile(fn: Callable[[], Any], device: str) -> list[tuple[str, float]]:
    """The device kernels (and memsets) one call launches, in order of first launch, with each one's device
    time summed over the call, from torch.profiler (CUPTI's records). Empty on the CPU.

    NB: one call, after the timing, without an L2 flush: a breakdown of where the time goes, not a second
    measurement of it."""
    if not device.startswith("cuda"):
        return []
    import torch

    from roofline.measuring.cupti import device_profiler

    with device_profiler() as prof:
        fn()
        torch.cuda.synchronize()
    times: dict[str, float] = {}
    for evt in prof.events():
        if evt.device_type == torch.autograd.DeviceType.CUDA:
            times[evt.name] = times.get(evt.name, 0.0) + evt.time_range.elapsed_us() * 1e-6
    return list(times.items())


def _scaled_ceilings(target: Target, clocks: Clocks | None) -> tuple[Ceilings, list[str]]:
    """Ceilings re-quoted at the observed SM clock when it is off the spec's by > CLOCK_SCALE_THRESHOLD."""
    notes: list[str] = []
    sm = clocks.sm_mhz if clocks else None
    if clocks is None or target.spec is None or not sm or target.ceilings.source != "datasheet":
        return target.ceilings, notes
    observed, boost = sm["median"], target.spec["boost_clock_mhz"]
    if sm["min"] < sm["median"] * (1 - CLOCK_DROP_WARN) or clocks.limited_by:
        why = ", ".join(clocks.limited_by or []) or "reason not reported"
        notes.append(f"SM clock moved during the run: {sm['min']:.0f}-{sm['max']:.0f} MHz, median {observed:.0f} "
                     f"({why})")
    if abs(observed - boost) / boost > CLOCK_SCALE_THRESHOLD:
        notes.append(f"peak re-quoted at the observed SM clock {observed:.0f} MHz (spec boost {boost:.0f} MHz)")
        return gpu_ceilings(target.spec, observed), notes
    return target.ceilings, notes


def finish_record(record: Record, m: Measurement, target: Target, dtype: DType, uses_tensor_cores: bool,
                  tensor_cores: bool) -> Record:
    """The record with a measurement folded in: clocks, the (maybe re-quoted) peak, median, samples, verdict."""
    ceilings, clock_notes = _scaled_ceilings(target, m.clocks)
    if ceilings is not target.ceilings:
        record = requoted(record, ceilings, dtype, uses_tensor_cores, tensor_cores,
                          target.spec["boost_clock_mhz"] if target.spec else None)
    record = with_time(record, m.median_s)
    kernels, kernel_times_s = record.kernels, record.kernel_times_s  # kept when the timer saw no kernels
    if m.kernel_medians_s:
        kernels, kernel_times_s = [n for n, _ in m.kernel_medians_s], [t for _, t in m.kernel_medians_s]
    record = dataclasses.replace(
        record, time_samples_s=m.times_s,  # raw event intervals less timing.timer_overhead_s, or kernel sums
        timing=m.timing(), clocks=m.clocks, kernels=kernels, kernel_times_s=kernel_times_s,
        notes=[*record.notes, *m.notes, *clock_notes])
    record = _judged(record, target.ceilings)
    notes: list[str] = []
    if m.summary.noisy:
        other = "GPU work" if target.time_device and target.time_device.startswith("cuda") else "work on this machine"
        notes.append(f"noisy: IQR is {m.summary.relative_iqr:.0%} of the median; close other {other} and run again")
    return dataclasses.replace(record, notes=[*record.notes, *notes])


def above_roof_cause(record: Record, roof_source: str, roof_held: bool = False,
                     fp32_rate: float | None = None) -> tuple[str, str] | None:
    """For a record above its roof (`core.model.above_roof`): which is wrong, 'roof' or 'model', and why, said
    plainly; None for a record under its roof. `roof_held`: the CPU roof was re-measured and did not rise;
    `fp32_rate`: the CPU's fp32 rate, which a bf16/fp16 kernel placed on its matmul rate may compute at."""
    if not above_roof(record.roofline_fraction):
        return None
    reduced = record.device_kind == "cpu" and record.compute_pipe in ("cpu_bf16", "cpu_fp16")
    if (record.bound == "compute" and reduced and fp32_rate and record.achieved_flops_per_s
            and fp32_rate > record.peak_flops_per_s and record.achieved_flops_per_s <= fp32_rate * ABOVE_ROOF):
        return "roof", (f"the CPU's {record.dtype} matmul rate is no roof for this kernel, which computes in fp32 "
                        "as most of ATen's CPU kernels do (core/cpu_pipes.py): measure(..., family='attention', "
                        "'elementwise', 'norm', ...) places it on the rate it computes at")
    if record.bound == "memory":
        if record.memory_level:
            return "model", (f"faster than the measured {record.memory_level.upper()} roof it was placed on: the "
                             "call moves fewer bytes than the model counts")
        cpu = " (`roofline calibrate` measures this CPU's cache roofs)" if record.device_kind == "cpu" else ""
        assert record.bytes is not None  # a memory-bound verdict was reached from a byte count
        return "roof", (f"the DRAM roof does not apply: the working set ({record.bytes / 1e6:.3g} MB) is served "
                        f"from the caches{cpu}")
    if roof_source != "measured":
        return "roof", "check the spec's peak for this dtype"
    if roof_held:
        return "model", ("faster than a matmul of this dtype re-measured now: the FLOP count overstates the work "
                         "(or this shape runs faster than the calibration's products)")
    return "roof", ("the measured compute roof is low: that calibration probably ran on a busy machine; run "
                    "`roofline calibrate` again")


def above_roof_notes(record: Record, roof_source: str, roof_held: bool = False,
                     fp32_rate: float | None = None) -> list[str]:
    """The record's note for a time above its roof: how far, and which is wrong (`above_roof_cause`)."""
    cause = above_roof_cause(record, roof_source, roof_held, fp32_rate)
    if cause is None:
        return []
    return [f"{record.roofline_fraction:.0%} of the roofline, above its roof: the {cause[0]} is wrong: {cause[1]}"]


def verdict(bound: str, fraction: float | None, culprit: str | None = None) -> str:
    """'memory-bound, 87% of the roofline'; above the roof, which is wrong instead of a verdict."""
    if culprit and above_roof(fraction):
        return f"above its roof ({fraction:.0%} of the roofline): the {culprit} is wrong, see the notes"
    base = f"{bound}-bound"
    # A small fraction reads '<1%', as in the profile tables, never '0%' (a busy CPU's gemv at 0.12%).
    return base if fraction is None else f"{base}, {percent(fraction, 0, nonzero=True)} of the roofline"


def _judged(record: Record, ceilings: Ceilings, roof_held: bool = False) -> Record:
    """The record's verdict and above-the-roof note (`above_roof_cause`), replacing earlier ones."""
    fp32 = ceilings.compute.get("cpu_fp32") if ceilings.kind == "cpu" else None
    stale = {n for held in (False, True) for rate in (None, fp32)
             for n in above_roof_notes(record, ceilings.source, held, rate)}
    cause = above_roof_cause(record, ceilings.source, roof_held, fp32)
    return dataclasses.replace(
        record, verdict=verdict(record.bound or "", record.roofline_fraction, cause[0] if cause else None),
        notes=[*(n for n in record.notes if n not in stale),
               *above_roof_notes(record, ceilings.source, roof_held, fp32)])


def cpu_roof_checked(record: Record, target: Target, placed_on: Callable[[Ceilings], Record],
                     progress: Reporter = QUIET) -> tuple[Record, list[str]]:
    """A CPU record that beats its measured roof re-measures it (`recheck_cpu_roof`): a raised roof replaces the
    target's, so that the document and the records after this one use it too, and the record is placed again
    (`placed_on(ceilings)`); a roof that held makes the model the culprit. A roof measured on a busy machine is
    named in the record's notes. The record, and the re-measurement's notes."""
    if not target.is_cpu or (target.time_device or "").startswith("cuda"):
        return record, []
    from roofline.measuring.calibrate import calibration_warnings, recheck_cpu_roof

    ceilings, roof_notes = recheck_cpu_roof(record, target.ceilings, progress.status)
    if ceilings is not target.ceilings:
        target.ceilings = ceilings
        record = placed_on(ceilings)
    elif roof_notes:  # re-measured and held: the model is wrong, not the roof
        record = _judged(record, ceilings, roof_held=True)
    return dataclasses.replace(record, notes=[*record.notes, *roof_notes, *calibration_warnings(ceilings)]), roof_notes


def measure_op(op: Operator, dtype: DType, target: Target, *, warm_l2: bool = False, method: str = "auto",
               tensor_cores: bool = True, kernels: bool = True, rep_s: float | None = None,
               power: str = DEFAULT_POWER, progress: Reporter = QUIET) -> Record:
    """Build the real kernel for `op`, time it on the target's device, return the full record; `progress`
    hears each step. On the CPU, a roof the record beats is re-measured and replaces the target's, so that the
    document and the records after this one use it too (`recheck_cpu_roof`), and a roof measured on a busy
    machine is named in the record's notes."""
    import time

    from roofline.measuring.kernels import build, footprint_bytes

    t_start = time.perf_counter()
    device = target.time_device
    assert device is not None
    record = analytic_record(op, dtype, target.ceilings, tensor_cores)
    l2 = target.l2_bytes
    need = footprint_bytes(op, dtype) + (FLUSH_L2_MULTIPLE * (l2 or 0) if not warm_l2 else 0)
    guard_memory(need, device, f"{op.name} {dtype.name}")
    progress.status("building the inputs")
    built = build(op, dtype, device)
    kw: dict[str, Any] = {} if rep_s is None else {"rep_s": rep_s}
    t_built = time.perf_counter()
    if device.startswith("cuda"):
        progress.status(f"timing on {device}")
        m = time_cuda(built.fn, TimingOptions(method=method, power=power, compute_bound=record.bound == "compute",
                                              warm_l2=warm_l2, graph_safe=built.graph_safe, **kw), device, l2)
    else:
        cuda_only = [f"--{flag} {value}" for flag, value, default in (("timer", method, "auto"),
                                                                       ("power", power, DEFAULT_POWER))
                     if value != default]
        if cuda_only:
            progress.notice(f"{', '.join(cuda_only)}: CUDA only (the CPU is timed by its host clock)")
        m = time_cpu(built.fn, progress=progress, **kw)
    t_timed = time.perf_counter()
    record = finish_record(record, m, target, dtype, op.uses_tensor_cores, tensor_cores)
    record, roof_notes = cpu_roof_checked(
        record, target, lambda c: finish_record(analytic_record(op, dtype, c, tensor_cores), m, target, dtype,
                                                op.uses_tensor_cores, tensor_cores), progress)
    t_roof = time.perf_counter()  # after a CPU roof's re-measurement, when one ran
    if not m.kernel_medians_s:  # timed by kernel timestamps, the record holds each kernel's sample median
        if kernels and device.startswith("cuda"):
            progress.status("recording the kernels (torch profiler)")
        profiled = kernel_profile(built.fn, device) if kernels else []
        record = dataclasses.replace(record, kernels=[name for name, _ in profiled],
                                     kernel_times_s=[t for _, t in profiled])  # one profiled call, per kernel
    assert record.timing is not None
    phases = {"build": t_built - t_start, "time": t_timed - t_built, "kernels": time.perf_counter() - t_roof,
              **({"roof": t_roof - t_timed} if roof_notes else {})}
    return dataclasses.replace(record, impl=built.impl, extra_passes=built.extra_passes or None,
                               timing=dataclasses.replace(record.timing, phases_s=phases))


def measure(fn: Callable[[], Any], *, flops: float, bytes: float, dtype: str | DType | Any | None = None,
            device: str | None = None, gpu: str | None = None, name: str = "custom", tensor_cores: bool = True,
            warm_l2: bool = False, bytes_written: float | None = None, ref: Callable[[], Any] | None = None,
            atol: float | None = None, rtol: float | None = None, params: dict[str, Any] | None = None,
            rep_s: float | None = None, energy: bool = False, family: str | None = None) -> Record:
    """Time a user's zero-argument callable and place it on the roofline; returns a schema-v1 record.
    `bytes` is the total minimum traffic; `bytes_written` splits it (default: the split is unknown, and
    the record counts every byte as read and says so).

    `dtype` picks the roof: a name ("bf16", "float32") or a torch dtype (`torch.bfloat16`); without it, `fn` is
    called once and the dtype of the first floating-point tensor it returns is taken (`infer_dtype`).
    `ref`: a zero-argument reference callable. Both run once before anything is timed, and a kernel whose
    output is not close to the reference's (`roofline.measuring.correctness`; `atol`/`rtol` default to the
    output dtype's) is refused with one RooflineError saying where. `params` names the shape in the record
    (what `roofline check` matches records by, with `name` and `dtype`); `rep_s` is the sampling budget;
    `energy` also measures its joules per call on the GPU's NVML energy counter (`record.energy`; on the CPU or
    a GPU without the counter, a UsageError before anything runs).
    `family` ('attention', 'elementwise', 'norm', ...: core/cpu_pipes.py) picks the CPU rate the kernel computes
    at; without it a CPU kernel sits under its dtype's matmul rate.
    The record's notes keep what the target had to say (a CPU roofline measured now, the CPU timed because
    torch cannot reach the GPU). Every error is a RooflineError.

    >>> rec = roofline.measure(lambda: a @ b, flops=2 * m * n * k, bytes=2 * (m * k + k * n + m * n),
    ...                        ref=lambda: (a.float() @ b.float()).half())
    """
    _check_measure_args(fn, flops, bytes, bytes_written, ref, atol, rtol, rep_s, family, name=name, params=params,
                        flags={"tensor_cores": tensor_cores, "warm_l2": warm_l2, "energy": energy})
    dt, how = _measure_dtype(fn, dtype, name)
    if ref is not None:  # a wrong kernel is refused before the target (maybe a CPU calibration) is resolved
        check_reference(fn, ref, rtol=rtol, atol=atol, what=f"measure {name!r}: the kernel")
    target = resolve_target(gpu=gpu, device=device, time=True)
    if target.time_device is None:
        raise RooflineError("measure: no device to time on (the --gpu spec is not this machine's GPU)")
    if energy:
        from roofline.measuring.energy import require_counter

        require_counter(target.time_device)
    record = measure_on(target, fn, flops=flops, bytes=bytes, dtype=dt, name=name, tensor_cores=tensor_cores,
                        warm_l2=warm_l2, bytes_written=bytes_written, params=params, rep_s=rep_s, family=family)
    if energy:
        from roofline.core.record import evolve
        from roofline.measuring.energy import record_energy, with_model

        index = cuda_index(target.time_device)
        # replayed as a graph where its timing captured one (a failed capture can break the CUDA context: never twice)
        graphed = record.timing is not None and record.timing.method != "events"
        fields = record_energy(fn, target.time_device, record.flops, record.bytes, graph=graphed)
        record = evolve(record, energy=with_model(fields, record, index))
    return dataclasses.replace(record, notes=[*how, *record.notes]) if how else record


def measure_on(target: Target, fn: Callable[[], Any], *, flops: float, bytes: float,
               dtype: str | DType | Any | None = None, name: str = "custom", tensor_cores: bool = True,
               warm_l2: bool = False, bytes_written: float | None = None, ref: Callable[[], Any] | None = None,
               atol: float | None = None, rtol: float | None = None, params: dict[str, Any] | None = None,
               rep_s: float | None = None, family: str | None = None) -> Record:
    """`measure` on a target already resolved (the pytest plugin resolves one per session); the target's
    messages are kept last among the record's notes, as `roofline.session.place` keeps them."""
    _check_measure_args(fn, flops, bytes, bytes_written, ref, atol, rtol, rep_s, family, name=name, params=params,
                        flags={"tensor_cores": tensor_cores, "warm_l2": warm_l2})
    device = target.time_device
    if device is None:
        raise RooflineError("measure: no device to time on (the target is analytic only)")
    dt, how = _measure_dtype(fn, dtype, name)
    if ref is not None:
        check_reference(fn, ref, rtol=rtol, atol=atol, what=f"measure {name!r}: the kernel")
    def placed_on(ceilings: Ceilings) -> Record:
        return placed_record(
            op=name, variant=None, params=dict(params or {}), dtype=dt, flops=float(flops),
            bytes_read=float(bytes - (bytes_written or 0)), bytes_written=float(bytes_written or 0),
            ceilings=ceilings, uses_tensor_cores=tensor_cores, allow_tensor_cores=tensor_cores, family=family,
            notes=[*how, *([] if bytes_written is not None else
                           ["read/written split not given: all bytes counted as read"])])

    record = placed_on(target.ceilings)
    kw: dict[str, Any] = {} if rep_s is None else {"rep_s": rep_s}
    if device.startswith("cuda"):
        l2 = target.l2_bytes
        m = time_cuda(fn, TimingOptions(compute_bound=record.bound == "compute", warm_l2=warm_l2, **kw), device, l2)
    else:
        m = time_cpu(fn, **kw)
    record, _ = cpu_roof_checked(finish_record(record, m, target, dt, tensor_cores, tensor_cores), target,
                                 lambda c: finish_record(placed_on(c), m, target, dt, tensor_cores, tensor_cores))
    return target.noted(record)


def _check_measure_args(fn: Any, flops: Any, bytes: Any, bytes_written: Any, ref: Any, atol: Any, rtol: Any,
                        rep_s: Any, family: Any = None, *, name: Any = "custom", params: Any = None,
                        flags: dict[str, Any] | None = None) -> None:
    """measure's arguments, checked before anything runs (`roofline.core.validate`: one UsageError each);
    `flags`: its True/False options by name."""
    validate.callable_arg("measure", "fn", fn, hint="a zero-argument callable: lambda: a @ b, not a @ b")
    validate.name_arg("measure", "name", name, example="'my_matmul'")
    validate.json_value("measure", "params", validate.mapping("measure", "params", params, example="{'n': 128}"))
    for flag, value in (flags or {}).items():
        validate.boolean("measure", flag, value)
    validate.number("measure", "flops", flops, minimum=0)
    validate.number("measure", "bytes", bytes, positive=True)
    if not math.isfinite(float(flops) / float(bytes)):  # 1e308 FLOPs over 1e-308 bytes: an intensity of inf
        raise UsageError(f"measure: flops / bytes (the arithmetic intensity) must be a finite number, got "
                         f"{flops!r} / {bytes!r}")
    if bytes_written is not None and validate.number("measure", "bytes_written", bytes_written, minimum=0) > bytes:
        raise UsageError(f"measure: bytes_written must be between 0 and bytes ({bytes:g}), got {bytes_written!r}")
    if ref is not None:
        validate.callable_arg("measure", "ref", ref, hint="a zero-argument callable giving the expected output")
    if ref is None and (atol is not None or rtol is not None):
        raise UsageError("measure: atol/rtol are tolerances of the check against ref=: pass ref= too")
    for name, value in (("atol", atol), ("rtol", rtol)):
        if value is not None:
            validate.number("measure", name, value, minimum=0)
    if rep_s is not None:
        validate.number("measure", "rep_s", rep_s, positive=True)
    if family is not None and family not in CPU_ARITHMETIC:
        raise UsageError(f"measure: family must be one of {', '.join(CPU_ARITHMETIC)} (the operator family whose "
                         f"CPU rate is the roof), got {family!r}")


def _measure_dtype(fn: Callable[[], Any], dtype: str | DType | Any | None, name: str) -> tuple[DType, list[str]]:
    """The dtype `measure` places the kernel with, and a note when it was inferred (the record says how its
    roof was chosen). A given dtype is used as it is, and `fn` is not called for it."""
    if dtype is not None:
        return get_dtype(dtype), []
    dt, found = infer_dtype(fn(), f"measure {name!r}")
    return dt, [f"dtype {dt.name}: from the {found} that the callable returns (pass dtype= to choose the roof)"]


def infer_dtype(output: Any, what: str = "measure") -> tuple[DType, str]:
    """The dtype of the first floating-point tensor in `output` (a tensor, or nested tuples, lists and dicts
    of them, in order), and which one it was ("output[0] (float16)"). A kernel's arithmetic runs in
    the dtype of what it writes: an fp32 matmul on the CPU is judged against the FP32 roof, not fp16's.

    NB: an fp32 output of a matmul run in TF32 (torch.backends.cuda.matmul.allow_tf32) reads as fp32: pass
    dtype="tf32" for the TF32 roof."""
    found = _first_float_tensor(output, "output")
    if found is None:
        got = (validate.a_noun(f"{str(output.dtype).removeprefix('torch.')} tensor") if hasattr(output, "dtype")
               else "None" if output is None else f"a {type(output).__name__}")
        raise UsageError(f"{what}: cannot tell the dtype: the callable returns no floating-point tensor "
                         f"({got}); pass dtype= (e.g. dtype=torch.bfloat16; dtype='int8' for an integer kernel "
                         "on a GPU: the CPU's roofline has no integer rate)")
    path, tensor = found
    return get_dtype(tensor.dtype), f"{path} ({str(tensor.dtype).removeprefix('torch.')})"


def _first_float_tensor(value: Any, path: str) -> tuple[str, Any] | None:
    """(path, tensor) of the first floating-point tensor in `value`, depth first, or None."""
    if hasattr(value, "is_floating_point") and hasattr(value, "dtype"):  # a torch.Tensor, without importing torch
        return (path, value) if value.is_floating_point() else None
    if isinstance(value, dict):
        items: list[tuple[str, Any]] = [(f"{path}[{k!r}]", v) for k, v in value.items()]
    elif isinstance(value, (tuple, list)):
        items = [(f"{path}[{i}]", v) for i, v in enumerate(value)]
    else:
        return None
    for sub, v in items:
        found = _first_float_tensor(v, sub)
        if found is not None:
            return found
    return None
