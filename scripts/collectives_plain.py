"""A plain torch.distributed event-timed loop over the collectives, to check `roofline collectives` against.

Run under torchrun beside a `roofline collectives -o comm.json` run of the same GPUs, in the same call:
    torchrun --nproc-per-node N scripts/collectives_plain.py comm.json [--min-bytes 64MiB]
For every record of comm.json at --min-bytes or more, rank 0 prints the plain loop's busbw (ITERS back-to-back
calls between one pair of CUDA events, after WARMUP calls, the median of REPEATS) beside roofline's and their
relative difference (of algbw, the same ratio as busbw); it exits 1 when any differs by more than LIMIT. The
buffers are built as roofline builds them (the record's bytes, nccl-tests' sizes), with torch's own calls only
(nothing from roofline is imported, so the check is independent of the code it checks).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch
import torch.distributed as dist

WARMUP, ITERS, REPEATS = 5, 20, 5
LIMIT = 0.03  # the acceptance: within 3% at 64 MiB and above
FACTORS = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
           "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n, "broadcast": lambda n: 1.0}
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, "fp64": torch.float64}


def call(op: str, nbytes: int, n: int, dtype: torch.dtype, dev: torch.device):
    count = nbytes // torch.tensor([], dtype=dtype).element_size()
    a = torch.ones(count, dtype=dtype, device=dev)
    if op == "all_reduce":
        return lambda: dist.all_reduce(a)
    if op == "broadcast":
        return lambda: dist.broadcast(a, 0)
    if op == "all_to_all":
        b = torch.empty_like(a)
        return lambda: dist.all_to_all_single(b, a)
    small = torch.ones(count // n, dtype=dtype, device=dev)
    if op == "all_gather":
        return lambda: dist.all_gather_into_tensor(a, small)
    return lambda: dist.reduce_scatter_tensor(small, a)


def timed(fn) -> float:
    dist.barrier()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(ITERS):
        fn()
    end.record()
    end.synchronize()
    t = torch.tensor([start.elapsed_time(end) / 1e3 / ITERS], device="cuda")
    dist.all_reduce(t)  # the mean over ranks, as nccl-tests and roofline report
    return t.item() / dist.get_world_size()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("comm_json")
    p.add_argument("--min-bytes", type=int, default=64 * 2**20)
    args = p.parse_args()
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl")
    n, rank = dist.get_world_size(), dist.get_rank()
    doc = json.load(open(args.comm_json))
    dtype = DTYPES[doc["collectives"]["dtype"]]
    worst = 0.0
    for r in doc["records"]:
        nbytes = r["params"]["bytes"]
        if nbytes < args.min_bytes or r["params"]["ranks"] != n:
            continue
        fn = call(r["op"], nbytes, n, dtype, torch.device("cuda"))
        for _ in range(WARMUP):
            fn()
        t = sorted(timed(fn) for _ in range(REPEATS))[REPEATS // 2]  # the median, as roofline's time
        # algbw compared (busbw is algbw x the same factor, and that factor is 0 for an all-reduce of 1 rank)
        plain, ours = nbytes / t, r["collective"]["algbw_bytes_per_s"]
        diff = ours / plain - 1
        worst = max(worst, abs(diff))
        if rank == 0:
            print(f"{r['op']:15s} {nbytes:>12d} B  busbw plain {plain * FACTORS[r['op']](n) / 1e9:8.1f} GB/s  "
                  f"roofline {r['collective']['busbw_bytes_per_s'] / 1e9:8.1f} GB/s  {diff:+.1%}")
        del fn
        torch.cuda.empty_cache()
    if rank == 0:
        print(f"worst difference {worst:.1%} (limit {LIMIT:.0%}): {'ok' if worst <= LIMIT else 'FAIL'}")
    dist.destroy_process_group()
    return 0 if worst <= LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
