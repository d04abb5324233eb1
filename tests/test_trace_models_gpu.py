"""The trace-vs-profile cases on a GPU (the CPU path: test_trace_models.py): ResNet-50 and ViT inference, a
Llama-shaped prefill and decode, an AdamW step, a MoE forward and a torch.compile(mode="reduce-overhead") model traced
by a plain torch.profiler and profiled by `roofline profile`: the trace's kernel time within 1% of the profile's,
FLOPs equal where shapes were recorded; a real CUDA graph replay tied to the ops that captured it; a compiled
model's Triton launches placed (scripts/gpu_check/traces.sh runs this file)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from models import MLP
from test_trace_models import KERNEL_TIME_TOLERANCE, _no_grad, _traced, compare

import roofline

pytestmark = pytest.mark.gpu

GPU_CASES = ("resnet50", "vit_b_16", "llama_prefill", "llama_decode", "adamw_step", "moe_forward",
             "compiled_reduce_overhead")


@pytest.mark.parametrize("name", GPU_CASES)
def test_a_trace_and_a_profile_agree_on_the_gpu(name: str, tmp_path: Path) -> None:
    out = compare(name, "cuda", False, tmp_path)
    assert out["ratio"] is not None and abs(out["ratio"] - 1) <= KERNEL_TIME_TOLERANCE, out
    if out["flops_exact"]:
        assert out["trace_flops"] == out["profile_flops"], out


def test_a_real_cuda_graph_replay_is_tied_to_the_ops_that_captured_it(tmp_path: Path) -> None:
    """The profile covers the capture and three replays: each replay's GEMM kernel goes to the aten::mm that
    captured it (three calls), nothing counted twice, nothing dropped."""
    a = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts, record_shapes=True) as prof:
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            a @ a  # warm-up on the side stream, as torch.cuda.graphs asks
        torch.cuda.current_stream().wait_stream(stream)
        with torch.cuda.graph(graph):
            b = torch.relu(a @ a)
        for _ in range(3):
            graph.replay()
        torch.cuda.synchronize()
    path = tmp_path / "graph.json"
    prof.export_chrome_trace(str(path))
    result = roofline.trace(path)
    trace = result.analysis.trace
    said = {"capture_marks": len(trace.capture_marks), "graph_kernels": sum(k.graph >= 0 for k in trace.kernels),
            "notes": [str(n) for n in result.summary.notes]}
    if os.environ.get("ROOFLINE_TRACE_OUT"):
        (Path(os.environ["ROOFLINE_TRACE_OUT"]) / "trace_cuda_graph.json").write_text(json.dumps(said, indent=1))
    device_s = sum(k.dur for k in trace.kernels) * 1e-6
    attributed = sum((r.time_s or 0.0) * (r.count or 1) for r in result.records)
    unattributed = sum(u.time_s or 0.0 for u in result.summary.unattributed)
    assert attributed + unattributed == pytest.approx(device_s, rel=1e-6), said  # each kernel once
    mm = [r for r in result.records if r.op == "aten::mm"]
    assert sum(r.count or 1 for r in mm) == 4, said  # the warm-up's and three replays'
    assert b.shape == (1024, 1024)


@pytest.mark.parametrize("benchmark_kernel", [True, False])
def test_a_compiled_models_triton_launches_are_placed(benchmark_kernel: bool, tmp_path: Path) -> None:
    """Under config.benchmark_kernel Inductor writes kernel_flop and kernel_num_gb into the trace and they place its
    launches; without it, the fused ops (the generated source is on this machine) do. None is left unplaced."""
    import torch._inductor.config as inductor_config

    torch._dynamo.reset()
    with inductor_config.patch(benchmark_kernel=benchmark_kernel):
        model = torch.compile(MLP(1024, 4096).to("cuda", torch.bfloat16).eval())
        x = torch.randn(2048, 1024, device="cuda", dtype=torch.bfloat16)
        result = roofline.trace(_traced(lambda: _no_grad(model, x), tmp_path / "compiled.json", "cuda"))
    (note,) = [str(n) for n in result.summary.notes if "torch.compile'd Triton launches" in str(n)]
    assert "not placed" not in note, note
    assert ("Inductor" in note) == benchmark_kernel, note  # "by ... Inductor wrote" or "by Inductor's figures ..."
    fused = [r for r in result.records if r.op.startswith("fused:")]
    assert fused and all(r.bytes for r in fused), note
