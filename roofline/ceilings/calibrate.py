"""Measured ceilings: what this machine really reaches, per memory level and per dtype.

The CPU calibration (matmul per dtype, read and copy bandwidth) is what `analyze` uses as the CPU's
roofline; the GPU calibration (`roofline.ceilings.calibrate_gpu`) adds HBM read/write/copy, an L2
working-set sweep, shared memory, matmul per dtype over a sweep of shapes and the FP32 FMA peak. Results go
to the store (`roofline.ceilings.store`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from roofline.ceilings.store import cpu_key, lookup, save, store_path
from roofline.core.model import Ceilings
from roofline.measuring.device import cpu_description

Progress = Callable[[str], None]

CPU_DTYPES = ("fp32", "fp64", "bf16")


@dataclass(frozen=True)
class CpuPlan:
    """What the CPU calibration measures: square matmul sizes per dtype (each dtype's best rate over its
    sizes is kept), the buffer the bandwidth is measured on, and how many timed calls of each (the best is
    kept: a shared machine's noise only ever slows a call down, so the best estimates the ceiling)."""

    matmul_n: Mapping[str, tuple[int, ...]]
    bandwidth_bytes: int
    reps: int
    bf16_reps: int  # CPUs without bf16 units run bf16 matmuls far slower than fp32: fewer calls

    def __post_init__(self) -> None:
        if set(self.matmul_n) != set(CPU_DTYPES) or not all(self.matmul_n.values()):
            raise ValueError(f"a CPU plan needs matmul sizes for each of {', '.join(CPU_DTYPES)}")


# The full calibration (the one `analyze` runs on a machine without a stored CPU roofline): matmul sizes so
# one product takes ~0.01-0.3 s on a 2-core machine (larger products run closer to the peak: 172 GFLOP/s at
# 1024^3, 179 at 3072^3 on the CI machine), and a buffer far beyond any CPU's last-level cache.
FULL_CPU_PLAN = CpuPlan(matmul_n={"fp32": (1024, 2048, 3072), "fp64": (1024, 1536), "bf16": (512, 1024)},
                        bandwidth_bytes=512 * 2**20, reps=5, bf16_reps=2)
# `calibrate --quick`: one size per dtype, a smaller buffer and fewer calls, so that the whole calibration
# takes well under a second on the 2-core CI machine (0.24-0.27 s): a 512^3 fp32 or fp64 product takes 2-7 ms
# there, a bf16 one of 256^3 ~26 ms (that CPU has no bf16 units: 1.3 GFLOP/s). 64 MiB is twice its 32 MiB
# last-level cache, the least that evicts an LRU-like cache. Its roofs are lower than the full plan's
# (fp32 100-134 GFLOP/s there: smaller products run further from the peak), and a CPU with a larger cache
# serves part of the buffer from it: quick, not the last word.
QUICK_CPU_PLAN = CpuPlan(matmul_n={"fp32": (512,), "fp64": (512,), "bf16": (256,)},
                         bandwidth_bytes=64 * 2**20, reps=3, bf16_reps=2)


def _best_time(fn: Callable[[], Any], reps: int) -> float:
    """The least seconds of `reps` timed calls, after one untimed call."""
    import time

    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def measure_cpu(progress: Progress | None = None, plan: CpuPlan = FULL_CPU_PLAN) -> tuple[Ceilings, dict[str, Any]]:
    """Matmul FLOP/s per dtype and read/copy bandwidth of this CPU, with torch, as `plan` says."""
    import torch

    say = progress or (lambda _msg: None)
    compute: dict[str, float] = {}
    details: dict[str, Any] = {"threads": torch.get_num_threads(), "matmul": {}}
    torch_dtypes = {"fp32": torch.float32, "fp64": torch.float64, "bf16": torch.bfloat16}
    for name, sizes in plan.matmul_n.items():
        dt = torch_dtypes[name]
        for n in sizes:
            say(f"CPU {name} matmul {n}^3")
            a, b = torch.randn(n, n, dtype=dt), torch.randn(n, n, dtype=dt)
            t = _best_time(lambda a=a, b=b: torch.mm(a, b), plan.bf16_reps if name == "bf16" else plan.reps)
            rate = 2 * n**3 / t
            if rate > compute.get(f"cpu_{name}", 0):
                compute[f"cpu_{name}"] = rate
                details["matmul"][name] = {"n": n, "best_s": t}
    compute["cpu_fp16"] = compute["cpu_bf16"]  # NB: CPU half matmuls share the bf16 path's order of rate
    say("CPU memory bandwidth")
    nbytes = plan.bandwidth_bytes // 4 * 4
    x = torch.ones(nbytes // 4)  # the values do not matter to a copy or a sum; filling is faster than rand
    y = torch.empty_like(x)
    copy_t = _best_time(lambda: y.copy_(x), plan.reps)
    read_t = _best_time(lambda: x.sum(), plan.reps)
    memory = {"dram": 2 * nbytes / copy_t, "dram_read": nbytes / read_t}
    details["bandwidth"] = {"bytes": nbytes, "copy_best_s": copy_t, "read_best_s": read_t}
    info = cpu_description()
    ceilings = Ceilings(device_id="cpu", device_name=info["name"], kind="cpu", source="measured", compute=compute,
                        memory=memory, notes=(f"measured with torch on {details['threads']} threads; "
                                              "memory roof = copy bandwidth (read + write bytes)",))
    return ceilings, details


def _this_cpu_key() -> dict[str, str]:
    info = cpu_description()
    return cpu_key(info["name"], info["cores"])


def cpu_ceilings(messages: list[str] | None = None, progress: Progress | None = None,
                 plan: CpuPlan = FULL_CPU_PLAN) -> Ceilings:
    """This CPU's measured roofline: from the store, or measured now (as `plan` says) and stored."""
    key = _this_cpu_key()
    found = lookup(key)
    if found:
        return found[0]
    if messages is not None:
        messages.append(f"measured this CPU's roofline (cached in {store_path()})")
    ceilings, details = measure_cpu(progress, plan)
    save(key, ceilings, details)
    return ceilings


def calibrate(device: str | None = None, quick: bool = False, progress: Progress | None = None
              ) -> tuple[Ceilings, dict[str, Any]]:
    """Measure this machine's ceilings (the GPU when there is one, else the CPU) and store them; `quick`
    measures fewer shapes (QUICK_CPU_PLAN on the CPU)."""
    from roofline.ceilings.store import gpu_key
    from roofline.core.errors import RooflineError
    from roofline.measuring.device import detect_gpus

    gpus = detect_gpus()
    if device == "cpu" or (device is None and not gpus):
        ceilings, details = measure_cpu(progress, QUICK_CPU_PLAN if quick else FULL_CPU_PLAN)
        save(_this_cpu_key(), ceilings, details)
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
