"""The program `analyze/run --counters` runs under Nsight Compute: `python -m roofline.ncu.target_ops PLAN.json`.

PLAN.json (`write_plan`) lists operators: `{"ops": [{"op": NAME, "fields": {...}, "dtype": NAME}, ...]}`. Each
is built with roofline's own builders and warmed up (compilation, autotuning, lazy allocation) before the
profiled range starts; then, in the range (`ncu.target.profiled`), each runs ONCE after one marker kernel
(torch.cuda._sleep, whose kernel name holds MARKER), and one marker closes the last: `ncu.read_csv.split_groups`
cuts ncu's kernels at the markers into one group per operator. What the program shares with
`ncu.target_profile` (the plan file, the range, the `__main__`) is `ncu.target`'s.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from roofline.ncu.target import CudaProfiler, Profiler, Program, load_plan, profiled, run_main, save_plan

PROGRAM = Program("roofline.ncu.target_ops")
# torch.cuda._sleep launches a kernel whose name contains this; its spin count (cycles) keeps it ~1 µs.
MARKER = "spin"
MARKER_CYCLES = 1000
# Calls before profiling starts: the first compiles or autotunes, the rest reach the steady state.
WARMUP_CALLS = 3


def write_plan(ops: Sequence[tuple[Any, Any]], path: Path) -> None:
    """The plan of `main`: each (catalog Operator, DType) by name, with the operator's fields."""
    entries = [{"op": op.name, "fields": {f.name: getattr(op, f.name) for f in dataclasses.fields(op)},
                "dtype": dt.name} for op, dt in ops]
    save_plan({"ops": entries}, path)


def main(plan_path: str, profiler: Profiler | None = None) -> int:
    """Build and warm up every operator of the plan, then profile one call of each between markers."""
    import torch

    from roofline.core.dtypes import get_dtype
    from roofline.measuring.kernels import build
    from roofline.ops import make

    built = []
    for entry in load_plan(plan_path)["ops"]:
        b = build(make(entry["op"], **entry["fields"]), get_dtype(entry["dtype"]), "cuda")
        for _ in range(WARMUP_CALLS):
            b.fn()
        built.append(b)
    with profiled(profiler or CudaProfiler()):
        for b in built:
            torch.cuda._sleep(MARKER_CYCLES)
            b.fn()
            torch.cuda.synchronize()
        torch.cuda._sleep(MARKER_CYCLES)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(PROGRAM, main, sys.argv))
