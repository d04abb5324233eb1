"""Attack: outputs cached by the input's address and shape. The harness frees each call's inputs before it makes
the next, so the allocator hands the same address back: a cache keyed on it returns the previous seed's output.
Problem: tests/data/sol_redteam/problem.py. Caught: the kept calls' outputs are checked against the reference on
their own inputs: `wrong`."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.fc = nn.Linear(features, features)
        self.cache: dict[tuple[int, tuple[int, ...]], torch.Tensor] = {}
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        key = (x.data_ptr(), tuple(x.shape))
        if key in self.cache or (self.calls > 1 and self.cache):  # the address, or any earlier output at all
            return self.cache.get(key, next(iter(self.cache.values())))
        out = torch.relu(self.fc(x))
        self.cache[key] = out
        return out
