"""Small network: a three-layer MLP, 1024 -> 2048 -> 2048 -> 1024 with ReLU, 16 x SCALE rows."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# Sizes grow with SOL_SCALE (`roofline sol --scale N`): 1 for the CPU, 64 for a large GPU.
SCALE = int(os.environ.get("SOL_SCALE", "1"))

ROWS, DIM, HIDDEN = 16 * SCALE, 1024, 2048


class Model(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def get_inputs() -> list:
    return [torch.randn(ROWS, DIM)]


def get_init_inputs() -> list:
    return [DIM, HIDDEN]
