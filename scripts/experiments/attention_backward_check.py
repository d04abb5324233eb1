"""GPU check of attention --backward: the fused backward op called directly (square causal blocks, MHA and GQA),
its gradients against SDPA's math backend and its time; a bottom-right mask (kv_seq > seq) refused in one line.
Run on the H200 on 2026-12-02 (docs/measurements.md):
    PYTHONPATH=. python3 scripts/experiments/attention_backward_check.py"""
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right

from roofline.core.dtypes import get_dtype
from roofline.core.errors import UsageError
from roofline.measuring.kernels import build
from roofline.measuring.timing_cuda import TimingOptions, time_cuda
from roofline.ops import make

for seq, kv_seq, kv in ((256, 256, 8), (256, 256, 2), (256, 512, 8), (256, 512, 2)):
    op = make("attention", batch=2, heads=8, kv_heads=kv, seq=seq, kv_seq=kv_seq, head_dim=64, causal=True,
              backward=True)
    try:
        b = build(op, get_dtype("bf16"), "cuda")
    except UsageError as exc:
        print(f"seq {seq} kv_seq {kv_seq} kv_heads {kv}: refused: {exc}")
        continue
    got = b.fn()
    q, k, v = (t.detach().float().requires_grad_(True) for t in b.inputs[:3])
    mask = None if seq == kv_seq else causal_lower_right(seq, kv_seq)
    with sdpa_kernel(SDPBackend.MATH):
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None,
                                       enable_gqa=k.shape[1] != q.shape[1]).backward(b.inputs[-1].float())
    want = (q.grad, k.grad, v.grad)
    ok = all(torch.allclose(g.float(), w, atol=3e-2, rtol=3e-2) for g, w in zip(got, want, strict=True))
    m = time_cuda(b.fn, TimingOptions(rep_s=0.01, warmup_s=0.005))
    print(f"seq {seq} kv_seq {kv_seq} kv_heads {kv}: grads match {ok}; graph_safe {b.graph_safe}; "
          f"{m.method} {m.median_s * 1e6:.1f} us; {b.impl}")
