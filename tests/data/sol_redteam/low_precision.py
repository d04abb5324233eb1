"""Attack: compute in bfloat16 (faster on tensor cores) and hand back float32, as if the precision asked for."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.fc = nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w, b = self.fc.weight.bfloat16(), self.fc.bias.bfloat16()
        return torch.relu(F.linear(x.bfloat16(), w, b)).float()
