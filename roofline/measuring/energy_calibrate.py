"""`roofline calibrate energy`: the machine's energy model from the calibration kernels.

Each kernel runs back to back under one energy window (`measuring.energy`): the bf16 tensor GEMM, the fp8
one where the GPU has fp8 tensor cores, an FP32 GEMM (the FP32 pipe), and HBM read, write and copy streams,
one read from a quarter of the SMs (a lower bandwidth) among them (`measuring.calibration_kernels`). Its average
power against its FLOP/s and bytes/s, less the static watts, gives pJ per FLOP per pipe and pJ per HBM byte read,
written and of their overlap by non-negative least squares (`core.energy.fit_energy_model`, its default form).
Then each OP_CALIBRATION operator's own kernel, at shapes the kernels suite does not use, gives that operator's
watts beyond the fitted terms (`op_w`, the mean over its shapes; measured in bf16, applied to the operator in any
dtype).
The deep-idle watts are read first (before any kernel); the static watts are the board ready with nothing
running, read right after the first kernel. The power cap is NVML's enforced limit. The model is stored beside
the ceilings (`ceilings.store.save_energy`); a model whose fit is worse than the stored one's is kept out
unless `replace` (as a CPU roof measured on a busy machine is).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from roofline.core.energy import CalibrationPoint, EnergyModel, fit_energy_model, op_watts
from roofline.measuring.device import LocalGPU

Progress = Callable[[str], None]

GEMM_N = 8192  # 2*8192^3 FLOPs: ~1.6 ms in bf16 on an H200, long enough to run at the cap's clock
FP8_N = 8192
# The FP32 pipe is calibrated by cuBLAS's FP32 GEMM, as the tensor pipes are by theirs: the kernels that spend
# FP32 FLOPs in a model. 2*6144^3 FLOPs, ~9 ms on an H200; not the kernels suite's 4096^3, which it predicts.
FP32_GEMM_N = 6144
# A new fit whose relative RMS residual is worse than the stored one's by more than this does not replace it
# (without --replace): the better fit is the better model; within it the two are the same (window noise).
KEEP_STORED_MARGIN = 0.01
# "HBM read, few SMs" runs on sm_count / this many programs: on the H200 (132 SMs) 33, which cannot draw the full
# bandwidth, so its point lies at a lower bandwidth than the other HBM kernels' (all near the HBM rate)
LOW_BW_SM_DIVISOR = 4
# exp passes per element of the "SFU stream" probe: ~2 ms per call on an H200 against ~0.6 ms for its bytes
# alone, so the SMs, not HBM, hold it
ALU_STREAM_ITERS = 32


# Catalog operators whose kernels draw watts their FLOPs and bytes do not account for (the FLOP and byte terms
# give torch's softmax, LayerNorm, GELU and RMS norm a fifth to a half less than they draw, SiLU and SDPA about a
# tenth less; a GEMV draws about a tenth less than its bytes' terms: docs/measurements.md), each at a shape of its
# own: a quarter of the kernels suite's elements for the elementwise
# ones, rows twice as wide for the row-wise ones, a quarter of its batch x heads and half its sequence for
# attention, 4 rows of a wider, shallower matrix for the GEMV; none of them the suite's, which the model predicts.
# (operator, shape): the operators whose own watts are measured, each at shapes the kernels suite does not use
# (its rows x cols 16384 x 4096, its 2**28 elements). An operator's watts beyond the fitted terms move with the
# shape by up to ~25% (scripts/experiments/energy_families.py); the mean of several shapes is what the model
# keeps.
ROWS_COLS = ({"rows": 8192, "cols": 8192}, {"rows": 65536, "cols": 1024}, {"rows": 4096, "cols": 16384})
OP_CALIBRATION: tuple[tuple[str, dict[str, int]], ...] = (
    *(("gelu", {"numel": n}) for n in (2**24, 2**26)), *(("silu", {"numel": n}) for n in (2**24, 2**26)),
    *((op, dict(shape)) for op in ("softmax", "layernorm", "rmsnorm") for shape in ROWS_COLS),
    ("attention", {"batch": 4, "heads": 16, "seq": 2048, "head_dim": 128}),
    ("gemv", {"m": 4, "n": 16384, "k": 4096}),
)
OP_CALIBRATION_DTYPE = "bf16"

Kernel = tuple[str, Callable[[], Any], dict[str, float], float, float]


def _kernels(gpu: LocalGPU) -> list[Kernel]:
    """(name, callable, FLOPs per call by compute pipe, HBM bytes read, bytes written per call) of each
    calibration kernel: the GEMMs' bytes are their minimum (each operand once)."""
    import torch

    from roofline.measuring.calibrate_gpu import BLOCK, HBM_L2_MULTIPLE, HBM_MIN_BYTES, _matmul_fn
    from roofline.measuring.calibration_kernels import copy_kernel, read_kernel, sweep_kernel, write_kernel

    spec = gpu.spec
    assert spec is not None
    out: list[Kernel] = []
    n = GEMM_N
    out.append(("bf16 GEMM", _matmul_fn("bf16", n), {"bf16_tensor_dense_tflops": 2.0 * n**3}, 2.0 * n * n * 2,
                n * n * 2.0))
    if "fp8_tensor_dense_tflops" in spec.values:
        m = FP8_N
        out.append(("fp8 GEMM", _matmul_fn("fp8", m), {"fp8_tensor_dense_tflops": 2.0 * m**3}, 2.0 * m * m,
                    m * m * 2.0))
    sms = int(spec["sm_count"])
    f = FP32_GEMM_N
    out.append(("FP32 GEMM", _matmul_fn("fp32", f), {"fp32_dense_tflops": 2.0 * f**3}, 2.0 * f * f * 4, f * f * 4.0))
    nbytes = max(HBM_MIN_BYTES, HBM_L2_MULTIPLE * int(spec["l2_cache_kib"] * 1024))
    count = nbytes // 4 // BLOCK * BLOCK
    x = torch.rand(count, device="cuda")
    y = torch.empty_like(x)
    part = torch.empty(count // BLOCK, device="cuda")
    g = (count // BLOCK,)
    b = count * 4.0
    few = (max(1, sms // LOW_BW_SM_DIVISOR),)
    out += [("HBM read", lambda: read_kernel[g](x, part, BLOCK=BLOCK, REPEAT=1, num_warps=8), {}, b, 0.0),
            # the same bytes from a quarter of the SMs (persistent programs): HBM at a lower bandwidth, so
            # a term per running kernel and the per-byte terms can be told apart
            ("HBM read, few SMs", lambda: sweep_kernel[few](x, part, count // BLOCK, BLOCK=BLOCK, REPEAT=1,
                                                            num_warps=8), {}, b, 0.0),
            ("HBM write", lambda: write_kernel[g](y, BLOCK=BLOCK, num_warps=8), {}, 0.0, b),
            ("HBM copy", lambda: copy_kernel[g](x, y, BLOCK=BLOCK, num_warps=8), {}, b, b),
            # torch's own kernels for the same traffic (as `calibrate` times them beside Triton's): the
            # elementwise kernels of a model are torch's
            ("torch sum", lambda: torch.sum(x), {}, b, 0.0),
            ("torch fill", lambda: y.fill_(1.0), {}, 0.0, b),
            ("torch copy", lambda: y.copy_(x), {}, b, b)]
    return out


def _probes(gpu: LocalGPU) -> list[Kernel]:
    """Kernels measured beside the calibration's but not fitted: the default form has no term for them. Their
    windows go into the details (`probes`), so the next analysis of model forms
    (scripts/experiments/energy_model_forms.py) can test a term for SM work that is neither FLOPs on a counted
    pipe nor HBM bytes (the default form gives the suite's GELU, SiLU, norms and softmax 15-54% less than they
    measured: `energy_model_forms.py --rows`)."""
    import torch

    from roofline.measuring.calibrate_gpu import BLOCK, FMA_ITERS, HBM_L2_MULTIPLE, HBM_MIN_BYTES
    from roofline.measuring.calibration_kernels import FMA_PER_ITER, alu_stream_kernel, fma_kernel

    spec = gpu.spec
    assert spec is not None
    nbytes = max(HBM_MIN_BYTES, HBM_L2_MULTIPLE * int(spec["l2_cache_kib"] * 1024))
    count = nbytes // 4 // BLOCK * BLOCK
    x = torch.rand(count, device="cuda")
    y = torch.empty_like(x)
    g = (count // BLOCK,)
    grid, block = int(spec["sm_count"]) * 16, 1024
    fma_out = torch.empty(grid * block, device="cuda")
    return [("SFU stream", lambda: alu_stream_kernel[g](x, y, ITERS=ALU_STREAM_ITERS, BLOCK=BLOCK, num_warps=8), {},
             count * 4.0, count * 4.0),
            # FMA chains on registers: what the FP32 pipe costs without a GEMM's operand traffic (shared memory,
            # the register file), beside the FP32 GEMM that calibrates it (docs/energy.md)
            ("FP32 FMA", lambda: fma_kernel[(grid,)](fma_out, ITERS=FMA_ITERS, BLOCK=block, num_warps=4),
             {"fp32_dense_tflops": 2.0 * FMA_PER_ITER * FMA_ITERS * grid * block}, 0.0, grid * block * 4.0)]


def calibrate_energy(gpu: LocalGPU, progress: Progress | None = None) -> tuple[EnergyModel, dict[str, Any]]:
    """Measure and fit this GPU's energy model (see the module docstring); details hold every window's figures."""
    import torch

    from roofline.measuring.energy import counter_for, idle_window, measure_fn
    from roofline.measuring.nvml import ClockSampler, _device

    say = progress or (lambda _m: None)
    t_start = time.perf_counter()
    torch.cuda.set_device(gpu.index)
    counter = counter_for(gpu.index)
    say("idle power (nothing running)")
    idle = idle_window(counter)
    idle_w = idle.power_w
    max_sm = _device(gpu.index)[2][0]
    points: list[CalibrationPoint] = []
    rows: list[dict[str, Any]] = []
    static_w: float | None = None

    def window(name: str, fn: Callable[[], Any], flops: dict[str, float], read: float, written: float
               ) -> tuple[CalibrationPoint, dict[str, Any]]:
        say(f"energy: {name}")
        e = measure_fn(fn, counter, flops=sum(flops.values()) or None, nbytes=read + written, static_w=None,
                       static_source=None, sm_clock=lambda: ClockSampler(gpu.index), graph=True)
        tau = e["per_call_s"]
        sm = ((e.get("clocks") or {}).get("sm_mhz") or {}).get("median")
        pt = CalibrationPoint(name=name, flops_per_s={p: f / tau for p, f in flops.items()},
                              read_bytes_per_s=read / tau, write_bytes_per_s=written / tau, power_w=e["power_w"],
                              sm_mhz=sm)
        return pt, {"name": name, "power_w": e["power_w"], "per_call_s": tau, "energy_j": e["energy_j"], "sm_mhz": sm,
                    "limited_by": (e.get("clocks") or {}).get("limited_by"), "counter": e["counter"]}

    for name, fn, flops, read, written in _kernels(gpu):
        pt, row = window(name, fn, flops, read, written)
        points.append(pt)
        rows.append(row)
        if static_w is None:
            torch.cuda.synchronize()
            say("static power (ready, nothing running)")
            static_w = idle_window(counter).power_w
        del fn
    probes: list[dict[str, Any]] = []
    try:  # recorded for the next analysis, not fitted: a failure here must not lose the calibration
        for name, fn, flops, read, written in _probes(gpu):
            pt, row = window(name, fn, flops, read, written)
            probes.append({**row, "point": pt.to_dict()})
            del fn
    except Exception as exc:
        probes.append({"error": f"{type(exc).__name__}: {exc}"})
    torch.cuda.empty_cache()
    assert static_w is not None
    model = fit_energy_model(points, static_w=static_w, power_cap_w=counter.power_cap_w(), idle_w=idle_w,
                             max_sm_mhz=max_sm)
    for row, pt in zip(rows, points, strict=True):
        row["predicted_power_w"] = model.power_w(pt.flops_per_s, pt.read_bytes_per_s, pt.write_bytes_per_s)
    op_rows = _operator_watts(model, counter, gpu.index, say)
    model = dataclasses.replace(model, op_w=mean_op_watts(op_rows))
    details = {"kernels": rows, "operators": op_rows, "probes": probes, "idle_counter": idle.counter_figures(),
               "seconds": time.perf_counter() - t_start,
               "torch": torch.__version__}
    return model, details


def _operator_watts(model: EnergyModel, counter: Any, index: int, say: Progress,
                    cases: tuple[tuple[str, dict[str, int]], ...] = OP_CALIBRATION) -> list[dict[str, Any]]:
    """Each OP_CALIBRATION (operator, shape)'s real kernel (`measuring.kernels.build`) in one energy window, and the
    watts it drew beyond `model`'s FLOP, byte and static terms (`core.energy.op_watts`), a row each. A shape whose
    kernel cannot be built or run here is left out with its error in its row: the model without it is still the
    model."""
    from roofline.core.dtypes import get_dtype
    from roofline.core.record import analytic_record
    from roofline.measuring.energy import measure_fn
    from roofline.measuring.kernels import build
    from roofline.measuring.target import resolve_target
    from roofline.ops.base import make

    ceilings = resolve_target(device=f"cuda:{index}", time=True).ceilings
    dtype = get_dtype(OP_CALIBRATION_DTYPE)
    out: list[dict[str, Any]] = []
    for name, params in cases:
        row: dict[str, Any] = {"op": name, "params": params, "dtype": dtype.name}
        try:
            op = make(name, None, **params)  # the shapes alone: the dtype is checked by analytic_record
            rec = analytic_record(op, dtype, ceilings, True)
            say(f"energy: {rec.label} {rec.shape} (its own watts)")
            built = build(op, dtype, f"cuda:{index}")
            e = measure_fn(built.fn, counter, flops=rec.flops, nbytes=rec.bytes, static_w=None, static_source=None,
                           graph=built.graph_safe)
            del built
            w = op_watts(model, e["energy_j"], rec.compute_pipe or "", rec.flops or 0.0, rec.bytes_read or 0.0,
                         rec.bytes_written or 0.0, e["per_call_s"])
            row.update(op_w=w, power_w=e["power_w"], per_call_s=e["per_call_s"], energy_j=e["energy_j"],
                       method=e.get("method"))
        except Exception as exc:  # one operator's failure must not lose the calibration
            row["error"] = f"{type(exc).__name__}: {exc}"
        out.append(row)
    return out


def mean_op_watts(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Operator -> the mean of its own watts over the shapes measured (rows without `op_w` failed: left out)."""
    by_op: dict[str, list[float]] = {}
    for r in rows:
        if "op_w" in r:
            by_op.setdefault(r["op"], []).append(r["op_w"])
    return {op: sum(ws) / len(ws) for op, ws in by_op.items()}


def kept_stored_model(new: EnergyModel, stored: EnergyModel | None) -> str | None:
    """Why a new fit must not replace the stored model (its residual is worse by KEEP_STORED_MARGIN), or None."""
    if stored is None or stored.residual is None or new.residual is None:
        return None
    if new.residual <= stored.residual + KEEP_STORED_MARGIN:
        return None
    return (f"kept the stored energy model (fit residual {stored.residual:.1%}): this one fits worse "
            f"({new.residual:.1%}); `roofline calibrate energy --replace` stores it anyway")


def calibrate_and_store(index: int, progress: Progress | None = None, replace: bool = False
                        ) -> tuple[EnergyModel, dict[str, Any]]:
    """Fit this GPU's energy model and store it, unless the stored one fits better and not `replace`: then the
    stored model is returned, with the reason in the details' `kept_stored`."""
    from roofline.ceilings.store import gpu_key, save_energy
    from roofline.core.errors import RooflineError
    from roofline.measuring.energy import require_counter, stored_model, this_gpu

    require_counter(f"cuda:{index}")  # no counter, or no GPU: one line, exit 2, before any kernel
    gpu = this_gpu(index)
    if gpu is None or gpu.spec is None:
        raise RooflineError(f"no spec file for cuda:{index}: the energy calibration needs its SM count and L2 size")
    model, details = calibrate_energy(gpu, progress)
    stored = stored_model(index)
    kept = None if replace else kept_stored_model(model, stored)
    if kept and stored is not None:
        return stored, {**details, "kept_stored": kept, "measured": model.to_dict()}
    save_energy(gpu_key(gpu.nvml_name, gpu.driver_version), model.to_dict(), details)
    return model, details
