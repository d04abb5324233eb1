"""`roofline trace` and `roofline.trace`: torch.profiler traces written here (CPU), read into the profile's
records; a trace and a profile of the same step agree; a 4-rank gloo job's collectives; the annotated trace read
back; bad input refused in one line; the parse's memory on a large synthetic trace; a hand-made GPU trace's
kernels attributed by correlation id."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers import ROOT, run

import roofline
from roofline.traces.read import read_trace

torch.manual_seed(0)


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(64, 128), torch.nn.Linear(128, 64)
        self.norm = torch.nn.LayerNorm(64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x + self.fc2(torch.nn.functional.gelu(self.fc1(x))))


class Net(torch.nn.Module):
    """Embedding, two blocks, attention over distinct q, k, v, a head and a softmax: every input its own tensor
    (a trace names no tensors: a call that reads one tensor twice counts it twice there, once in a profile)."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(100, 64)
        self.blocks = torch.nn.ModuleList([Block(), Block()])
        self.qkv = torch.nn.Linear(64, 192)
        self.head = torch.nn.Linear(64, 100)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.emb(ids)
        for b in self.blocks:
            x = b(x)
        q, k, v = (t.reshape(2, 8, 4, 16).transpose(1, 2) for t in self.qkv(x).chunk(3, -1))
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return torch.softmax(self.head(x + a.transpose(1, 2).reshape(2, 8, 64)), -1)


MODEL = Net().eval()
IDS = torch.randint(0, 100, (2, 8))


def _forward() -> None:
    with torch.no_grad():
        MODEL(IDS)


def _traced(path: Path, fn: Any = _forward, shapes: bool = True, gz: bool = False) -> Path:
    """`fn` run once under a plain torch.profiler, its trace exported to `path` (gzipped: the file written again)."""
    fn()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=shapes,
                                with_modules=True, with_stack=True) as prof:
        fn()
    prof.export_chrome_trace(str(path))
    if gz:
        gzipped = path.with_name(path.name + ".gz")
        gzipped.write_bytes(gzip.compress(path.read_bytes()))
        return gzipped
    return path


def _by_key(records: list[Any]) -> dict[tuple[Any, ...], tuple[int, float | None, float | None]]:
    out: dict[tuple[Any, ...], list[Any]] = {}
    for r in records:
        k = (r.op, str(r.input_shapes), r.phase)
        n, f, b = out.get(k, [0, r.flops, r.bytes])
        out[k] = [n + (r.count or 1), f, b]
    return {k: (v[0], v[1], v[2]) for k, v in out.items()}


@pytest.fixture(scope="module")
def forward_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _traced(tmp_path_factory.mktemp("trace") / "forward.json")


def test_a_trace_and_a_profile_of_the_same_step_agree(forward_trace: Path) -> None:
    prof = roofline.profile(_forward, warmup=1)
    result = roofline.trace(forward_trace)
    want, got = _by_key(prof.records), _by_key(result.records)
    # the same calls (op, input shapes, phase, count) with the same FLOPs and bytes, call by call
    assert got == want
    assert result.summary.flops == prof.summary.flops and result.summary.calls == prof.summary.calls
    # e.g. the first block's fc1: addmm of (16 x 64) by (64 x 128): 2 x 16 x 64 x 128 = 262,144 FLOPs
    assert want[("aten::addmm", "[[128], [16, 64], [64, 128]]", "forward")][1] == 2 * 16 * 64 * 128


def test_a_training_step_counts_the_same_flops(tmp_path: Path) -> None:
    model = Net()
    opt = torch.optim.AdamW(model.parameters())

    def step() -> None:
        model(IDS).sum().backward()
        opt.step()
        opt.zero_grad()

    step()
    prof = roofline.profile(step, warmup=1)
    result = roofline.trace(_traced(tmp_path / "train.json", step))
    assert result.summary.flops == prof.summary.flops
    assert result.summary.calls == prof.summary.calls
    phases = {r.phase for r in result.records}
    assert {"forward", "backward", "optimizer"} <= phases
    # a backward GEMM is its forward module's (autograd's sequence numbers tie it to the op that made it)
    assert any(r.phase == "backward" and r.op == "aten::mm" and "Linear" in (r.module or "") for r in result.records)


def test_gzipped_and_plain_read_the_same(forward_trace: Path, tmp_path: Path) -> None:
    gz = tmp_path / "forward.json.gz"
    gz.write_bytes(gzip.compress(forward_trace.read_bytes()))
    plain, zipped = read_trace(forward_trace), read_trace(gz)
    assert (plain.ops, plain.signatures, plain.names) == (zipped.ops, zipped.signatures, zipped.names)
    assert plain.shapes and plain.events > 0


def test_modules_and_regions_are_the_traces(tmp_path: Path) -> None:
    def marked() -> None:
        with torch.profiler.record_function("decode"), torch.no_grad():
            MODEL(IDS)

    result = roofline.trace(_traced(tmp_path / "marked.json", marked))
    assert {r.region for r in result.records} == {"decode"}
    # with_modules=True names modules by class and instance: the root (Net_0) stripped, as a profile strips it
    assert result.summary.module_root == "Net_0"
    assert {r.module for r in result.records if r.op == "aten::native_layer_norm"} == {
        "Block_0.LayerNorm_0", "Block_1.LayerNorm_1"}


def test_without_shapes_the_trace_is_time_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _traced(tmp_path / "noshapes.json", shapes=False)
    result = roofline.trace(path)
    assert result.records and all(r.flops is None for r in result.records)
    assert any(n.startswith("the trace has no input shapes") for n in result.summary.notes)
    code, out, err = run(capsys, "trace", str(path))
    assert code == 0 and "no input shapes" in out + err


@pytest.mark.parametrize(("text", "said"), [
    ('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1', "truncated or malformed JSON"),
    ('{"results": []}', "not a torch.profiler trace (no traceEvents"),
    ('[{"ph": "X", "name": "a", "ts": 1, "dur": 1}]', "not a torch.profiler trace (a JSON array"),
    ('{"traceEvents": [{"ph": "X", "cat": "gpu", "name": "draw", "ts": 1, "dur": 2}]}', "a trace of another tool"),
    ("not json at all", "truncated or malformed JSON"),
    ('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1} {"ph": "X"}]}',
     "expected ',' or ']' after an event"),
    ('{"schemaVersion": 1, "traceEvents": {"ph": "X"}}', "traceEvents is not a list"),
    ("", "an empty file, not a torch.profiler trace"),
    ("  42", "not a torch.profiler trace (a JSON value"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str,
                                          said: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    out_doc = tmp_path / "out.json"
    code, _, err = run(capsys, "trace", str(bad), "-o", str(out_doc))
    assert code == 2, err
    assert said in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out_doc.exists()


def test_a_file_that_is_not_text_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"traceEvents": [{"name": "\xff\xfe"}]}')  # not UTF-8
    code, _, err = run(capsys, "trace", str(bad))
    assert code == 2 and "not UTF-8" in err and len(err.strip().splitlines()) == 1


def test_the_command_writes_a_document_check_reads(forward_trace: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert run(capsys, "trace", str(forward_trace), "-o", str(a))[0] == 0
    assert run(capsys, "trace", str(forward_trace), "-o", str(b))[0] == 0
    doc = json.loads(a.read_text())
    assert doc["extra"]["trace"]["rank"] == 0 if "extra" in doc else doc["trace"]["rank"] == 0
    code, out, err = run(capsys, "check", str(a), "--baseline", str(b))
    assert code in (0, 1) and "Traceback" not in err  # a verdict (the same trace twice: no regression)
    assert code == 0, out + err


def test_the_annotated_trace_reads_back(forward_trace: Path, tmp_path: Path) -> None:
    from roofline.traces.annotate import COUNTER, write_annotated

    result = roofline.trace(forward_trace)
    out = write_annotated(result.analysis, tmp_path / "annotated.json.gz")
    with gzip.open(out, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    ops = [e for e in events if e.get("cat") == "cpu_op" and "roofline.flops" in e.get("args", {})]
    assert len(ops) == result.summary.calls  # each counted call once (a CPU trace: its op events)
    mm = next(e for e in ops if e["name"] == "aten::addmm")
    assert mm["args"]["roofline.flops"] == 2 * 16 * 64 * 128 and mm["args"]["roofline.bytes"] > 0
    assert 0 < mm["args"]["roofline.roof_fraction"]
    assert [e for e in events if e.get("ph") == "C" and e["name"] == COUNTER]
    again = roofline.trace(out)  # our own parser reads it back: the same records
    assert _by_key(again.records) == _by_key(result.records)


def _gpu_trace(path: Path, device: str = "NVIDIA H100 80GB HBM3", steps: tuple[int, ...] = (), rank: int = 0,
               kernel_us: float = 10.0, step_us: float = 90.0) -> Path:
    """A hand-made GPU trace: aten::linear > aten::t (a view) and aten::addmm > cudaLaunchKernel (correlation 7) >
    a 10 µs kernel; a kernel whose launch is not in the trace (correlation 99); and `steps` ranges."""
    path.parent.mkdir(parents=True, exist_ok=True)
    def op(name: str, ts: float, dur: float, dims: list[Any], types: list[str], ext: int) -> dict[str, Any]:
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
                "args": {"External id": ext, "Input Dims": dims, "Input type": types,
                         "Concrete Inputs": [""] * len(dims)}}

    events = [
        op("aten::linear", 100.0, 50.0, [[64, 256], [512, 256], [512]], ["c10::BFloat16"] * 3, 1),
        op("aten::t", 101.0, 2.0, [[512, 256]], ["c10::BFloat16"], 2),
        op("aten::addmm", 104.0, 40.0, [[512], [64, 256], [256, 512], [], []],
           ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"], 3),
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 110.0, "dur": 5.0,
         "args": {"correlation": 7, "External id": 3}},
        {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16", "pid": 0, "tid": 7, "ts": 120.0,
         "dur": kernel_us, "args": {"correlation": 7, "device": 0, "stream": 7, "External id": 3}},
        {"ph": "X", "cat": "kernel", "name": "orphan_kernel", "pid": 0, "tid": 7, "ts": 140.0, "dur": 4.0,
         "args": {"correlation": 99, "device": 0, "stream": 7}},
    ]
    events += [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s}", "pid": 1, "tid": 1,
                "ts": 90.0 + 200 * i, "dur": step_us} for i, s in enumerate(steps)]
    path.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": device}],
                                "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
                                "traceEvents": events}))
    return path


def test_a_gpu_traces_kernels_go_to_the_ops_that_launched_them(tmp_path: Path) -> None:
    result = roofline.trace(_gpu_trace(tmp_path / "gpu.json"))
    assert result.analysis.target.spec is not None and result.analysis.target.spec.id == "h100-sxm"
    (mm,) = [r for r in result.records if r.op == "aten::addmm"]
    assert mm.time_s == pytest.approx(10e-6)  # the kernel of correlation 7, launched inside addmm
    assert mm.flops == 2 * 64 * 256 * 512 and mm.dtype == "bf16"
    assert [u.kernel for u in result.summary.unattributed] == ["orphan_kernel"]  # never dropped
    assert result.summary.skipped_ops == {"aten::t": 1}  # the view inside linear, as a profile skips it


def test_ranks_of_different_gpus_or_steps_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _gpu_trace(tmp_path / "a" / "r0.json", rank=0)
    _gpu_trace(tmp_path / "a" / "r1.json", device="NVIDIA A100-SXM4-80GB", rank=1)
    code, _, err = run(capsys, "trace", str(tmp_path / "a"))
    assert code == 2 and "ranks of different GPUs" in err
    _gpu_trace(tmp_path / "b" / "r0.json", steps=(1, 2), rank=0)
    _gpu_trace(tmp_path / "b" / "r1.json", steps=(3, 4), rank=1)
    code, _, err = run(capsys, "trace", str(tmp_path / "b"))
    assert code == 2 and "ranks of different steps" in err


def test_the_slowest_rank_of_a_step_and_why(tmp_path: Path) -> None:
    _gpu_trace(tmp_path / "job" / "r0.json", steps=(5,), rank=0, kernel_us=10.0, step_us=90.0)
    _gpu_trace(tmp_path / "job" / "r1.json", steps=(5,), rank=1, kernel_us=30.0, step_us=120.0)
    result = roofline.trace(tmp_path / "job", jobs=2)  # two parsing processes
    assert [r.rank for r in result.ranks] == [0, 1]
    (slow,) = result.slow_steps
    # rank 1's step lasted 120 µs, rank 0's 90; its GEMM's kernel took 30 µs against the median rank's 20 µs
    # (the median of 10 and 30)
    assert (slow.step, slow.rank, slow.time_s) == (5, 1, pytest.approx(120e-6))
    assert slow.ops[0][0] == "addmm" and slow.ops[0][1] == pytest.approx(10e-6)


GLOO_JOB = textwrap.dedent('''
    import os, sys, time, torch, torch.distributed as dist, torch.multiprocessing as mp

    def run(rank, world, out):
        dist.init_process_group("gloo", init_method=f"file://{out}/store", rank=rank, world_size=world)
        a = torch.randn(128, 128)
        dist.barrier()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
            for _ in range(2):
                for _ in range(rank + 1):
                    a @ a
                dist.barrier()
                time.sleep(0.05 * rank)  # rank r enters the all_reduce r x 50 ms after rank 0
                dist.all_reduce(torch.ones(4096))
                dist.all_gather_into_tensor(torch.empty(4096 * world), torch.ones(4096))
        prof.export_chrome_trace(f"{out}/rank{rank}.json")
        dist.destroy_process_group()

    if __name__ == "__main__":
        mp.spawn(run, args=(4, sys.argv[1]), nprocs=4)
''')


@pytest.fixture(scope="module")
def gloo_job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("gloo")
    script = folder / "job.py"
    script.write_text(GLOO_JOB)
    subprocess.run([sys.executable, str(script), str(folder)], check=True, capture_output=True, timeout=300)
    (folder / "store").unlink(missing_ok=True)
    script.unlink()
    return folder


def test_a_gloo_jobs_ranks_and_collectives(gloo_job: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = roofline.trace(gloo_job)
    assert [r.rank for r in result.ranks] == [0, 1, 2, 3]
    ops = Counter(c.op for c in result.collectives)
    assert ops == {"all_reduce": 2, "all_gather": 2}  # two steps of each, matched across the 4 ranks
    for c in result.collectives:
        # all_reduce: the 4096 fp32 buffer (16,384 B); all_gather: the gathered output, 4 x 4096 x 4 = 65,536 B
        assert c.bytes == (16384 if c.op == "all_reduce" else 65536) and c.ranks == 4
        assert c.algbw_bytes_per_s is not None
        assert c.busbw_bytes_per_s == pytest.approx(c.algbw_bytes_per_s * (1.5 if c.op == "all_reduce" else 0.75))
    for c in (c for c in result.collectives if c.op == "all_reduce"):
        # rank 3 slept 150 ms more than rank 0 before entering: the skew, the last rank
        assert c.last_rank == 3 and 0.14 < c.skew_s < 0.5
        assert c.exposed_s > 0
    code, out, _ = run(capsys, "trace", str(gloo_job))
    assert code == 0 and "4 ranks" in out and "all_reduce 0" in out


def test_streaming_parse_of_a_large_trace_stays_small(forward_trace: Path, tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from trace_bench import synthesize
    finally:
        sys.path.pop(0)
    big = tmp_path / "big.json"
    events = synthesize(forward_trace, big, 20_000_000)
    trace = read_trace(big, measure_memory=True)
    assert trace.events == events
    # json.load would hold ~10x the file's 20 MB in Python objects; the stream holds one 64 KiB buffer's events and
    # what it keeps, a few hundred bytes per op (3.1 MB for a 10 MB trace of this model when measured)
    assert trace.peak_bytes is not None and trace.peak_bytes < 0.5 * big.stat().st_size
    assert trace.peak_bytes < 400 * len(trace.ops) + 4_000_000


def test_a_traces_repeated_blocks_are_one_row_unless_no_group(forward_trace: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 52's grouping, on a trace: torch.profiler's `with_modules=True` names a module by class and instance
    ('Block_0.LayerNorm_0', 'Block_1.LayerNorm_1'), so the two blocks of `Net` are one row by default
    ('Block_{0,1}.LayerNorm_{0,1}', 2 calls) and two with --no-group."""
    code, out, err = run(capsys, "trace", str(forward_trace), "--top", "40")
    assert code == 0, err
    flat = " ".join(out.split())
    assert "LayerNorm_{0,1}" in flat and "LayerNorm_0 " not in flat and "LayerNorm_1 " not in flat
    code, out, err = run(capsys, "trace", str(forward_trace), "--top", "40", "--no-group")
    assert code == 0, err
    flat = " ".join(out.split())
    assert "LayerNorm_0 " in flat and "LayerNorm_1 " in flat and "{0,1}" not in flat
