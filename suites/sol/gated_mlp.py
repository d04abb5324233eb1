"""Small network: a SwiGLU MLP (w2(silu(w1 x) * w3 x)) without biases, 512 -> 1408 -> 512, 16 x SCALE rows."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# Sizes grow with SOL_SCALE (`roofline sol --scale N`): 1 for the CPU, 64 for a large GPU.
SCALE = int(os.environ.get("SOL_SCALE", "1"))

ROWS, DIM, HIDDEN = 16 * SCALE, 512, 1408


class Model(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def get_inputs() -> list:
    return [torch.randn(ROWS, DIM)]


def get_init_inputs() -> list:
    return [DIM, HIDDEN]
