"""Fused ops: softmax written out (max, subtract, exp, sum, divide) over the last dim of (256 x SCALE, 1024)."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# Sizes grow with SOL_SCALE (`roofline sol --scale N`): 1 for the CPU, 64 for a large GPU.
SCALE = int(os.environ.get("SOL_SCALE", "1"))

ROWS, COLS = 256 * SCALE, 1024


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)


def get_inputs() -> list:
    return [torch.randn(ROWS, COLS)]


def get_init_inputs() -> list:
    return []
