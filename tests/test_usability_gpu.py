"""On a CUDA GPU: torch.compile'd code in an analytic profile runs eager (no compiled kernel on fake data), and
the summary's compiled modules count only the kept region's runs (tests/test_usability.py has the CPU side)."""

from __future__ import annotations

import pytest
import torch

from roofline.capture.profile import profile, region

pytestmark = pytest.mark.gpu


def _mlp() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(256, 1024, bias=False), torch.nn.SiLU(),
                               torch.nn.Linear(1024, 256, bias=False)).to("cuda", torch.bfloat16).eval()


def test_a_timed_gpu_profile_counts_the_regions_compiled_runs() -> None:
    torch._dynamo.reset()
    mlp, x = torch.compile(_mlp()), torch.randn(64, 256, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        for _ in range(3):  # compiles in the first; outside the region
            mlp(x)
        with profile(device="cuda") as prof:
            mlp(x)
            with region("step"):
                mlp(x)
    c = prof.summary["compiled"]
    assert c["modules"] == {"": 1}  # the region's one run, not the call before it
    assert c["triton_launches"] >= 1 and c["unattributed_launches"] == {}
    assert any(r.op.startswith("fused: ") for r in prof.records)
    torch._dynamo.reset()


def test_an_analytic_gpu_profile_runs_compiled_code_eager() -> None:
    torch._dynamo.reset()
    mlp, x = torch.compile(_mlp()), torch.randn(64, 256, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        mlp(x)  # compiled for real first: the analytic run must not call its kernels on fake tensors
        prof = profile(lambda: mlp(x), warmup=0, time=False)
    ops = {r.op for r in prof.records}
    assert "aten::mm" in ops and "aten::silu" in ops and not any(o.startswith("fused: ") for o in ops)
    # 2 x 64 x 256 x 1024 per matmul, two matmuls: 67,108,864 FLOPs
    assert sum(r.flops * r.count for r in prof.records if r.op == "aten::mm") == 2 * 2 * 64 * 256 * 1024
    assert any("compiled code ran eager in the analytic run" in n for n in prof.summary["notes"])
    torch._dynamo.reset()
