"""`make models` keeps the user's torch and gets a torchvision that loads beside it (issue 30). Read from
`make -n` (what make would run), not run: the install needs a network and minutes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_models_pins_torch_uses_the_cpu_index_for_a_cpu_torch_and_checks_the_import() -> None:
    out = subprocess.run(["make", "-n", "models", "VENV=/nonexistent-venv"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    install = next(line for line in out.splitlines() if "pip install -q -e '.[models]'" in line)
    assert "-c /nonexistent-venv/torch-constraint.txt" in install  # torch pinned to the version installed
    # a +cpu torch adds PyTorch's CPU index (PyPI's Linux torchvision is a CUDA build: its extension does not
    # load beside a CPU torch, seen on this project's CPU machine with torchvision 0.28.0 and torch 2.13.0+cpu)
    assert "grep -q '+cpu' /nonexistent-venv/torch-constraint.txt" in out
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in out
    assert 'import torchvision.ops, transformers, timm' in out  # and the result is checked, one line if not
