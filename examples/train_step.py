"""One training step of a small decoder (pre-norm blocks: causal self-attention with grouped-query heads, a
SiLU-gated MLP, residual adds; cross-entropy; AdamW) for `roofline profile`, which splits it by phase
(forward, backward, optimizer) and puts each backward op on the module whose forward created it:

    roofline profile examples/train_step.py --by phase --tokens 256 -- --preset tiny
    roofline profile examples/train_step.py --gpu b200 --no-time --tokens 65536 -- --preset full

Plain torch, random weights. `--warmup` steps run outside the region (the optimizer's state is made there),
then one step inside `roofline.region("step")`. bf16 autocast on a GPU and in the analytic run (which models
the GPU), fp32 on the CPU.
"""

from __future__ import annotations

import argparse
import contextlib
import time

import torch
import torch.nn.functional as F
from torch import nn

import roofline

# batch x sequence, model width, layers, heads, kv heads, vocabulary
PRESETS = {"tiny": {"batch": 2, "seq": 128, "d": 128, "layers": 2, "heads": 4, "kv_heads": 2, "vocab": 512},
           "full": {"batch": 16, "seq": 4096, "d": 2048, "layers": 16, "heads": 16, "kv_heads": 4, "vocab": 32000}}


class Attention(nn.Module):
    def __init__(self, d: int, heads: int, kv_heads: int) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.q = nn.Linear(d, d, bias=False)
        self.kv = nn.Linear(d, 2 * kv_heads * self.hd, bias=False)
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q = self.q(x).view(b, s, self.heads, self.hd).transpose(1, 2)
        k, v = self.kv(x).view(b, s, 2, self.kv_heads, self.hd).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.o(a.transpose(1, 2).reshape(b, s, d))


class Block(nn.Module):
    def __init__(self, d: int, heads: int, kv_heads: int) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.RMSNorm(d), nn.RMSNorm(d)
        self.attn = Attention(d, heads, kv_heads)
        self.gate, self.up = nn.Linear(d, 4 * d, bias=False), nn.Linear(d, 4 * d, bias=False)
        self.down = nn.Linear(4 * d, d, bias=False)
        self.drop = nn.Dropout(0.0)  # returns its input: no backward op is its own

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.drop(self.attn(self.norm1(x)))
        n = self.norm2(x)
        return x + self.drop(self.down(F.silu(self.gate(n)) * self.up(n)))


class Decoder(nn.Module):
    def __init__(self, d: int, layers: int, heads: int, kv_heads: int, vocab: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d, heads, kv_heads) for _ in range(layers))
        self.norm = nn.RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    ap.add_argument("--warmup", type=int, default=1, help="plain steps before the profiled one")
    a = ap.parse_args()
    p = PRESETS[a.preset]
    from torch._subclasses.fake_tensor import FakeTensor

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = Decoder(p["d"], p["layers"], p["heads"], p["kv_heads"], p["vocab"]).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, p["vocab"], (p["batch"], p["seq"] + 1), device=device)
    # the analytic run models the GPU (`--gpu b200 --no-time` on any host): bf16 autocast as on CUDA, which the
    # profile applies to the host's fake tensors (roofline/capture/gpu_autocast.py)
    gpu = device == "cuda" or isinstance(torch.empty(0), FakeTensor)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if gpu else contextlib.nullcontext()

    def step() -> None:
        with autocast:
            logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.float().flatten(0, 1), ids[:, 1:].flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    if not isinstance(torch.empty(0), FakeTensor):  # an analytic run computes nothing: no warm-up
        for _ in range(a.warmup):
            step()
    start = time.perf_counter()
    with roofline.region("step"):
        step()
    if device == "cuda":
        torch.cuda.synchronize()
    params = sum(x.numel() for x in model.parameters())
    print(f"train_step {a.preset}: {params / 1e6:.1f}M parameters, {p['batch']} x {p['seq']} tokens on {device}, "
          f"step {time.perf_counter() - start:.3f} s")


if __name__ == "__main__":
    main()
