"""Fused ops: layer norm written out (mean, variance, normalise, scale and shift), 1024 features."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# Sizes grow with SOL_SCALE (`roofline sol --scale N`): 1 for the CPU, 64 for a large GPU.
SCALE = int(os.environ.get("SOL_SCALE", "1"))

ROWS, COLS = 256 * SCALE, 1024


class Model(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + 1e-5) * self.weight + self.bias


def get_inputs() -> list:
    return [torch.randn(ROWS, COLS)]


def get_init_inputs() -> list:
    return [COLS]
