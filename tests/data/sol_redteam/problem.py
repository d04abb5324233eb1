"""The red team's problem: relu(linear(x)), 1024 -> 1024 features on 16 x SCALE rows (SOL_SCALE, as suites/sol; the
GPU tests take 256: 4096 rows, a GEMM of ~0.1 ms, longer than the host's time from one launch to the next)."""

import os

import torch
import torch.nn as nn

SCALE = int(os.environ.get("SOL_SCALE", "1"))
ROWS, FEATURES = 16 * SCALE, 1024


class Model(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.fc = nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


def get_inputs() -> list:
    return [torch.randn(ROWS, FEATURES)]


def get_init_inputs() -> list:
    return [FEATURES]
