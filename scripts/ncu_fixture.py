"""The small Nsight Compute report behind tests/data/ncu_tiny.ncu-rep and ncu_tiny.csv (the .ncu-rep import test).

    ncu --nvtx --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,\
        dram__bytes_write.sum -o ncu_tiny python scripts/ncu_fixture.py
    ncu --import ncu_tiny.ncu-rep --csv --page raw --print-units base > ncu_tiny.csv

Three kernels (a fill, a multiply, a sum over 4 MiB of fp32) inside the NVTX range `step`, one outside it.
"""

from __future__ import annotations

import torch

x = torch.empty(1 << 20, device="cuda")
torch.cuda.synchronize()
with torch.cuda.nvtx.range("step"):
    x.fill_(1.0)
    y = x * 2
    s = y.sum()
torch.cuda.synchronize()
z = x + 1  # outside the range
torch.cuda.synchronize()
print(float(s), float(z[0]))
