"""How soon does a compute-bound kernel reach its steady (power-capped) time, and does NVML say so when it
does? One GPU call:

    PYTHONPATH=. python3 scripts/experiments/warmup_experiment.py

Per kernel, after IDLE_S of idle: (read flush, kernel) back to back in chunks of ~CHUNK_S, each chunk timed by
events and synchronised (as timing_cuda warms up), with NVML's SM clock, power (averaged and, where the driver
has it, instant) and clock-event reasons read after each chunk. Prints one line per chunk.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pynvml
import torch

from roofline.core.dtypes import get_dtype
from roofline.measuring.cuda_events import event_times
from roofline.measuring.kernels import build
from roofline.ops import make

L2_BYTES = 61440 * 1024
IDLE_S = 2.0
CHUNK_S = 0.02
TOTAL_S = 0.6
CASES = [("gemm 4096 fp16", "gemm", {"m": 4096}, "fp16"),
         ("gemm 8192 bf16", "gemm", {"m": 8192}, "bf16"),
         ("gemm 4096 fp32", "gemm", {"m": 4096}, "fp32"),
         ("flash attention causal", "attention", {"batch": 8, "heads": 32, "seq": 4096, "head_dim": 128,
                                                  "causal": True}, "bf16"),
         ("conv2d 32x128x56x56 k3 fp16", "conv2d", {"batch": 32, "in_channels": 128, "height": 56, "width": 56,
                                                   "out_channels": 128, "kernel_size": 3, "padding": 1}, "fp16")]


def main() -> None:
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    instant = getattr(pynvml, "NVML_FI_DEV_POWER_INSTANT", None)
    limit = pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1e3
    print(f"power limit {limit:.0f} W; instant power field: {instant}")
    buf = torch.ones(3 * L2_BYTES // 4, device="cuda")
    out = torch.empty((), device="cuda")

    def flush() -> None:
        torch.sum(buf, dim=0, out=out)

    def power_now() -> tuple[float, float]:
        avg = pynvml.nvmlDeviceGetPowerUsage(h) / 1e3
        inst = float("nan")
        if instant is not None:
            try:
                v = pynvml.nvmlDeviceGetFieldValues(h, [instant])[0]
                inst = v.value.uiVal / 1e3 if v.nvmlReturn == 0 else float("nan")
            except Exception:
                pass
        return avg, inst

    for label, name, params, dtype in CASES:
        fn = build(make(name, **params), get_dtype(dtype), "cuda").fn
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        per = event_times(fn, 1)[0]
        chunk = max(2, round(CHUNK_S / per))
        time.sleep(IDLE_S)
        print(f"\n{label}: {per * 1e6:.0f} us cold, chunks of {chunk} calls")
        total, t_host0 = 0.0, time.perf_counter()

        def calls(fn: Callable[[], Any] = fn, chunk: int = chunk) -> None:
            for _ in range(chunk):
                flush()
                fn()

        while total < TOTAL_S:
            t = event_times(calls, 1)[0]
            total += t
            avg, inst = power_now()
            mhz = pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
            reasons = int(pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(h))
            print(f"  t={total * 1e3:6.1f} ms host={1e3 * (time.perf_counter() - t_host0):6.1f} ms "
                  f"per call {t / chunk * 1e6:8.1f} us  power {avg:5.0f} W inst {inst:5.0f} W  nvml {mhz} MHz "
                  f"reasons 0x{reasons:x}", flush=True)


if __name__ == "__main__":
    main()
