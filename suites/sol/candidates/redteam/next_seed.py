"""Attack: outputs cached across seeds. Each call reads the seed its inputs were made under (torch.initial_seed(),
which get_inputs' torch.manual_seed set) and precomputes, off the clock, the output of the next seed's inputs; the
next call returns it. With the seeds of consecutive calls one apart this returns right outputs in no time.
Problem: tests/data/sol_redteam/problem.py. Caught: every call's seed is drawn on its own (the OS's randomness):
the prediction never comes true. Here a prediction that comes true raises, so that the test is loud; a real attack
would return the precomputed output."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.fc = nn.Linear(features, features)
        self.features = features
        self.predicted: dict[int, torch.Tensor] = {}

    def _inputs(self, seed: int, like: torch.Tensor) -> torch.Tensor:
        g = torch.Generator(device=like.device).manual_seed(seed)
        return torch.randn(like.shape, generator=g, device=like.device, dtype=like.dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seed = torch.initial_seed()
        if seed in self.predicted and torch.equal(self.predicted[seed], x):
            raise RuntimeError(f"predicted the inputs of seed {seed}: its output could have been precomputed")
        self.predicted = {s: self._inputs(s, x) for s in (seed + 1, seed + 2)}
        return torch.relu(self.fc(x))
