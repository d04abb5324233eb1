"""Child processes of this tool (`run --repeat`, `run --devices`, the Nsight Compute targets): they run
`python -m roofline...` and must import the same roofline as this process, installed or not."""

from __future__ import annotations

import os
import sys


def child_env() -> dict[str, str]:
    """This process's environment with its import path as PYTHONPATH: a child started from another folder (a
    source tree that is not pip-installed, run from its root) still finds this roofline and its packages."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
