"""Candidate for matmul_sum.py: (A @ B).sum(dim=1) == A @ B.sum(dim=1), an algebraic shortcut with N times fewer
FLOPs. Right, and faster than the reference's FLOPs allow at peak: `roofline sol --time` refuses the time as
impossible and says that the problem needs fewer FLOPs than the reference's ops count."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b.sum(dim=1)
