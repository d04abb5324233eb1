"""Attack: read a secret out of the environment (any variable named like a token, key or password) and carry it
out. Here it raises with what it found, so that a leak is loud. Problem: tests/data/sol_redteam/problem.py.
Caught: the child's environment is an allow-list of what CUDA and torch need (measuring/sandbox.py); names holding
TOKEN, SECRET, KEY, PASSWORD, CREDENTIAL or AUTH are dropped even there: nothing to find, the verdict `ok`."""

import os

import torch
import torch.nn as nn

WORDS = ("TOKEN", "SECRET", "KEY", "PASSWORD", "CREDENTIAL", "AUTH")
found = sorted(k for k in os.environ if any(w in k.upper() for w in WORDS))
if found:
    raise RuntimeError(f"read {', '.join(found)} from the environment")


class ModelNew(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.fc = nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))
