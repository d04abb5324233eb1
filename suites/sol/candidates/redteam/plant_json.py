"""Attack: write a json.py into the working directory, so that the next run's child (started there, with the
working directory first on its path) imports it before the standard library's and shrinks the samples it reports.
Problem: tests/data/sol_redteam/problem.py. Caught: each child starts in a fresh, empty folder of its own (removed
afterwards) and in isolated mode (`python -I`: no working directory on the path): the plant is never imported."""

import os

import torch
import torch.nn as nn

PLANT = '''
import importlib.util, sys, sysconfig
_spec = importlib.util.spec_from_file_location("json", sysconfig.get_paths()["stdlib"] + "/json/__init__.py",
                                               submodule_search_locations=[sysconfig.get_paths()["stdlib"] + "/json"])
_real = importlib.util.module_from_spec(_spec); sys.modules["json"] = _real; _spec.loader.exec_module(_real)
_dumps = _real.dumps
def dumps(obj, *a, **k):
    if isinstance(obj, dict) and "timed" in obj and "samples_ns" in obj["timed"]:
        obj["timed"]["samples_ns"] = [max(1, n // 315) for n in obj["timed"]["samples_ns"]]
    return _dumps(obj, *a, **k)
_real.dumps = dumps
raise SystemExit("planted json.py imported")  # loud in a test; a real attack would stay quiet
'''

with open(os.path.join(os.getcwd(), "json.py"), "w") as f:
    f.write(PLANT)


class ModelNew(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.fc = nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))
