"""The small Nsight Compute report behind tests/data/ncu_tiny.ncu-rep and ncu_tiny.csv (the .ncu-rep import test).

    ncu --nvtx --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,\
        dram__bytes_write.sum -o ncu_tiny python scripts/ncu_fixture.py
    ncu --import ncu_tiny.ncu-rep --csv --page raw --print-units base > ncu_tiny.csv

Two launches of one Triton kernel (z = x * 2 + y over 1 Mi fp32) inside the NVTX range `step`, one outside it.
Triton, not torch's own kernels: a report embeds the module of every kernel it profiled, and torch's modules
made a four-kernel report over 16 MB.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def axpy(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(z_ptr + i, tl.load(x_ptr + i, mask=m) * 2 + tl.load(y_ptr + i, mask=m), mask=m)


n = 1 << 20
x, y, z = (torch.ones(n, device="cuda") for _ in range(3))
grid = (triton.cdiv(n, 1024),)
axpy[grid](x, y, z, n, BLOCK=1024)  # compiled outside the profiled range's count, but profiled too
torch.cuda.synchronize()
with torch.cuda.nvtx.range("step"):
    axpy[grid](x, y, z, n, BLOCK=1024)
    axpy[grid](z, y, x, n, BLOCK=1024)
torch.cuda.synchronize()
print(float(x[0]))
