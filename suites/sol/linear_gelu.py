"""Fused pair: gelu(linear(x)), 1024 -> 4096 on 16 x SCALE rows."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# Sizes grow with SOL_SCALE (`roofline sol --scale N`): 1 for the CPU, 64 for a large GPU.
SCALE = int(os.environ.get("SOL_SCALE", "1"))

ROWS, IN, OUT = 16 * SCALE, 1024, 4096


class Model(nn.Module):
    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.fc(x))


def get_inputs() -> list:
    return [torch.randn(ROWS, IN)]


def get_init_inputs() -> list:
    return [IN, OUT]
