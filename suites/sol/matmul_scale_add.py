"""Fused pair: (A @ B) * 0.5 + C, square (64 x SCALE)^3."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# Sizes grow with SOL_SCALE (`roofline sol --scale N`): 1 for the CPU, 64 for a large GPU.
SCALE = int(os.environ.get("SOL_SCALE", "1"))

N = 64 * SCALE


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return (a @ b) * 0.5 + c


def get_inputs() -> list:
    return [torch.randn(N, N), torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs() -> list:
    return []
