"""An analytic profile for a GPU on a CPU host is modelled in the GPU's terms (issue 52): autocast as CUDA's
(capture/gpu_autocast.py), the GPU's kernel names (capture/gpu_terms.py); the host's own profile is untouched.

Expected dtypes come from torch's CUDA autocast lists (amp docs, "CUDA Ops that can autocast to float16 /
float32": linear and mm in lower precision, softmax and layer_norm in float32) and the kernel names from torch's
CUDA SDPA dispatch (FlashAttention for fp16/bf16, head dim <= 256, no mask; else the memory-efficient kernel).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import torch
from helpers import run

import roofline
from roofline.capture.gpu_autocast import cuda_autocast

ROOT = Path(__file__).resolve().parents[1]
B, S, D = 2, 16, 32  # batch, sequence, width: small, the counts do not matter here


def _mixed() -> None:
    """Linear -> softmax -> layer_norm under CUDA's bf16 autocast, as a training script on a GPU writes it."""
    lin = torch.nn.Linear(D, D)
    x = torch.randn(B, S, D)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = lin(x)
        z = torch.nn.functional.layer_norm(torch.softmax(y, -1), (D,))
    z.float().sum().backward()


def _dtypes(prof: roofline.Profile, op: str) -> set[tuple[str, ...]]:
    """The output dtypes of each call of `op`."""
    return {tuple(t.dtype for t in p.call.outputs) for p in prof.calls if p.call.op == op}


def test_an_analytic_gpu_profile_autocasts_as_cuda_on_a_cpu_host() -> None:
    """Before: torch disabled `autocast("cuda")` without CUDA and the step ran in fp32 (an fp32 roof)."""
    prof = roofline.profile(_mixed, time=False, gpu="h100")
    assert _dtypes(prof, "aten::addmm") == {("bf16",)}  # the linear: lower precision
    assert _dtypes(prof, "aten::_softmax") == {("fp32",)}  # CUDA's softmax writes fp32 (its dtype set)
    assert ("fp32", "fp32", "fp32") in _dtypes(prof, "aten::native_layer_norm")  # float32, its input cast
    assert not torch.is_autocast_enabled("cpu")


def test_the_autocast_overlay_is_gone_after_the_run() -> None:
    """The host's autocast is torch's again: CPU autocast keeps a softmax in bf16, and `autocast("cuda")` is
    disabled with torch's warning."""
    with cuda_autocast():
        pass
    y = torch.randn(4, 4, dtype=torch.bfloat16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert torch.softmax(y, -1).dtype == torch.bfloat16
    with pytest.warns(UserWarning, match="Disabling autocast"), torch.autocast("cuda", dtype=torch.bfloat16):
        assert (torch.randn(2, 2) @ torch.randn(2, 2)).dtype == torch.float32


def test_cuda_autocast_without_a_dtype_is_cudas_float16() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "CUDA is not available" warning: it autocasts
        with cuda_autocast(), torch.autocast("cuda"):
            assert (torch.randn(2, 2) @ torch.randn(2, 2)).dtype == torch.float16  # CUDA's default, not bf16


def _attention(dtype: torch.dtype, head_dim: int = 16, mask: bool = False) -> None:
    q, k, v = (torch.randn(B, 2, S, head_dim, dtype=dtype, requires_grad=True) for _ in range(3))
    m = torch.ones(S, S, dtype=torch.bool).tril() if mask else None
    torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=not mask).sum().backward()


@pytest.mark.parametrize(("dtype", "head_dim", "mask", "kernel"), [
    (torch.bfloat16, 16, False, "flash"),
    (torch.float16, 256, False, "flash"),
    (torch.float32, 16, False, "efficient"),  # flash takes fp16/bf16 only
    (torch.bfloat16, 512, False, "efficient"),  # head dim above flash's 256
    (torch.bfloat16, 16, True, "efficient"),  # a mask: flash takes none
])
def test_a_gpu_prediction_names_the_gpus_attention_kernel(dtype: torch.dtype, head_dim: int, mask: bool,
                                                         kernel: str) -> None:
    """Before: the CPU's `_scaled_dot_product_flash_attention_for_cpu_backward` in an H100 prediction."""
    prof = roofline.profile(lambda: _attention(dtype, head_dim, mask), time=False, gpu="h100")
    ops = {r.op for r in prof.records}
    assert f"aten::_scaled_dot_product_{kernel}_attention_backward" in ops
    assert not any("_for_cpu" in op for op in ops)
    bwd = next(p for p in prof.calls if p.call.op.endswith("_attention_backward"))
    assert bwd.cost.flops  # the formula still reads it
    if mask:
        assert bwd.call.args.get("attn_bias") is not None  # the efficient kernel's name for the mask


def test_the_hosts_own_profile_keeps_the_hosts_kernel() -> None:
    """A profile for the CPU itself (timed on it) names what the CPU ran."""
    prof = roofline.profile(lambda: _attention(torch.float32), warmup=0, device="cpu")
    assert "aten::_scaled_dot_product_flash_attention_for_cpu_backward" in {r.op for r in prof.records}


def test_the_training_example_predicts_a_bf16_step_on_a_b200(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 52: `examples/train_step.py --gpu b200 --no-time` predicted an fp32 step (6.44 s on the FP32 roof,
    full preset) with `sdpa_flash_for_cpu` in it; on a CUDA host it autocasts to bf16."""
    code, out, err = run(capsys, "profile", str(ROOT / "examples" / "train_step.py"), "--gpu", "b200", "--no-time",
                         "--json", "--", "--preset", "tiny")
    assert code == 0, err
    doc = json.loads(out)
    mms = {r["dtype"] for r in doc["records"] if r["op"] == "aten::mm"}
    assert mms == {"bf16"}  # forward and both gradients of every linear under autocast
    assert not any("_for_cpu" in r["op"] for r in doc["records"])
    assert "aten::_scaled_dot_product_flash_attention_backward" in {r["op"] for r in doc["records"]}
