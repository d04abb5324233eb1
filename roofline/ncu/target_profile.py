"""The program `profile --counters` runs under Nsight Compute: `python -m roofline.ncu.target_profile PLAN.json`.

PLAN.json (`write_plan`): the user's script, its arguments, and which entry of each region to profile
(`{"script": PATH, "args": [...], "entries": {"forward": 0}}`; `entries` null: the whole run). The script runs
as `python SCRIPT ARGS` would, with no roofline profile; `roofline.region(...)` tells the `EntryGate` of each
entry and exit, and the gate calls cudaProfilerStart/Stop so that ncu (`--profile-from-start off`) profiles
exactly the kernels whose innermost region is a chosen entry: the stretch the profile's join expects.
The script's own output goes to stderr: stdout is ncu's CSV.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

WHOLE_RUN = None  # `entries` of a plan for a script that marks no region: everything it runs


def write_plan(script: Path, args: list[str], entries: dict[str, int] | None, path: Path) -> None:
    """The plan for `main`: the script, its arguments, the 0-based entry of each region to profile."""
    path.write_text(json.dumps({"script": str(script), "args": list(args), "entries": entries}))


class EntryGate:
    """Profiling on while the innermost open region is one of the chosen entries (`entries`: region -> the
    0-based entry), off elsewhere; `profiler` has start() and stop() (torch.cuda.profiler in the child)."""

    def __init__(self, entries: dict[str, int], profiler: Any) -> None:
        self.entries = entries
        self.profiler = profiler
        self.seen: Counter[str] = Counter()
        self._stack: list[bool] = []
        self.on = False

    def enter(self, name: str) -> None:
        self._stack.append(self.entries.get(name) == self.seen[name])
        self.seen[name] += 1
        self._apply()

    def exit(self, name: str) -> None:
        if self._stack:
            self._stack.pop()
        self._apply()

    def _apply(self) -> None:
        want = bool(self._stack) and self._stack[-1]
        if want != self.on:
            (self.profiler.start if want else self.profiler.stop)()
            self.on = want


class _CudaProfiler:
    """cudaProfilerStart/Stop, each after the work launched so far has finished (so nothing launched outside
    the chosen stretch is counted in it, or the other way round)."""

    def start(self) -> None:
        import torch

        torch.cuda.synchronize()
        torch.cuda.profiler.start()

    def stop(self) -> None:
        import torch

        torch.cuda.synchronize()
        torch.cuda.profiler.stop()


def main(plan_path: str) -> int:
    import importlib

    from roofline.capture.script import run_as_main

    capture = importlib.import_module("roofline.capture.profile")  # the module: the package's `profile` is a function

    plan = json.loads(Path(plan_path).read_text(encoding="utf-8"))
    script, args, entries = Path(plan["script"]), plan["args"], plan["entries"]
    profiler = _CudaProfiler()
    if entries is WHOLE_RUN:
        profiler.start()
        try:
            with contextlib.redirect_stdout(sys.stderr):
                run_as_main(script, args)
        finally:
            profiler.stop()
        return 0
    gate = EntryGate(entries, profiler)
    capture.REGION_HOOKS.append(gate)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            run_as_main(script, args)
    finally:
        capture.REGION_HOOKS.remove(gate)
        if gate.on:
            profiler.stop()
    missing = [f"{r} (entry {i + 1}, entered {gate.seen[r]} times)" for r, i in entries.items() if gate.seen[r] <= i]
    if missing:
        sys.stderr.write(f"roofline error: under ncu the script did not reach {', '.join(missing)}\n")
        return 3
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: python -m roofline.ncu.target_profile PLAN.json\n")
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
