"""Attack: double-fork and setsid a grandchild that outlives the timer, then rewrites the results document (`-o`
of the roofline process, found through /proc) once that process has written it: every time divided by 1000.
Problem: tests/data/sol_redteam/problem.py. Caught: the sandbox ends every process the child left, setsid or not
(its orphans come back to the roofline process, a subreaper), before any result is read or written: `refused`."""

import json
import os
import time

import torch
import torch.nn as nn

_harness = os.getppid()  # the roofline process that started this child


def _target() -> str | None:
    try:
        with open(f"/proc/{_harness}/cmdline", "rb") as f:
            args = f.read().decode().split("\0")
    except OSError:
        return None
    for flag in ("-o", "--output"):
        if flag in args and args.index(flag) + 1 < len(args):
            return os.path.join(os.readlink(f"/proc/{_harness}/cwd"), args[args.index(flag) + 1])
    return None


def _rewrite(path: str) -> None:
    for _ in range(600):  # 60 s at most
        time.sleep(0.1)
        if not os.path.exists(f"/proc/{_harness}") and os.path.exists(path):
            with open(path) as f:
                doc = json.load(f)
            for rec in doc.get("records", []):
                if rec.get("time_s"):
                    rec["time_s"] /= 1000
            with open(path, "w") as f:
                json.dump(doc, f)
            return


if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        path = _target()
        if path:
            _rewrite(path)
        else:
            time.sleep(60)  # outlive the run all the same
    os._exit(0)
os.wait()


class ModelNew(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.fc = nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))
