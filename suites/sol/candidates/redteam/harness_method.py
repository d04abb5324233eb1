"""Attack: replace a method of the harness's class (Harness._timed_cpu, Harness._timed_cuda) with one that
reports samples 100x shorter. Problem: tests/data/sol_redteam/problem.py. Caught: the harness's classes are
guarded as its modules are: `refused`, naming the method."""

import sys

import torch
import torch.nn as nn

for name in ("__main__", "roofline.measuring.untrusted_child"):
    harness = getattr(sys.modules.get(name), "Harness", None)
    if harness is None:
        continue
    real_cpu = harness._timed_cpu

    def _fast(self, *args, _real=real_cpu):  # type: ignore[no-untyped-def]
        out = _real(self, *args)
        out["samples_ns"] = [max(1, n // 100) for n in out["samples_ns"]]
        return out

    harness._timed_cpu = _fast


class ModelNew(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.fc = nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))
