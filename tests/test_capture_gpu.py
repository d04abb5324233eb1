"""Whole-model profiles on a CUDA GPU: device kernels tied to the op calls that launched them."""

from __future__ import annotations

import pytest
import torch
from models import MLP, Decoder

from roofline.capture import profile

pytestmark = pytest.mark.gpu


def _bf16(model: torch.nn.Module) -> torch.nn.Module:
    return model.to("cuda", torch.bfloat16).eval()


def test_every_kernel_is_attributed_to_an_op() -> None:
    model, x = _bf16(MLP(d=1024, h=4096)), torch.randn(256, 1024, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        prof = profile(lambda: model(x), warmup=3)
    s = prof.summary
    assert s["time_device"].startswith("cuda") and s["mode"] == "timed"
    assert s["coverage"] == pytest.approx(1.0) and s["unattributed"] == []
    assert all(r.time_s > 0 and r.kernels for r in prof.records)
    for r in prof.records:  # a record's time is the sum of its kernels' (per call)
        assert sum(r.kernel_times_s) == pytest.approx(r.time_s)
    assert s["kernel_time_s"] == pytest.approx(sum(r.time_s * r.count for r in prof.records))
    assert 0 < s["gpu_busy_s"] <= s["gpu_span_s"] <= s["wall_s"]
    assert prof.records[0].dtype == "bf16" and prof.records[0].compute_pipe == "bf16_tensor_dense_tflops"


def test_gqa_attention_on_the_gpu() -> None:
    model, x = _bf16(Decoder(n_layers=1, dim=512, heads=8, kv_heads=2, hidden=1024)), \
        torch.randn(2, 256, 512, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        prof = profile(lambda: model(x), warmup=2)
    attn = [r for r in prof.records if r.module == "layers.0.self_attn" and r.flops_source
            and "attention" in r.flops_source]
    assert len(attn) == 1
    b, h, s, d = 2, 8, 256, 64
    pairs = s * (s + 1) // 2  # causal: the (query, key) pairs the mask keeps, the diagonal included
    assert attn[0].flops == 4 * b * h * pairs * d  # the two matmuls over the kept pairs
    assert attn[0].extra_flops == 5 * b * h * pairs  # the softmax, apart (on no roof)
    assert attn[0].time_s > 0 and prof.summary["coverage"] > 0.99


def test_a_compiled_model_does_not_crash() -> None:
    model, x = _bf16(MLP(d=256, h=512)), torch.randn(64, 256, device="cuda", dtype=torch.bfloat16)
    compiled = torch.compile(model)
    with torch.no_grad():
        prof = profile(lambda: compiled(x), warmup=2)
    s = prof.summary
    assert s["kernel_time_s"] > 0  # the Triton kernels are listed, attributed or not
    assert s["attributed_time_s"] + s["unattributed_time_s"] == pytest.approx(s["kernel_time_s"])
