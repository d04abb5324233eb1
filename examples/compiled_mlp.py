"""A torch.compile'd block (RMSNorm, a SiLU-gated MLP, the residual add) for `roofline profile`, which puts
Inductor's Triton kernels on the roofline as the aten ops they fused:

    roofline profile examples/compiled_mlp.py -o compiled.json            # compiled (a GPU: Triton kernels)
    roofline profile examples/compiled_mlp.py -o eager.json -- --eager    # the same block, eager

Plain torch. Random bf16 weights (fp32 on the CPU); the warm-up calls run outside the region, so compilation
and Inductor's autotuning are not profiled; then one call inside `roofline.region("forward")`.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from torch import nn

import roofline

# tokens x model width; the hidden width is 4 x d
PRESETS = {"tiny": {"tokens": 64, "d": 256}, "full": {"tokens": 4096, "d": 4096}}


class GatedBlock(nn.Module):
    """x + down(silu(gate(n)) * up(n)), n = RMSNorm(x): a Llama MLP with its norm."""

    def __init__(self, d: int, hidden: int, **where: object) -> None:
        super().__init__()
        self.norm = nn.RMSNorm(d, **where)
        self.gate = nn.Linear(d, hidden, bias=False, **where)
        self.up = nn.Linear(d, hidden, bias=False, **where)
        self.down = nn.Linear(hidden, d, bias=False, **where)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = self.norm(x)
        return x + self.down(F.silu(self.gate(n)) * self.up(n))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", choices=sorted(PRESETS), help="full on a GPU, tiny on the CPU")
    ap.add_argument("--eager", action="store_true", help="do not compile")
    ap.add_argument("--warmup", type=int, default=3)
    a = ap.parse_args()
    cuda = torch.cuda.is_available()
    p = PRESETS[a.preset or ("full" if cuda else "tiny")]
    device, dtype = ("cuda", torch.bfloat16) if cuda else ("cpu", torch.float32)
    block = GatedBlock(p["d"], 4 * p["d"], device=device, dtype=dtype).eval()  # built in place: no .to() copy
    model = block if a.eager else torch.compile(block)
    x = torch.randn(p["tokens"], p["d"], device=device, dtype=dtype)
    with torch.no_grad():
        for _ in range(a.warmup):
            model(x)
        start = time.perf_counter()
        with roofline.region("forward"):
            model(x)
        if cuda:
            torch.cuda.synchronize()
    print(f"{'eager' if a.eager else 'compiled'} gated MLP block, {p['tokens']} x {p['d']} on {device}: "
          f"{(time.perf_counter() - start) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
