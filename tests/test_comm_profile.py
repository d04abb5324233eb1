"""Collectives in whole-model profiles (capture/comm.py): two real gloo ranks (torch.multiprocessing, forkserver,
no mocks) each profiling a step that calls the five collectives; an analytic profile over torch's fake process
group of 8 ranks placed on the H200's NVLink roof; a single process (no group) unchanged.

The expected numbers are nccl-tests' conventions (ops/collectives.py): S the full buffer (all_gather: the
gathered output; reduce_scatter: the input), busbw factor 2(n-1)/n for all_reduce, (n-1)/n for all_gather,
reduce_scatter and all_to_all, 1 for broadcast; each GPU sends factor x S and receives as many; the reduction's
adds (n-1)/n x S / element size.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch

from roofline.analysis.profile_view import profile_view
from roofline.capture import profile
from roofline.capture.comm_summary import communication
from roofline.core.document import read_document
from roofline.core.summary import UnattributedKernel
from roofline.report.comm import is_collectives
from roofline.report.profile import header

FP32 = 4
ROWS, IN, OUT = 4, 8, 6  # the step's matmul: (4 x 8) @ (8 x 6); its output is S = 4 x 6 x 4 B = 96 B
S = ROWS * OUT * FP32  # 96 B


def _step(rank: int) -> dict[str, Any]:
    """A tensor-parallel-like step: a partial matmul all-reduced, then the other collectives on its result."""
    import torch.distributed as dist

    x = torch.full((ROWS, IN), float(rank + 1))
    w = torch.ones(OUT, IN)
    y = x @ w.T  # 8 x (rank + 1) everywhere
    dist.all_reduce(y)  # S = 96 B: 8 x 1 + 8 x 2 = 24
    gathered = torch.empty(2 * ROWS, OUT)
    dist.all_gather_into_tensor(gathered, y)  # S = the output, 192 B
    part = torch.empty(ROWS // 2, OUT)
    dist.reduce_scatter_tensor(part, y)  # S = the input, 96 B: 24 + 24 = 48
    swapped = torch.empty(ROWS, OUT)
    dist.all_to_all_single(swapped, y)  # S = 96 B
    dist.broadcast(y, 0)  # S = 96 B
    return {"y": float(y[0, 0]), "part": float(part[0, 0]), "gathered": list(gathered.shape)}


def _rank(rank: int, store: str, out: str, env: dict[str, str]) -> None:
    """One gloo rank: profile the step, save the document and the step's values."""
    os.environ.update(env)  # the test's calibration store (a forkserver child has the server's environment)
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
    try:
        values: dict[str, Any] = {}
        with torch.no_grad(), profile(name=f"rank{rank}", device="cpu") as prof:
            values = _step(rank)
        prof.save(Path(out, f"rank{rank}.json"))
        Path(out, f"rank{rank}.values.json").write_text(json.dumps(values))
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import multiprocessing

    import torch.multiprocessing as mp

    # The ranks fork from one server that imported torch and roofline once (measuring/collectives.py's launcher
    # does the same; whichever starts the server first sets what it preloads). torch._dynamo too: the first op
    # under a dispatch mode imports it (3-6 s here), once in the server instead of once per rank.
    multiprocessing.set_forkserver_preload(["torch", "torch.distributed", "torch._dynamo",
                                            "roofline.measuring.collectives", "roofline.capture.profile"])
    out = tmp_path_factory.mktemp("ranks")
    env = {k: os.environ[k] for k in ("ROOFLINE_CACHE_DIR", "ROOFLINE_NO_GPU") if k in os.environ}
    mp.start_processes(_rank, args=(str(out / "store"), str(out), env), nprocs=2, start_method="forkserver")
    return out


# (collective, torch op, S, busbw factor at n = 2, reduction adds (n-1)/n x S / 4 B, bytes sent = factor x S)
EXPECTED = [
    ("all_reduce", "c10d::allreduce_", S, 1.0, 12, S),  # 2(2-1)/2 = 1; 1/2 x 96 / 4 = 12
    ("all_gather", "c10d::_allgather_base_", 2 * S, 0.5, 0, S),  # 0.5 x 192 = 96 sent
    ("reduce_scatter", "c10d::_reduce_scatter_base_", S, 0.5, 12, S / 2),
    ("all_to_all", "c10d::alltoall_base_", S, 0.5, 0, S / 2),
    ("broadcast", "c10d::broadcast_", S, 1.0, 0, S),
]


@pytest.mark.parametrize("rank", [0, 1])
def test_two_gloo_ranks_record_each_collective(two_ranks: Path, rank: int) -> None:
    doc = read_document(two_ranks / f"rank{rank}.json")
    values = json.loads((two_ranks / f"rank{rank}.values.json").read_text())
    # the program computed what it computes unprofiled
    assert values == {"y": 24.0, "part": 48.0, "gathered": [8, 6]}
    comm = [r for r in doc.records if r.collective is not None]
    got = [(r.op, r.collective["torch_op"], r.params["bytes"], r.collective["busbw_factor"], r.flops,
            r.bytes_written) for r in comm]
    assert got == [(op, torch_op, size, factor, flops, sent) for op, torch_op, size, factor, flops, sent in EXPECTED]
    for r in comm:
        assert r.params["ranks"] == 2 and r.collective["ranks"] == 2 and r.collective["backend"] == "gloo"
        assert r.bytes_read == r.bytes_written  # receives as many as it sends
        assert r.bytes_by_kind == {"link": 2 * r.bytes_written}
        assert r.flops_source == f"catalog:{r.op}" and r.module == "" and r.count == 1
        assert r.collective["link_bytes_per_s_one_way"] is None  # the CPU: no interconnect roof
        assert any("is not a GPU: no interconnect roof" in n for n in r.notes)
        assert r.time_s and r.time_s > 0  # host time to completion
        c = r.collective
        assert c["algbw_bytes_per_s"] == pytest.approx(r.params["bytes"] / r.time_s)  # algbw = S / t
        assert c["busbw_bytes_per_s"] == pytest.approx(c["algbw_bytes_per_s"] * c["busbw_factor"])
    # the model's own op is still there, as in any profile
    assert "aten::mm" in [r.op for r in doc.records if r.collective is None]


def test_two_gloo_ranks_summary_share(two_ranks: Path) -> None:
    doc = read_document(two_ranks / "rank0.json")
    s = doc.extra["profile"]
    comm = s["communication"]
    times = [(r.time_s or 0.0) * (r.count or 1) for r in doc.records if r.collective is not None]
    assert comm["calls"] == 5 and comm["ranks"] == [2] and comm["backends"] == ["gloo"]
    assert comm["time_s"] == pytest.approx(sum(times))
    assert comm["share"] == pytest.approx(sum(times) / s["kernel_time_s"])
    assert 0 < comm["share"] < 1
    by_op = {d["op"]: d for d in comm["by_op"]}
    assert by_op["all_gather"]["calls"] == 1 and by_op["all_gather"]["bytes"] == 2 * S
    # link bytes: sent + received: all_reduce 2 x 96, all_gather 2 x 96, reduce_scatter and all_to_all 2 x 48
    # each, broadcast 2 x 96: 192 + 192 + 96 + 96 + 192 = 768
    assert comm["link_bytes"] == 768
    # a collective has a formula: it counts in the coverage like any op
    assert "all_reduce" not in {m["op"] for m in s["without_formula"]}
    assert "communication" in header(profile_view(doc)).plain
    assert not is_collectives(doc)  # `plot` draws it as a profile, not as busbw against size


def test_nccl_kernels_of_no_op_count_as_communication() -> None:
    """A compiled graph's NCCL kernel reaches no op: its time joins the communication share all the same."""
    unattributed = [UnattributedKernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 2, 3e-4),
                    UnattributedKernel("triton_poi_fused_add_0", 2, 1e-4)]
    comm = communication([], [], 1e-3, None, True, unattributed)
    assert comm is not None
    assert (comm.calls, comm.time_s, comm.unattributed_time_s) == (0, 3e-4, 3e-4)
    assert comm.share == pytest.approx(0.3)  # 0.3 ms of 1 ms of kernel time
    assert communication([], [], 1e-3, None, True, unattributed[1:]) is None  # no collective: no key


@pytest.fixture
def fake_group() -> Any:
    """torch's fake process group (no peers, collectives do nothing) in this process: `fake_group(ranks)`."""
    import torch.distributed as dist
    from torch.testing._internal.distributed.fake_pg import FakeStore

    assert not dist.is_initialized()

    def start(ranks: int) -> Any:
        dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=ranks)
        return dist.group.WORLD

    yield start
    if dist.is_initialized():
        dist.destroy_process_group()


def test_fake_group_of_eight_on_nvlink(fake_group: Any) -> None:
    """Analytic, over 8 ranks: the c10d and the functional all_reduce on the H200's NVLink roof; the functional
    all_gather's S is its gathered output; waiting on a functional result is no op of its own."""
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol

    group = fake_group(8)
    x = torch.randn(16, 1024, dtype=torch.bfloat16)

    def step() -> Any:
        dist.all_reduce(x)
        y = funcol.all_reduce(x, "sum", group)
        gather = getattr(funcol, "all_gather_single", None) or funcol.all_gather_tensor  # older torch: the latter
        return gather(y, 0, group) * 2  # the multiply waits on the gathered tensor

    prof = profile(step, gpu="h200", time=False)
    size = 16 * 1024 * 2  # 32,768 B of bf16
    r, f, g = (r for r in prof.records if r.collective is not None)
    assert [r.collective["torch_op"] for r in (r, f, g)] == [
        "c10d::allreduce_", "_c10d_functional::all_reduce", "_c10d_functional::all_gather_into_tensor"]
    assert (r.op, r.params, r.dtype) == ("all_reduce", {"bytes": size, "ranks": 8}, "bf16")
    assert r.bytes_written == pytest.approx(2 * 7 / 8 * size)  # 57,344 B sent, as many received
    assert r.flops == pytest.approx(7 / 8 * size / 2)  # 14,336 adds
    # H200: 18 NVLink 4 links, 450 GB/s per direction; the roof counts both directions (bytes = sent + received)
    assert r.peak_bytes_per_s == 900e9 and r.collective["link_bytes_per_s_one_way"] == 450e9
    assert r.roofline_time_s == pytest.approx(57_344 / 450e9)  # bytes sent / per-direction bandwidth
    assert (f.op, f.params, f.roofline_time_s) == (r.op, r.params, r.roofline_time_s)
    # all_gather: S = 8 x 32,768 B gathered; each GPU receives the 7 chunks it lacks: 7/8 x S = 229,376 B
    assert (g.op, g.params, g.bytes_read, g.flops) == ("all_gather", {"bytes": 8 * size, "ranks": 8}, 229_376, 0)
    assert not any("wait_tensor" in r.op for r in prof.records)
    comm = prof.summary["communication"]
    assert comm["calls"] == 3 and comm["time_s"] is None and comm["backends"] == ["fake"]
    # the collectives send 57,344 + 57,344 + 229,376 = 344,064 B at 450 GB/s; the multiply moves 2 x 262,144 B
    # (8 x 32,768 B read and written) at the H200's 4.8 TB/s: 764.6 ns of 873.8 ns
    assert comm["roofline_share"] == pytest.approx((344_064 / 450e9) / (344_064 / 450e9 + 524_288 / 4.8e12))


def test_functional_collective_timed_to_completion(fake_group: Any) -> None:
    """On the host a functional collective is waited on inside its op: it gets a time, the wait no record."""
    import torch.distributed._functional_collectives as funcol

    group = fake_group(2)
    x = torch.randn(64)
    prof = profile(lambda: funcol.all_reduce(x, "sum", group) + 1, warmup=0, device="cpu")
    (r,) = (r for r in prof.records if r.collective is not None)
    assert r.time_s and r.time_s > 0 and r.collective["algbw_bytes_per_s"] == pytest.approx(256 / r.time_s)
    assert [r.op for r in prof.records] == ["all_reduce", "aten::add.Tensor"]


def test_world_of_one_rank_stays_on_memory(fake_group: Any) -> None:
    """One rank: no link traffic; the tensors' bytes on the memory roof, busbw = algbw x 0."""
    import torch.distributed as dist

    fake_group(1)
    x = torch.randn(256)
    prof = profile(lambda: dist.all_reduce(x), warmup=0, device="cpu")
    (r,) = prof.records
    assert (r.op, r.params, r.flops) == ("all_reduce", {"bytes": 1024, "ranks": 1}, 0)
    assert r.flops_source == "rule:collective"
    assert r.bytes_read == r.bytes_written == 1024  # in place: read and written once, 256 x 4 B
    assert r.collective["busbw_factor"] == 0 and r.collective["busbw_bytes_per_s"] == 0


def test_single_process_profile_unchanged() -> None:
    """No process group: no collective records, no `communication` key."""
    lin = torch.nn.Linear(8, 4)
    x = torch.randn(2, 8)
    with torch.no_grad():
        prof = profile(lambda: lin(x), warmup=0, device="cpu")
    assert "communication" not in prof.summary
    assert all(r.collective is None and r.op.startswith("aten::") for r in prof.records)
    assert "communication" not in header(profile_view(prof.document())).plain


def test_cli_in_a_torchrun_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    """Rank 1 of a torchrun job writes its own document (FILE.rank1.json) and prints no views (rank 0 does, and
    writes FILE, as outside a job)."""
    from helpers import ROOT, run

    for key, value in {"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2"}.items():
        monkeypatch.setenv(key, value)
    code, out, err = run(capsys, "profile", str(ROOT / "tests" / "scripts" / "tiny_mlp.py"), "--device", "cpu",
                         "-o", str(tmp_path / "step.json"))
    assert code == 0, err
    assert [p.name for p in tmp_path.iterdir()] == ["step.rank1.json"]
    assert "Top " not in out and "rank 1: results written" in err
