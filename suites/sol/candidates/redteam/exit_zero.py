"""Attack: end the child with exit status 0 in the middle of the timing (os._exit(0) in the third call), as if
it had finished. Problem: tests/data/sol_redteam/problem.py. Caught: only the harness's result message counts:
a child that exits without it `failed`, whatever its status."""

import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.fc = nn.Linear(features, features)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls == 3:
            os._exit(0)
        return torch.relu(self.fc(x))
