"""GPU calibration: the ceilings this GPU really reaches, per memory level and per dtype.

- HBM: read-only, write-only and copy bandwidth on a buffer of >= 8x the L2, by Triton kernels (16-byte
  accesses, one pass) and by torch's own kernels; the better of the two is kept, and which one is said.
- L2: a working-set sweep from 1 MiB to 8x the L2 with L1-bypassing (`.cg`) loads that re-read the working
  set; the L2 figure is the best over working sets of at most half the L2.
- Shared memory: a CUDA kernel compiled at run time by NVRTC (through CuPy) that streams 16-byte shared
  loads without bank conflicts. Triton exposes no shared memory, and torch's inline extensions need a
  minute of nvcc; where CuPy is missing the figure is skipped with a message.
- Compute: torch matmul per dtype over a sweep of square shapes (the best kept), fp8 via torch._scaled_mm,
  int8 via torch._int_mm; the plain FP32 peak from an FMA-chain kernel.
Every figure is reported beside the datasheet number, with the ratio and the SM clock seen during it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

from roofline.ceilings.specs import GPUSpec
from roofline.core.model import Ceilings
from roofline.measuring.cuda_events import event_times
from roofline.measuring.device import LocalGPU
from roofline.measuring.nvml import ClockSampler

Progress = Callable[[str], None]

# The HBM buffer is at least this multiple of the L2 (the issue's >= 8x) and at least 1 GiB.
HBM_L2_MULTIPLE = 8
HBM_MIN_BYTES = 2**30
# Working sets of the L2 sweep, as fractions and multiples of the L2 size.
L2_SWEEP_FRACTIONS = (1 / 64, 1 / 32, 1 / 16, 1 / 8, 1 / 4, 3 / 8, 1 / 2, 3 / 4, 1, 1.5, 2, 4, 8)
L2_BYTES_PER_POINT = 2 * 2**30  # each sweep point re-reads its working set until this many bytes moved
L2_PROGRAMS_PER_SM = 4  # persistent programs of 8 warps: 32 warps per SM keep enough loads in flight
BLOCK = 4096  # fp32 elements per Triton program: 16 KiB, 16 elements (four 16-byte loads) per thread
MATMUL_SIZES = {  # square sizes swept per dtype (full / quick)
    "fp64": ((4096, 8192), (8192,)),
    "fp32": ((4096, 8192), (8192,)),
    "tf32": ((4096, 8192, 12288), (8192,)),
    "fp16": ((4096, 6144, 8192, 12288, 16384), (8192,)),
    "bf16": ((4096, 6144, 8192, 12288, 16384), (8192,)),
    "fp8": ((4096, 8192, 12288, 16384), (8192,)),
    "int8": ((4096, 8192, 16384), (8192,)),
}
SPEC_KEY = {"fp32": "fp32_dense_tflops", "tf32": "tf32_tensor_dense_tflops", "fp16": "fp16_tensor_dense_tflops",
            "bf16": "bf16_tensor_dense_tflops", "fp8": "fp8_tensor_dense_tflops", "int8": "int8_tensor_dense_tops"}
# A measured figure below this fraction of the datasheet is flagged: the path (library, kernel) is far
# from the hardware's peak, which a user must know before trusting that roof (e.g. int8 via _int_mm).
FAR_BELOW_PEAK = 0.5
FMA_ITERS = 2048
# Full calibration idles the GPU this long before each matmul size, so its first samples run before the
# power cap engages: the best sample is then the burst peak, not whatever cap state the previous sweep
# left (fp8 figures spread 7.7% over three runs without it; quick mode, one size per dtype, skips it).
MATMUL_COOL_S = 0.25
SMEM_ITERS = 4096


def _bench(fn: Callable[[], Any], reps: int, warmup: int = 2, best: bool = False) -> float:
    """Median (or, with `best`, least) seconds of `fn` over `reps` event-timed calls, after `warmup` calls."""
    for _ in range(warmup):
        fn()
    times = sorted(event_times(fn, reps))
    return times[0] if best else times[len(times) // 2]


class _Figures:
    """Collects every figure with its datasheet counterpart and the SM clock seen while measuring it."""

    def __init__(self, spec: GPUSpec, index: int) -> None:
        self.spec = spec
        self.index = index
        self.rows: list[dict[str, Any]] = []

    def measure(self, name: str, unit: str, datasheet: float | None, fn: Callable[[], tuple[float, dict[str, Any]]],
                ) -> float:
        with ClockSampler(self.index) as cs:
            value, extra = fn()
        sm = cs.report.sm_mhz_median
        ratio = value / datasheet if datasheet else None
        row = {"name": name, "unit": unit, "value": value, "datasheet": datasheet, "ratio": ratio,
               "sm_clock_mhz": sm, "limited_by": cs.report.reason_names(), **extra}
        if ratio is not None and ratio < FAR_BELOW_PEAK:
            row["warning"] = (f"{name} reaches only {ratio:.0%} of the datasheet peak through this path: "
                              "that roof reflects the library, not the hardware")
        self.rows.append(row)
        return value


def _hbm(fig: _Figures, l2_bytes: int, say: Progress) -> dict[str, float]:
    import torch

    from roofline.measuring.calibration_kernels import copy_kernel, read_kernel, write_kernel

    nbytes = max(HBM_MIN_BYTES, HBM_L2_MULTIPLE * l2_bytes)
    n = nbytes // 4 // BLOCK * BLOCK
    nbytes = n * 4
    x = torch.rand(n, device="cuda")
    y = torch.empty_like(x)
    part = torch.empty(n // BLOCK, device="cuda")
    grid = (n // BLOCK,)
    ds = fig.spec["memory_bandwidth_gbps"] * 1e9
    out: dict[str, float] = {}

    def best(triton_fn: Callable[[], Any], torch_fn: Callable[[], Any], moved: int) -> tuple[float, dict[str, Any]]:
        """The faster of a Triton kernel and torch's own op for the same traffic."""
        t_tr, t_pt = _bench(triton_fn, 10), _bench(torch_fn, 10)
        t, how = (t_tr, "triton kernel") if t_tr <= t_pt else (t_pt, "torch op")
        return moved / t, {"method": how, "buffer_bytes": nbytes, "triton_bps": moved / t_tr,
                           "torch_bps": moved / t_pt}

    say("HBM read")
    out["dram_read"] = fig.measure("HBM read", "B/s", ds, lambda: best(
        lambda: read_kernel[grid](x, part, BLOCK=BLOCK, REPEAT=1, num_warps=8), lambda: torch.sum(x), nbytes))
    say("HBM write")
    out["dram_write"] = fig.measure("HBM write", "B/s", ds, lambda: best(
        lambda: write_kernel[grid](y, BLOCK=BLOCK, num_warps=8), lambda: y.fill_(1.0), nbytes))
    say("HBM copy")
    out["dram_copy"] = fig.measure("HBM copy (read + write)", "B/s", ds, lambda: best(
        lambda: copy_kernel[grid](x, y, BLOCK=BLOCK, num_warps=8), lambda: y.copy_(x), 2 * nbytes))
    return out


def _l2(fig: _Figures, l2_bytes: int, quick: bool, say: Progress) -> tuple[float, list[dict[str, float]]]:
    import torch

    from roofline.measuring.calibration_kernels import sweep_kernel

    fractions = (1 / 8, 1 / 4) if quick else L2_SWEEP_FRACTIONS
    nprog = int(fig.spec["sm_count"]) * L2_PROGRAMS_PER_SM
    sweep = []
    for f in fractions:
        ws = int(l2_bytes * f) // 4 // BLOCK * BLOCK
        x = torch.rand(ws, device="cuda")
        part = torch.empty(nprog, device="cuda")
        repeat = max(1, min(64, L2_BYTES_PER_POINT // (ws * 4)))
        say(f"L2 sweep: working set {ws * 4 / 2**20:.1f} MiB")
        t = _bench(partial(sweep_kernel[(nprog,)], x, part, ws // BLOCK, BLOCK=BLOCK, REPEAT=repeat, num_warps=8),
                   10)
        sweep.append({"working_set_bytes": ws * 4, "bytes_per_s": ws * 4 * repeat / t, "repeat": repeat})
    inside = [p["bytes_per_s"] for p in sweep if p["working_set_bytes"] <= l2_bytes / 2]
    best = max(inside)
    fig.rows.append({"name": "L2 read (working set <= L2/2)", "unit": "B/s", "value": best, "datasheet": None,
                     "ratio": None, "sm_clock_mhz": None, "limited_by": [], "method": "triton sweep, .cg loads"})
    return best, sweep


def _smem(fig: _Figures, say: Progress) -> float | None:
    try:
        import cupy as cp
    except ImportError:
        fig.rows.append({"name": "shared memory", "unit": "B/s", "value": None, "datasheet":
                         fig.spec["shared_memory_bandwidth_gbps"] * 1e9, "ratio": None, "sm_clock_mhz": None,
                         "limited_by": [], "warning": "not measured: needs CuPy (NVRTC) to build the kernel"})
        return None
    from roofline.measuring.calibration_kernels import SMEM_BYTES_PER_ITER, SMEM_SRC, SMEM_THREADS

    say("shared memory")
    kernel = cp.RawKernel(SMEM_SRC, "smem_stream")
    blocks = int(fig.spec["sm_count"]) * 8
    out = cp.empty(blocks * SMEM_THREADS, dtype=cp.float32)

    def run() -> None:
        kernel((blocks,), (SMEM_THREADS,), (out, cp.int32(SMEM_ITERS)))

    def once() -> tuple[float, dict[str, Any]]:
        run()
        cp.cuda.Device().synchronize()
        start, end = cp.cuda.Event(), cp.cuda.Event()
        times = []
        for _ in range(10):
            start.record()
            run()
            end.record()
            end.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, end) * 1e-3)
        t = sorted(times)[len(times) // 2]
        moved = blocks * SMEM_THREADS * SMEM_ITERS * SMEM_BYTES_PER_ITER
        return moved / t, {"method": "CUDA C++ via CuPy/NVRTC: conflict-free LDS.128 stream"}

    return fig.measure("shared memory", "B/s", fig.spec["shared_memory_bandwidth_gbps"] * 1e9, once)


def _fma(fig: _Figures, say: Progress) -> float:
    import torch

    from roofline.measuring.calibration_kernels import FMA_PER_ITER, fma_kernel

    say("FP32 FMA chain")
    block = 1024
    grid = int(fig.spec["sm_count"]) * 16
    out = torch.empty(grid * block, device="cuda")

    def once() -> tuple[float, dict[str, Any]]:
        t = _bench(lambda: fma_kernel[(grid,)](out, ITERS=FMA_ITERS, BLOCK=block, num_warps=4), 10)
        return 2 * FMA_PER_ITER * FMA_ITERS * grid * block / t, {"method": "triton FMA chains"}

    return fig.measure("FP32 FMA (CUDA cores)", "FLOP/s", fig.spec["fp32_dense_tflops"] * 1e12, once)


def _matmul_fn(dtype: str, n: int) -> Callable[[], Any]:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    if dtype == "fp8":
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16).to(torch.float8_e4m3fn).t()
        one = torch.ones((), device="cuda")
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    if dtype == "int8":
        a = torch.randint(-64, 64, (n, n), device="cuda", dtype=torch.int8)
        b = torch.randint(-64, 64, (n, n), device="cuda", dtype=torch.int8)
        return lambda: torch._int_mm(a, b)
    dt = {"fp64": torch.float64, "fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
          "bf16": torch.bfloat16}[dtype]
    a, b = torch.randn(n, n, device="cuda", dtype=dt), torch.randn(n, n, device="cuda", dtype=dt)
    return lambda: torch.matmul(a, b)


def _matmuls(fig: _Figures, quick: bool, say: Progress) -> dict[str, float]:
    import torch

    out: dict[str, float] = {}
    spec = fig.spec
    for dtype, (full, short) in MATMUL_SIZES.items():
        key = SPEC_KEY.get(dtype)
        if dtype == "fp64":
            key = "fp64_tensor_dense_tflops" if "fp64_tensor_dense_tflops" in spec.values else "fp64_dense_tflops"
        if key not in spec.values:
            continue  # the GPU has no such pipe (fp8 before Ada/Hopper, bf16/tf32 before Ampere)

        def sweep(dtype: str = dtype, sizes: tuple[int, ...] = short if quick else full
                  ) -> tuple[float, dict[str, Any]]:
            best, best_n = 0.0, 0
            per: dict[str, float | str] = {}  # FLOP/s per size, or why that size failed
            for n in sizes:
                say(f"{dtype} matmul {n}^3")
                if not quick:
                    time.sleep(MATMUL_COOL_S)
                try:
                    fn = _matmul_fn(dtype, n)
                    # the best sample: a ceiling is what the machine reaches; later samples of long
                    # tensor-core runs sink with the power cap (fp8 medians spread 8.7% over three runs)
                    t = _bench(fn, 5 if n >= 12288 else 10, best=True)
                except RuntimeError as exc:  # an unsupported path on this GPU or torch build
                    per[str(n)] = f"failed: {str(exc).splitlines()[0][:80]}"
                    continue
                rate = 2 * n**3 / t
                per[str(n)] = rate
                if rate > best:
                    best, best_n = rate, n
                del fn
            torch.cuda.empty_cache()
            return best, {"best_n": best_n, "sweep": per,
                          "method": {"fp8": "torch._scaled_mm", "int8": "torch._int_mm"}.get(dtype, "torch.matmul")}

        rate = fig.measure(f"{dtype} matmul", "FLOP/s", spec[key] * 1e12, sweep)
        if rate > 0:
            out[key if dtype != "fp32" else "fp32_matmul"] = rate
    torch.backends.cuda.matmul.allow_tf32 = False
    return out


def calibrate_gpu(gpu: LocalGPU, quick: bool = False, progress: Progress | None = None) -> tuple[Ceilings,
                                                                                                dict[str, Any]]:
    """Measure every ceiling of a local GPU (which must have a spec: the datasheet figures sit beside)."""
    import torch
    import triton

    say = progress or (lambda _m: None)
    spec = gpu.spec
    assert spec is not None
    torch.cuda.set_device(gpu.index)
    fig = _Figures(spec, gpu.index)
    l2_bytes = int(spec["l2_cache_kib"] * 1024)
    memory = _hbm(fig, l2_bytes, say)
    memory["dram"] = max(memory.values())  # the roof: the best the memory system was seen to deliver
    l2, sweep = _l2(fig, l2_bytes, quick, say)
    memory["l2"] = l2
    smem = _smem(fig, say)
    if smem:
        memory["smem"] = smem
    compute = _matmuls(fig, quick, say)
    fma = _fma(fig, say)
    compute["fp32_dense_tflops"] = max(fma, compute.pop("fp32_matmul", 0.0))
    clocks = [r["sm_clock_mhz"] for r in fig.rows if r.get("sm_clock_mhz")]
    ceilings = Ceilings(device_id=spec.id, device_name=gpu.nvml_name, kind="gpu", source="measured",
                        compute=compute, memory=memory, sm_clock_mhz=max(clocks) if clocks else None,
                        notes=("measured by roofline calibrate",))
    details = {"figures": fig.rows, "l2_sweep": sweep, "quick": quick, "torch": torch.__version__,
               "triton": triton.__version__}
    return ceilings, details
