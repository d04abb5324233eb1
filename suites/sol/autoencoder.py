"""Small network: a dense autoencoder 784 -> 256 -> 64 -> 256 -> 784, ReLU inside, sigmoid out."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# Sizes grow with SOL_SCALE (`roofline sol --scale N`): 1 for the CPU, 64 for a large GPU.
SCALE = int(os.environ.get("SOL_SCALE", "1"))

ROWS = 16 * SCALE


class Model(nn.Module):
    def __init__(self, dim: int, hidden: int, code: int) -> None:
        super().__init__()
        self.encode = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, code), nn.ReLU())
        self.decode = nn.Sequential(nn.Linear(code, hidden), nn.ReLU(), nn.Linear(hidden, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.decode(self.encode(x)))


def get_inputs() -> list:
    return [torch.randn(ROWS, 784)]


def get_init_inputs() -> list:
    return [784, 256, 64]
