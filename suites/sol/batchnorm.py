"""Single op: BatchNorm2d in eval mode (running statistics) on (2 x SCALE, 32, 32, 32)."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# Sizes grow with SOL_SCALE (`roofline sol --scale N`): 1 for the CPU, 64 for a large GPU.
SCALE = int(os.environ.get("SOL_SCALE", "1"))

BATCH, C, HW = 2 * SCALE, 32, 32


class Model(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


def get_inputs() -> list:
    return [torch.randn(BATCH, C, HW, HW)]


def get_init_inputs() -> list:
    return [C]
