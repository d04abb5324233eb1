"""Small network: a ViT patch embedding (16x16 patches by a strided conv, flatten, LayerNorm), 64x64 images."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# Sizes grow with SOL_SCALE (`roofline sol --scale N`): 1 for the CPU, 64 for a large GPU.
SCALE = int(os.environ.get("SOL_SCALE", "1"))

BATCH, C, HW, PATCH, DIM = 2 * SCALE, 3, 64, 16, 256


class Model(nn.Module):
    def __init__(self, channels: int, patch: int, dim: int) -> None:
        super().__init__()
        self.proj = nn.Conv2d(channels, dim, patch, stride=patch)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.proj(x).flatten(2).transpose(1, 2))


def get_inputs() -> list:
    return [torch.randn(BATCH, C, HW, HW)]


def get_init_inputs() -> list:
    return [C, PATCH, DIM]
