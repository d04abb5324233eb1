"""Attack: patch the harness's own clock binding (`_clock_ns` of roofline.measuring.untrusted_child, both the
child's __main__ and the module by name), so the harness reads a clock 1000x slow. Problem:
tests/data/sol_redteam/problem.py. Caught: the harness times with the clock its instance bound when it was built,
and any name rebound or added in its own modules is `refused`, naming it."""

import sys
import time

import torch
import torch.nn as nn

_real = time.perf_counter_ns
_start = _real()


def _slow() -> int:
    return _start + (_real() - _start) // 1000


for name in ("__main__", "roofline.measuring.untrusted_child"):
    module = sys.modules.get(name)
    if module is not None and hasattr(module, "_clock_ns"):
        module._clock_ns = _slow


class ModelNew(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.fc = nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))
