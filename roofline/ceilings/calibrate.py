"""Measured ceilings: what this machine really reaches, per memory level and per dtype.

The CPU calibration (matmul per dtype, read and copy bandwidth) is what `analyze` uses as the CPU's
roofline; the GPU calibration adds HBM read/write/copy, an L2 working-set sweep, shared memory, matmul per
dtype over a sweep of shapes and the FP32 FMA peak. Results go to the store (`roofline.ceilings.store`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from roofline.ceilings.store import cpu_key, lookup, save, store_path
from roofline.core.model import Ceilings
from roofline.measuring.device import cpu_description

Progress = Callable[[str], None]

# CPU: matmul sizes so one product takes ~0.01-0.3 s on a 2-core machine; the best over sizes and reps
# (larger products run closer to the peak: 172 GFLOP/s at 1024^3, 179 at 3072^3 on the CI machine)
# (a shared machine's noise only ever slows a run down, so the best is the estimate of the ceiling).
CPU_MATMUL_N = {"fp32": (1024, 2048, 3072), "fp64": (1024, 1536), "bf16": (512, 1024)}
CPU_BANDWIDTH_BYTES = 512 * 2**20  # far beyond any CPU's last-level cache
CPU_REPS = 5


def _best_time(fn: Callable[[], Any], reps: int) -> float:
    import time

    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def measure_cpu(progress: Progress | None = None) -> tuple[Ceilings, dict[str, Any]]:
    """Matmul FLOP/s per dtype and read/copy bandwidth of this CPU, with torch (best of CPU_REPS)."""
    import torch

    say = progress or (lambda _msg: None)
    compute: dict[str, float] = {}
    details: dict[str, Any] = {"threads": torch.get_num_threads(), "matmul": {}}
    for name, sizes in CPU_MATMUL_N.items():
        dt = {"fp32": torch.float32, "fp64": torch.float64, "bf16": torch.bfloat16}[name]
        for n in sizes:
            say(f"CPU {name} matmul {n}^3")
            a, b = torch.randn(n, n, dtype=dt), torch.randn(n, n, dtype=dt)
            t = _best_time(lambda a=a, b=b: torch.mm(a, b), CPU_REPS if name != "bf16" else 2)
            rate = 2 * n**3 / t
            if rate > compute.get(f"cpu_{name}", 0):
                compute[f"cpu_{name}"] = rate
                details["matmul"][name] = {"n": n, "best_s": t}
    compute["cpu_fp16"] = compute["cpu_bf16"]  # NB: CPU half matmuls share the bf16 path's order of rate
    say("CPU memory bandwidth")
    x = torch.rand(CPU_BANDWIDTH_BYTES // 4)
    y = torch.empty_like(x)
    copy_t = _best_time(lambda: y.copy_(x), CPU_REPS)
    read_t = _best_time(lambda: x.sum(), CPU_REPS)
    memory = {"dram": 2 * CPU_BANDWIDTH_BYTES / copy_t, "dram_read": CPU_BANDWIDTH_BYTES / read_t}
    details["bandwidth"] = {"bytes": CPU_BANDWIDTH_BYTES, "copy_best_s": copy_t, "read_best_s": read_t}
    info = cpu_description()
    ceilings = Ceilings(device_id="cpu", device_name=info["name"], kind="cpu", source="measured", compute=compute,
                        memory=memory, notes=(f"measured with torch on {details['threads']} threads; "
                                              "memory roof = copy bandwidth (read + write bytes)",))
    return ceilings, details


def cpu_ceilings(messages: list[str] | None = None, progress: Progress | None = None) -> Ceilings:
    """This CPU's measured roofline: from the store, or measured now (a few seconds) and stored."""
    info = cpu_description()
    key = cpu_key(info["name"], info["cores"])
    found = lookup(key)
    if found:
        return found[0]
    if messages is not None:
        messages.append(f"measured this CPU's roofline (cached in {store_path()})")
    ceilings, details = measure_cpu(progress)
    save(key, ceilings, details)
    return ceilings


def calibrate(device: str | None = None, quick: bool = False, progress: Progress | None = None
              ) -> tuple[Ceilings, dict[str, Any]]:
    """Measure this machine's ceilings (the GPU when there is one, else the CPU) and store them."""
    from roofline.ceilings.store import gpu_key
    from roofline.core.errors import RooflineError
    from roofline.measuring.device import detect_gpus

    gpus = detect_gpus()
    if device == "cpu" or (device is None and not gpus):
        ceilings, details = measure_cpu(progress)
        info = cpu_description()
        save(cpu_key(info["name"], info["cores"]), ceilings, details)
        return ceilings, details
    index = int(device.split(":")[1]) if device and ":" in device else 0
    if index >= len(gpus):
        raise RooflineError(f"no GPU cuda:{index} on this machine")
    gpu = gpus[index]
    if gpu.spec is None:
        raise RooflineError(f"no spec file for '{gpu.nvml_name}': calibration needs one to compare against")
    from roofline.ceilings.calibrate_gpu import calibrate_gpu

    ceilings, details = calibrate_gpu(gpu, quick, progress)
    save(gpu_key(gpu.nvml_name, gpu.driver_version), ceilings, details)
    return ceilings, details
