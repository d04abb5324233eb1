"""A torch.compile'd model profiled on a CUDA GPU: Inductor's Triton kernels attributed to the aten ops they
fused, against the same model profiled eager; the summary's compiled modules count only the kept region's runs;
compiled code in an analytic profile runs eager (no compiled kernel on fake data). tests/test_compile.py has the
CPU side.

With ROOFLINE_COMPILE_OUT set (scripts/gpu_check.sh stage `compile`), the generated kernel files and each
launch's profiler arguments are saved there: real fixtures for the CPU tests of the parser."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path

import pytest
import torch
from helpers import ROOT

from roofline.capture import profile, region
from roofline.core.aten_names import FUSED_PREFIX

pytestmark = pytest.mark.gpu

# Tolerance of the non-matmul FLOPs, compiled vs eager: the fused kernels count each aten op's rule over the
# kernel's elements (a reduction kernel's pointwise ops over its inputs, the bf16 casts free), the eager ops
# over their own outputs; the matmul FLOPs are the same extern GEMMs and must agree exactly.
ELEMENTWISE_TOLERANCE = 0.25


def _block() -> torch.nn.Module:
    spec = importlib.util.spec_from_file_location("compiled_mlp", ROOT / "examples" / "compiled_mlp.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.GatedBlock(1024, 4096).to("cuda", torch.bfloat16).eval()


def _save(prof: object, out: Path) -> None:
    """The generated kernel files and the fused calls' arguments (ROOFLINE_COMPILE_OUT)."""
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for p in prof.calls:  # type: ignore[attr-defined]
        a = p.call.args
        if not p.call.op.startswith(FUSED_PREFIX):
            continue
        path = a.get("kernel_file")
        if path and Path(path).is_file():
            shutil.copy(path, out / f"{a['kernel']}.py")
        rows.append({"op": p.call.op, "kernel": a["kernel"], "kernel_file": path, "kind": a["kind"],
                     "rows": a["rows"], "cols": a["cols"], "flops": p.cost.flops,
                     "inputs": [[list(t.shape), t.dtype] for t in p.call.inputs],
                     "outputs": [[list(t.shape), t.dtype] for t in p.call.outputs],
                     "bytes": p.traffic.bytes_read + p.traffic.bytes_written, "time_s": p.time_s})
    (out / "launches.json").write_text(json.dumps(rows, indent=1))


def test_triton_kernels_are_attributed_to_the_ops_they_fused() -> None:
    block = _block()
    x = torch.randn(2048, 1024, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        eager = profile(lambda: block(x), warmup=2)
        compiled_block = torch.compile(block)
        compiled = profile(lambda: compiled_block(x), warmup=3)
    e, c = eager.summary, compiled.summary
    if os.environ.get("ROOFLINE_COMPILE_OUT"):
        _save(compiled, Path(os.environ["ROOFLINE_COMPILE_OUT"]))
    print("eager", {k: e[k] for k in ("flops", "flops_matmul", "bytes", "coverage", "kernel_time_s")})
    print("compiled", {k: c[k] for k in ("flops", "flops_matmul", "bytes", "coverage", "kernel_time_s")},
          c.get("compiled"), c["unattributed"])
    fused = [r for r in compiled.records if r.op.startswith(FUSED_PREFIX)]
    for r in compiled.records:
        print(f"{r.op:40} {r.module:12} count {r.count} flops {r.flops} bytes {r.bytes} time {r.time_s}")
    assert fused, "no Triton kernel became a fused call"
    assert c["compiled"]["unattributed_launches"] == {}
    assert c["coverage"] >= 0.95
    # the GEMMs are the same extern kernels: 3 x 2 x 2048 x 1024 x 4096 FLOPs either way
    assert c["flops_matmul"] == e["flops_matmul"] == 3 * 2 * 2048 * 1024 * 4096
    elementwise_eager, elementwise_compiled = e["flops"] - e["flops_matmul"], c["flops"] - c["flops_matmul"]
    assert elementwise_compiled == pytest.approx(elementwise_eager, rel=ELEMENTWISE_TOLERANCE)
    # fusion saves bytes: each fused kernel moves at most what the eager ops of the same names moved
    eager_bytes: dict[str, float] = {}
    for r in eager.records:
        if r.bytes is not None:
            name = r.op.split("::")[-1].split(".")[0]
            eager_bytes[name] = eager_bytes.get(name, 0.0) + r.bytes * (r.count or 1)
    compared = 0
    for r in fused:
        names = r.op.removeprefix(FUSED_PREFIX).split("+")
        unfused = sum(eager_bytes.get(n, 0.0) for n in names)
        if unfused:  # ops the eager run records under other names (a decomposed norm) are not compared
            assert r.bytes * (r.count or 1) <= unfused * 1.0001, r.op
            compared += 1
    assert compared, "no fused kernel had eager ops of its names to compare with"
    assert c["bytes"] < e["bytes"]
    assert all(r.time_s and r.time_s > 0 for r in fused)


def test_a_compiled_model_profiled_without_warmup_still_does_not_crash() -> None:
    block = _block()
    x = torch.randn(64, 1024, device="cuda", dtype=torch.bfloat16)
    compiled_block = torch.compile(block)
    with torch.no_grad(), profile() as prof:  # compiled inside the profile: autotuning kernels profiled too
        compiled_block(x)
    s = prof.summary
    assert s["kernel_time_s"] > 0
    assert s["attributed_time_s"] + s["unattributed_time_s"] == pytest.approx(s["kernel_time_s"])


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
    assert any(r.op.startswith(FUSED_PREFIX) for r in prof.records)
    torch._dynamo.reset()


def test_an_analytic_gpu_profile_runs_compiled_code_eager() -> None:
    torch._dynamo.reset()
    mlp, x = torch.compile(_mlp()), torch.randn(64, 256, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        mlp(x)  # compiled for real first: the analytic run must not call its kernels on fake tensors
        prof = profile(lambda: mlp(x), warmup=0, time=False)
    ops = {r.op for r in prof.records}
    assert "aten::mm" in ops and "aten::silu" in ops and not any(o.startswith(FUSED_PREFIX) for o in ops)
    # 2 x 64 x 256 x 1024 per matmul, two matmuls: 67,108,864 FLOPs
    assert sum(r.flops * r.count for r in prof.records if r.op == "aten::mm") == 2 * 2 * 64 * 256 * 1024
    assert any("compiled code ran eager in the analytic run" in n for n in prof.summary["notes"])
    torch._dynamo.reset()
