"""GPU tests of collectives in whole-model profiles (capture/comm.py): `pytest -m gpu tests/test_comm_profile_gpu.py`
on a CUDA machine; the two-GPU test is skipped on one GPU.

- One GPU: an NCCL group of one rank in this process. No link traffic: records on the memory roof, busbw = algbw x
  0 (nccl-tests' convention); NCCL may launch no kernel for an in-place all_reduce of one rank (then no time).
- Two GPUs: one process per GPU (torch.multiprocessing, spawn), each profiling barrier -> bf16 GEMM -> all_reduce
  of the GEMM's 32 MiB output. The all_reduce's time is NCCL's kernel (device time, tied to the op by CUPTI's
  correlation id); busbw = S / t x 2(2-1)/2 = S / t. Link: H100/H200 SXM NVLink 4, 450 GB/s per direction
  (specs/h200-sxm.toml); busbw cannot pass it. A profile times ONE call, skew between the ranks included
  (the barrier before it keeps that small), so the floor asserted is loose: 10% of the link, above PCIe's share.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from roofline.core.document import read_document

pytestmark = pytest.mark.gpu

N = 4096  # the GEMM: (4096 x 4096) @ (4096 x 4096) bf16; its output S = 4096 x 4096 x 2 B = 32 MiB
S = N * N * 2


def _step(x: Any, w: Any) -> Any:
    import torch.distributed as dist

    dist.barrier()  # the ranks meet on the device: the all_reduce starts together on both GPUs
    y = x @ w
    dist.all_reduce(y)
    return y


def test_one_gpu_world_of_one(tmp_path: Path) -> None:
    import torch
    import torch.distributed as dist

    from roofline.capture import profile

    dev = torch.device("cuda", 0)
    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1, device_id=dev)
    try:
        x = torch.randn(256, 1024, device=dev, dtype=torch.bfloat16)
        gathered = torch.empty(256, 1024, device=dev, dtype=torch.bfloat16)

        def step() -> None:
            dist.all_reduce(x)  # in place
            dist.all_gather_into_tensor(gathered, x)  # out of place: one rank copies in memory

        prof = profile(step, warmup=2)
        prof.save(tmp_path / "one.json")
    finally:
        dist.destroy_process_group()
    recs = {r.op: r for r in prof.records}
    assert set(recs) == {"all_reduce", "all_gather"}
    for r in recs.values():
        assert r.params == {"bytes": 256 * 1024 * 2, "ranks": 1}  # 524,288 B
        assert r.flops == 0 and r.collective["backend"] == "nccl" and r.collective["ranks"] == 1
        assert r.collective["busbw_factor"] == 0 and r.collective["link_bytes_per_s_one_way"] is None
        if r.time_s:
            assert r.collective["busbw_bytes_per_s"] == 0
    assert prof.summary["communication"]["calls"] == 2
    print({op: (r.time_s, r.kernels) for op, r in recs.items()})


def _rank(rank: int, world: int, store: str, out: str) -> None:
    import torch
    import torch.distributed as dist

    from roofline.capture import profile

    dev = torch.device("cuda", rank)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", init_method=f"file://{store}", rank=rank, world_size=world, device_id=dev)
    try:
        x = torch.randn(N, N, device=dev, dtype=torch.bfloat16)
        w = torch.randn(N, N, device=dev, dtype=torch.bfloat16)
        prof = profile(lambda: _step(x, w), name=f"rank{rank}", warmup=3)  # times cuda:rank (set above)
        prof.save(Path(out, f"rank{rank}.json"))
    finally:
        dist.destroy_process_group()


def test_two_gpus_all_reduce_on_nvlink(tmp_path: Path) -> None:
    import torch
    import torch.multiprocessing as mp

    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # NVLink multicast off, as `roofline collectives` keeps it
    mp.start_processes(_rank, args=(2, str(tmp_path / "store"), str(tmp_path)), nprocs=2, start_method="spawn")
    for rank in (0, 1):
        doc = read_document(tmp_path / f"rank{rank}.json")
        (r,) = (r for r in doc.records if r.collective is not None)
        c = r.collective
        assert (r.op, r.params, r.dtype) == ("all_reduce", {"bytes": S, "ranks": 2}, "bf16")
        assert c["backend"] == "nccl" and c["busbw_factor"] == 1.0  # 2(2-1)/2
        assert r.bytes_written == S  # each GPU sends 1 x S and receives as many
        assert r.time_s and any("nccl" in k.lower() for k in r.kernels or []), r.kernels
        assert c["algbw_bytes_per_s"] == pytest.approx(S / r.time_s)
        assert c["busbw_bytes_per_s"] == pytest.approx(S / r.time_s)
        link = c["link_bytes_per_s_one_way"]
        if link:  # an NVLink GPU: the record is on the link roof, busbw below it
            assert r.peak_bytes_per_s == 2 * link
            assert r.roofline_time_s == pytest.approx(S / link)
            assert 0.1 * link < c["busbw_bytes_per_s"] < 1.05 * link, c
        comm = doc.extra["profile"]["communication"]
        assert doc.extra["profile"]["time_device"] == f"cuda:{rank}"  # the GPU torch.cuda.set_device chose
        assert comm["calls"] == 1 and 0 < comm["share"] < 1
        assert any(x.op == "aten::mm" for x in doc.records)  # the GEMM, as in any profile
        assert any(x.op.startswith("c10d::barrier") for x in doc.records)  # no formula, listed with its time
        print(f"rank {rank}: all_reduce {S} B in {r.time_s * 1e6:.1f} us, busbw {c['busbw_bytes_per_s'] / 1e9:.1f} "
              f"GB/s (link {link / 1e9 if link else 0:.0f} GB/s), communication {comm['share']:.1%} of kernel time")
