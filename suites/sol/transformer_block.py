"""Small network: a pre-norm transformer block (attention with SDPA, 4x MLP with GELU), d=256, 4 heads."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# Sizes grow with SOL_SCALE (`roofline sol --scale N`): 1 for the CPU, 64 for a large GPU.
SCALE = int(os.environ.get("SOL_SCALE", "1"))

BATCH, SEQ, DIM, HEADS = SCALE, 128, 256, 4


class Model(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


def get_inputs() -> list:
    return [torch.randn(BATCH, SEQ, DIM)]


def get_init_inputs() -> list:
    return [DIM, HEADS]
