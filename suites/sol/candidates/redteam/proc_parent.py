"""Attack: reach the roofline process through /proc/<parent>: write a forged results document into its working
directory (/proc/<ppid>/cwd) and a forged line onto its standard output (/proc/<ppid>/fd/1). Here it raises when
either opens, so that a way in is loud. Problem: tests/data/sol_redteam/problem.py. Caught: the roofline process
is not dumpable while a candidate runs (PR_SET_DUMPABLE 0), so a process of the same user cannot open its /proc
entries; a process with CAP_SYS_PTRACE (root) can, which the sandbox does not cover (docs/sol.md)."""

import os

import torch
import torch.nn as nn

_parent = os.getppid()
opened = []
for path, mode in ((f"/proc/{_parent}/cwd/forged-by-candidate.json", "w"), (f"/proc/{_parent}/fd/1", "a")):
    try:
        with open(path, mode) as f:
            opened.append(path)
        if mode == "w":
            os.unlink(path)
    except OSError:
        pass
if opened:
    raise RuntimeError(f"opened {', '.join(opened)} for writing")


class ModelNew(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.fc = nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))
