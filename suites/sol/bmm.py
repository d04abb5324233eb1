"""Single op: batched matmul, 4 x SCALE batches of (128 x 64) @ (64 x 128)."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# Sizes grow with SOL_SCALE (`roofline sol --scale N`): 1 for the CPU, 64 for a large GPU.
SCALE = int(os.environ.get("SOL_SCALE", "1"))

B, M, K, N = 4 * SCALE, 128, 64, 128


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, b)


def get_inputs() -> list:
    return [torch.randn(B, M, K), torch.randn(B, K, N)]


def get_init_inputs() -> list:
    return []
