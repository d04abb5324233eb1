"""What each energy-calibration kernel and each kernels-h200 suite kernel really executes, as Nsight Compute
counts it: warp and thread instructions by pipe, shared-memory, L1, L2 and DRAM traffic, active cycles. For
issue 33's question of which counted work carries the energy the FLOP + HBM-byte model misses (the GELU,
SiLU, norms and softmax 25-53% low, the FP32 GEMM 50% low, on 2026-12-02 15:35).

    python scripts/experiments/energy_counts.py OUT.json [--suite suites/kernels-h200.toml]

The parent runs ncu on this same file (`--child`), which builds every kernel, runs each once to warm it, then
once more inside its own NVTX range and cudaProfilerStart/Stop; the parent sums each range's kernels' metrics
and writes {name: {metric: value}} to OUT.json. Counts do not depend on the clock (ncu's clock control is
left off, as `ncu.run` does). GPU only; about a minute on an H200.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

METRICS = [
    "gpu__time_duration.sum", "smsp__inst_executed.sum", "smsp__thread_inst_executed.sum",
    "sm__inst_executed_pipe_fma.sum", "sm__inst_executed_pipe_alu.sum", "sm__inst_executed_pipe_xu.sum",
    "sm__inst_executed_pipe_lsu.sum", "sm__inst_executed_pipe_uniform.sum", "sm__inst_executed_pipe_fp16.sum",
    "sm__inst_executed_pipe_tensor_op_gmma.sum", "sm__inst_executed_pipe_tensor_op_hmma.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", "sm__sass_data_bytes_mem_shared.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "l1tex__t_bytes.sum", "lts__t_bytes.sum",
    "dram__bytes_read.sum", "dram__bytes_write.sum", "sm__cycles_active.avg", "sm__cycles_elapsed.avg",
    "smsp__cycles_active.avg", "sm__pipe_tensor_op_gmma_cycles_active.avg", "sm__inst_executed_pipe_tma.sum",
]


def child(suite_path: str) -> int:
    sys.stdout = sys.stderr  # ncu's CSV owns stdout
    import torch

    from roofline.analysis.suite import load_suite
    from roofline.core.dtypes import get_dtype
    from roofline.measuring.energy import this_gpu
    from roofline.measuring.energy_calibrate import _kernels, _probes
    from roofline.measuring.kernels import build

    gpu = this_gpu(0)
    named = [(f"cal/{name}", fn) for name, fn, *_ in [*_kernels(gpu), *_probes(gpu)]]
    for i, entry in enumerate(load_suite(suite_path).entries, start=1):
        op, dt = entry.operator(True), get_dtype(entry.dtype_for(True))
        named.append((f"suite/{i}", build(op, dt, "cuda:0").fn))
    for name, fn in named:
        fn()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(name)
        torch.cuda.profiler.start()
        fn()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        torch.cuda.nvtx.range_pop()
        print(f"profiled {name}", flush=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", type=Path)
    ap.add_argument("--suite", default="suites/kernels-h200.toml")
    ap.add_argument("--child", action="store_true")
    args = ap.parse_args()
    if args.child:
        return child(args.suite)
    from roofline.ncu.read_csv import nvtx_range, parse_raw_csv
    from roofline.ncu.run import NCU_OPTIONS, available_metrics, base_name, find_ncu

    ncu = find_ncu()
    have = available_metrics(ncu, "energy_counts")
    metrics = [m for m in METRICS if not have or base_name(m) in have]
    print(f"{len(metrics)} of {len(METRICS)} metrics offered: left out {sorted(set(METRICS) - set(metrics))}",
          file=sys.stderr)
    cmd = [ncu, "--profile-from-start", "off", "--nvtx", *NCU_OPTIONS, "--metrics", ",".join(metrics), "--csv",
           "--page", "raw", sys.executable, __file__, "--child", "--suite", args.suite]
    got = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if got.returncode != 0:
        print(got.stderr[-4000:], file=sys.stderr)
        return got.returncode
    sums: dict[str, dict[str, float]] = {}
    for k in parse_raw_csv(got.stdout.splitlines(keepends=True)):
        name = nvtx_range(k) or "?"  # NB: nvtx_range splits at ':', so the names here have none
        row = sums.setdefault(name, {"kernels": 0.0})
        row["kernels"] += 1
        for m, v in k.metrics.items():
            if v is not None and m in metrics:
                row[m] = row.get(m, 0.0) + v
        row.setdefault("names", []).append(k.name[:80])  # type: ignore[attr-defined]
    args.out.write_text(json.dumps(sums, indent=1))
    for name, row in sums.items():
        print(f"{name:28s} kernels {row['kernels']:.0f} warp inst {row.get('smsp__inst_executed.sum', 0):.3g} "
              f"dram r {row.get('dram__bytes_read.sum', 0):.3g} w {row.get('dram__bytes_write.sum', 0):.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
