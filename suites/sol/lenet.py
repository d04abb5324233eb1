"""Small network: LeNet-5 on 32x32 grey images, 4 x SCALE of them."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# Sizes grow with SOL_SCALE (`roofline sol --scale N`): 1 for the CPU, 64 for a large GPU.
SCALE = int(os.environ.get("SOL_SCALE", "1"))

BATCH = 4 * SCALE


class Model(nn.Module):
    def __init__(self, classes: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = F.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


def get_inputs() -> list:
    return [torch.randn(BATCH, 1, 32, 32)]


def get_init_inputs() -> list:
    return [10]
