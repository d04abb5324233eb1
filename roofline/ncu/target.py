"""What the two programs Nsight Compute runs share (`target_ops` for `analyze/run --counters`, `target_profile`
for `profile --counters`): how ncu starts one (`Program`), its plan file, its profiled range, its `__main__`.

Each program is a module run as `python -m MODULE PLAN.json` in ncu's child process, with ncu's
`--profile-from-start off`: only what runs between cudaProfilerStart and cudaProfilerStop is profiled
(`profiled`). ncu writes its CSV on the same stdout, so the program's own prints go to stderr (`run_main`).
Nothing here imports torch until a range starts.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True)
class Program:
    """One program ncu runs: its module (run with `python -m`) and the ncu options it needs beside the common
    ones (`ncu.run.NCU_OPTIONS`)."""

    module: str
    ncu_options: tuple[str, ...] = ()


class Profiler(Protocol):
    """What starts and stops ncu's profiled range (`CudaProfiler`; tests pass a recorder)."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


class CudaProfiler:
    """cudaProfilerStart/Stop, each after the work launched so far has finished (so nothing launched outside
    the profiled range is counted in it, or the other way round)."""

    def start(self) -> None:
        import torch

        torch.cuda.synchronize()
        torch.cuda.profiler.start()

    def stop(self) -> None:
        import torch

        torch.cuda.synchronize()
        torch.cuda.profiler.stop()


@contextlib.contextmanager
def profiled(profiler: Profiler) -> Iterator[None]:
    """The body is ncu's profiled range: started on entry, stopped on the way out (an error included)."""
    profiler.start()
    try:
        yield
    finally:
        profiler.stop()


def save_plan(plan: dict[str, Any], path: Path) -> None:
    """A program's plan as the JSON file it reads (`load_plan`); each program's `write_plan` says what its plan
    holds."""
    path.write_text(json.dumps(plan))


def load_plan(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The plan `save_plan` wrote."""
    plan: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    return plan


def run_main(program: Program, main: Callable[[str], int], argv: Sequence[str]) -> int:
    """A program's `__main__`: `python -m MODULE PLAN.json` (`argv` as sys.argv) runs `main(PLAN.json)` with
    Python's stdout sent to stderr (stdout carries ncu's CSV) and gives its exit status; another command line
    is a usage line and 2."""
    if len(argv) != 2:
        sys.stderr.write(f"usage: python -m {program.module} PLAN.json\n")
        return 2
    with contextlib.redirect_stdout(sys.stderr):
        return main(argv[1])
