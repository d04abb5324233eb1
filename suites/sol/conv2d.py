"""Single op: 3x3 convolution, 16 -> 32 channels, padding 1, on (2 x SCALE, 16, 32, 32)."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# Sizes grow with SOL_SCALE (`roofline sol --scale N`): 1 for the CPU, 64 for a large GPU.
SCALE = int(os.environ.get("SOL_SCALE", "1"))

BATCH, C_IN, C_OUT, HW = 2 * SCALE, 16, 32, 32


class Model(nn.Module):
    def __init__(self, c_in: int, c_out: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs() -> list:
    return [torch.randn(BATCH, C_IN, HW, HW)]


def get_init_inputs() -> list:
    return [C_IN, C_OUT]
