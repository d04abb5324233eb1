"""Why a power-capped GEMM's energy windows disagree (issue 33's repeatability: at 15:35 on 2026-12-02 the bf16
8192^3 GEMM's five windows read 1.73, 2.34, 1.74, 2.30, 1.73 ms per call at 680, 580, 677, 587, 680 W: two
states, 15% apart in J per call).

    python scripts/experiments/capped_windows.py OUT.json [--seconds 12]

1. The repeatability's own windows (`measuring.energy.measure_fn`, as scripts/energy_accuracy.py runs them),
   `--windows` in a row for each `--graph` (0: launched one by one, 1: a CUDA graph per chunk), each with
   NVML's clock, power and throttle reasons sampled beside it.
2. The same GEMM back to back for `--seconds`, in chunks timed by CUDA events (a start and an end event around
   each chunk, so a gap between chunks, the GPU waiting for the host, shows apart from slower kernels), with
   NVML read every 10 ms: clock, power, GPU and memory temperature, throttle reasons, the energy counter.
Writes every reading to OUT.json and prints a summary per second. GPU only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

N = 8192
CHUNK = 3  # calls per chunk: ~5 ms, the measuring loop's chunk


def nvml_thread(samples: list[dict[str, Any]], stop: threading.Event, t0: float) -> None:
    import pynvml as n

    n.nvmlInit()
    h = n.nvmlDeviceGetHandleByIndex(0)
    while not stop.wait(0.01):
        row: dict[str, Any] = {"t": time.perf_counter() - t0}
        for key, read in (("sm_mhz", lambda: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM)),
                          ("power_w", lambda: n.nvmlDeviceGetPowerUsage(h) / 1e3),
                          ("temp_c", lambda: n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU)),
                          ("reasons", lambda: int(n.nvmlDeviceGetCurrentClocksThrottleReasons(h))),
                          ("energy_mj", lambda: n.nvmlDeviceGetTotalEnergyConsumption(h))):
            try:
                row[key] = read()
            except Exception as exc:  # a field this driver lacks
                row[key] = f"{type(exc).__name__}"
        try:
            fv = n.nvmlDeviceGetFieldValues(h, [n.NVML_FI_DEV_MEMORY_TEMP, n.NVML_FI_DEV_POWER_INSTANT])
            row["mem_temp_c"] = fv[0].value.uiVal if fv[0].nvmlReturn == 0 else None
            row["power_instant_w"] = fv[1].value.uiVal / 1e3 if fv[1].nvmlReturn == 0 else None
        except Exception:
            pass
        samples.append(row)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--seconds", type=float, default=12.0)
    ap.add_argument("--windows", type=int, default=6)
    ap.add_argument("--graph", type=lambda v: v == "1", nargs="+", default=[False], help="1: replay as a CUDA graph")
    args = ap.parse_args()
    import torch

    from roofline.measuring.energy import counter_for, measure_fn
    from roofline.measuring.nvml import ClockSampler

    a = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
    b = torch.randn_like(a)
    fn = lambda: a @ b  # noqa: E731
    counter = counter_for(0)
    out: dict[str, Any] = {"windows": []}
    for graph in args.graph:
        print(f"== {args.windows} repeatability windows (measure_fn, graph={graph}, 0.5 s warm-up each, the first "
              "1 s)", flush=True)
        for i in range(args.windows):
            e = measure_fn(fn, counter, flops=2.0 * N**3, nbytes=None, static_w=None, static_source=None,
                           warmup_s=1.0 if i == 0 else 0.5, sm_clock=lambda: ClockSampler(0), graph=graph)
            c = e.get("clocks") or {}
            out["windows"].append({**e, "graph": graph})
            print(f"  {i}: {e['per_call_s'] * 1e3:.3f} ms/call {e['power_w']:.0f} W {e['energy_j'] * 1e3:.1f} mJ; NVML "
                  f"SM {(c.get('sm_mhz') or {}).get('median')} MHz, limited by {c.get('limited_by')}; {e['method']}",
                  flush=True)

    print(f"== {args.seconds:.0f} s back to back, chunks of {CHUNK} calls between events, NVML every 10 ms", flush=True)
    samples: list[dict[str, Any]] = []
    stop = threading.Event()
    t0 = time.perf_counter()
    th = threading.Thread(target=nvml_thread, args=(samples, stop, t0), daemon=True)
    th.start()
    chunks: list[tuple[float, Any, Any]] = []
    pending: list[Any] = []
    while time.perf_counter() - t0 < args.seconds:
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(CHUNK):
            fn()
        e.record()
        chunks.append((time.perf_counter() - t0, s, e))
        pending.append(e)
        if len(pending) > 2:
            pending.pop(0).synchronize()
    torch.cuda.synchronize()
    stop.set()
    th.join()
    rows = []
    for k, (th_t, s, e) in enumerate(chunks):
        gap = chunks[k - 1][2].elapsed_time(s) if k else 0.0  # ms the GPU waited between chunks
        rows.append({"host_t": th_t, "per_call_ms": s.elapsed_time(e) / CHUNK, "gap_ms": gap,
                     "gpu_t": chunks[0][1].elapsed_time(e) / 1e3})
    out["chunks"], out["nvml"] = rows, samples
    args.out.write_text(json.dumps(out))
    print(" second  ms/call  gap ms/chunk  NVML MHz  W(avg)  W(inst)  GPU C  mem C  reasons", flush=True)
    for sec in range(int(args.seconds)):
        cs = [r for r in rows if sec <= r["gpu_t"] < sec + 1]
        ns = [r for r in samples if sec <= r["t"] < sec + 1]
        if not cs or not ns:
            continue

        def med(key: str, xs: list[dict[str, Any]] = ns) -> Any:
            v = [x[key] for x in xs if isinstance(x.get(key), (int, float))]
            return statistics.median(v) if v else None
        reasons = 0
        for x in ns:
            reasons |= x["reasons"] if isinstance(x.get("reasons"), int) else 0
        print(f"  {sec:5d} {med('per_call_ms', cs):8.3f} {sum(r['gap_ms'] for r in cs) / len(cs):10.3f} "
              f"{med('sm_mhz')!s:>9} {med('power_w')!s:>7} {med('power_instant_w')!s:>8} {med('temp_c')!s:>6} "
              f"{med('mem_temp_c')!s:>6}  {reasons:#x}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
