"""The same steps traced by a plain torch.profiler (record_shapes, with_modules) and profiled by `roofline profile`
(issue 49's validation): on the GPU (gpu-marked; scripts/gpu_check/traces.sh runs them and gathers their JSON) the
trace's kernel time within 1% of the profile's, FLOPs exactly equal where shapes were recorded, coverage stated;
a real CUDA graph capture and replay; a torch.compile'd model. On the CPU the same cases at a tiny size: FLOPs equal.

Each case writes `trace_<case>.json` under $ROOFLINE_TRACE_OUT when it is set: the two kernel times, their ratio,
both FLOPs, the coverage and how Triton launches and graph replays were placed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from models import MLP, Decoder

import roofline

KERNEL_TIME_TOLERANCE = 0.01  # the bar: the trace's kernel time within 1% of the profile's
Step = Callable[[], Any]


def _traced(fn: Step, path: Path, device: str) -> Path:
    """`fn` warmed up, then run once under a plain torch.profiler and its trace exported."""
    for _ in range(3):
        fn()
    acts = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if device == "cuda" else [])
    with torch.profiler.profile(activities=acts, record_shapes=True, with_modules=True, with_stack=True) as prof:
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
    prof.export_chrome_trace(str(path))
    return path


class MoE(torch.nn.Module):
    """A mixture-of-experts layer: a router, top-2 of `experts` SwiGLU-free MLP experts, tokens gathered per expert."""

    def __init__(self, dim: int, hidden: int, experts: int) -> None:
        super().__init__()
        self.router = torch.nn.Linear(dim, experts, bias=False)
        self.experts = torch.nn.ModuleList([MLP(dim, hidden) for _ in range(experts)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weights, chosen = torch.topk(torch.softmax(self.router(x), -1), 2, dim=-1)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            rows, slot = torch.where(chosen == e)
            if rows.numel():
                out.index_add_(0, rows, expert(x[rows]) * weights[rows, slot, None])
        return out


def _case(name: str, device: str, tiny: bool) -> tuple[Step, bool]:
    """A step of case `name` on `device` (tiny: CPU sizes), and whether its FLOPs must match exactly."""
    dt = torch.bfloat16 if device == "cuda" else torch.float32
    d, h, seq = (64, 128, 16) if tiny else (1024, 2816, 512)
    model: Any
    if name in ("llama_prefill", "llama_decode"):
        model = Decoder(n_layers=2 if tiny else 4, dim=d, heads=4 if tiny else 16, kv_heads=2 if tiny else 4,
                        hidden=h).to(device, dt).eval()
        x = torch.randn(2 if tiny else 8, seq if name == "llama_prefill" else 1, d, device=device, dtype=dt)
        return (lambda: _no_grad(model, x)), True
    if name == "adamw_step":
        model = MLP(d, h).to(device, dt)
        opt = torch.optim.AdamW(model.parameters())
        x = torch.randn(seq * 4, d, device=device, dtype=dt)

        def step() -> None:
            model(x).float().square().mean().backward()
            opt.step()
            opt.zero_grad()
        return step, True
    if name == "moe_forward":
        moe = MoE(d, h, 8).to(device, dt).eval()
        x = torch.randn(seq * 4, d, device=device, dtype=dt)
        return (lambda: _no_grad(moe, x)), True
    if name in ("resnet50", "vit_b_16"):
        tv = pytest.importorskip("torchvision")
        model = getattr(tv.models, name)().to(device, dt).eval()
        x = torch.randn(1 if tiny else 16, 3, 224, 224, device=device, dtype=dt)
        return (lambda: _no_grad(model, x)), True
    if name == "compiled_reduce_overhead":
        model = torch.compile(MLP(d, h).to(device, dt).eval(), mode="reduce-overhead")
        x = torch.randn(seq * 4, d, device=device, dtype=dt)
        return (lambda: _no_grad(model, x)), False  # replays: the profile's own graph time, not its calls
    raise ValueError(name)


def _no_grad(model: Any, x: torch.Tensor) -> Any:
    with torch.no_grad():
        return model(x)


def compare(name: str, device: str, tiny: bool, folder: Path) -> dict[str, Any]:
    """The case traced and profiled; the figures written to $ROOFLINE_TRACE_OUT (module docstring)."""
    step, exact = _case(name, device, tiny)
    prof = roofline.profile(step, warmup=3)
    kept = os.environ.get("ROOFLINE_TRACE_OUT")
    if kept:  # the trace kept beside the figures (traces.sh builds its many-rank set from one)
        folder = Path(kept)
        folder.mkdir(parents=True, exist_ok=True)
    result = roofline.trace(_traced(step, folder / f"{name}.json", device))
    p, t = prof.summary, result.summary
    ratio = (t.kernel_time_s / p.kernel_time_s) if t.kernel_time_s and p.kernel_time_s else None
    out = {"case": name, "device": device, "tiny": tiny, "profile_kernel_s": p.kernel_time_s,
           "trace_kernel_s": t.kernel_time_s, "ratio": ratio, "profile_flops": p.flops, "trace_flops": t.flops,
           "flops_exact": exact, "trace_coverage": t.coverage, "profile_coverage": p.coverage,
           "graph_replay_s": t.graph_replay_time_s, "notes": [str(n) for n in t.notes]}
    if kept:
        (folder / f"trace_{name}.json").write_text(json.dumps(out, indent=1, default=str))
    return out


CPU_CASES = ("llama_prefill", "adamw_step", "moe_forward")


@pytest.mark.parametrize("name", CPU_CASES)
def test_the_cpu_path_counts_the_profiles_flops(name: str, tmp_path: Path) -> None:
    out = compare(name, "cpu", True, tmp_path)
    assert out["trace_flops"] == out["profile_flops"] and out["profile_flops"]
