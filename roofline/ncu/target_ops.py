"""The program `--counters` runs under Nsight Compute: `python -m roofline.ncu.target_ops PLAN.json`.

PLAN.json lists operators (`{"ops": [{"op": NAME, "fields": {...}, "dtype": NAME}, ...]}`, as
`ncu.run.write_plan` writes it). Each is built with roofline's own builders and warmed up (compilation,
autotuning, lazy allocation) before profiling starts; then, between cudaProfilerStart/Stop, each runs ONCE
after one marker kernel (torch.cuda._sleep, whose kernel name holds MARKER), and one marker closes the last.
ncu must be started with `--profile-from-start off`, so only these launches are profiled. Nothing is printed on
stdout: ncu's CSV goes there.
"""

from __future__ import annotations

import json
import sys

# torch.cuda._sleep launches a kernel whose name contains this; its spin count (cycles) keeps it ~1 µs.
MARKER = "spin"
MARKER_CYCLES = 1000
# Calls before profiling starts: the first compiles or autotunes, the rest reach the steady state.
WARMUP_CALLS = 3


def main(plan_path: str) -> int:
    import torch

    from roofline.core.dtypes import get_dtype
    from roofline.measuring.kernels import build
    from roofline.ops import make

    with open(plan_path, encoding="utf-8") as fh:
        plan = json.load(fh)
    built = []
    for entry in plan["ops"]:
        op = make(entry["op"], **entry["fields"])
        b = build(op, get_dtype(entry["dtype"]), "cuda")
        for _ in range(WARMUP_CALLS):
            b.fn()
        built.append(b)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for b in built:
        torch.cuda._sleep(MARKER_CYCLES)
        b.fn()
        torch.cuda.synchronize()
    torch.cuda._sleep(MARKER_CYCLES)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: python -m roofline.ncu.target_ops PLAN.json\n")
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
