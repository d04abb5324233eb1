"""The program `profile --counters` runs under Nsight Compute: `python -m roofline.ncu.target_profile PLAN.json`.

PLAN.json (`write_plan`): the user's script, its arguments, and which entry of each region to profile
(`{"script": PATH, "args": [...], "entries": {"forward": 0}}`; `entries` null: the whole run). The script runs
as `python SCRIPT ARGS` would, with no roofline profile; `roofline.region(...)` tells the `EntryGate` of each
entry and exit, and the gate starts and stops ncu's profiled range so that it holds exactly the kernels whose
innermost region is a chosen entry: the stretch the profile's join expects (`ncu.join`). What the program
shares with `ncu.target_ops` (the plan file, the range, the `__main__`, where the script's prints go) is
`ncu.target`'s.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from roofline.ncu.target import CudaProfiler, Profiler, Program, load_plan, profiled, run_main, save_plan

# `--nvtx`: ncu records the NVTX ranges, so the CSV names each kernel's region (`ncu.read_csv.nvtx_range`).
PROGRAM = Program("roofline.ncu.target_profile", ncu_options=("--nvtx",))
WHOLE_RUN = None  # `entries` of a plan for a script that marks no region: everything it runs


def write_plan(script: Path, args: list[str], entries: dict[str, int] | None, path: Path) -> None:
    """The plan of `main`: the script, its arguments, the 0-based entry of each region to profile."""
    save_plan({"script": str(script), "args": list(args), "entries": entries}, path)


class EntryGate:
    """The profiled range on while the innermost open region is one of the chosen entries (`entries`: region
    -> the 0-based entry), off elsewhere."""

    def __init__(self, entries: dict[str, int], profiler: Profiler) -> None:
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

    def close(self) -> None:
        """The range stopped if the script ended (or failed) inside a chosen entry."""
        self._stack.clear()
        self._apply()

    def _apply(self) -> None:
        want = bool(self._stack) and self._stack[-1]
        if want != self.on:
            (self.profiler.start if want else self.profiler.stop)()
            self.on = want


def main(plan_path: str, profiler: Profiler | None = None) -> int:
    """Run the plan's script with its chosen entries (or the whole run) profiled; 3 when the script did not
    reach a chosen entry (said on stderr)."""
    import importlib

    from roofline.capture.script import run_as_main

    capture = importlib.import_module("roofline.capture.profile")  # the module: the package's `profile` is a function

    plan = load_plan(plan_path)
    script, args, entries = Path(plan["script"]), plan["args"], plan["entries"]
    profiler = profiler or CudaProfiler()
    if entries is WHOLE_RUN:
        with profiled(profiler):
            run_as_main(script, args)
        return 0
    gate = EntryGate(entries, profiler)
    capture.REGION_HOOKS.append(gate)
    try:
        run_as_main(script, args)
    finally:
        capture.REGION_HOOKS.remove(gate)
        gate.close()
    missing = [f"{r} (entry {i + 1}, entered {gate.seen[r]} times)" for r, i in entries.items() if gate.seen[r] <= i]
    if missing:
        sys.stderr.write(f"roofline error: under ncu the script did not reach {', '.join(missing)}\n")
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(run_main(PROGRAM, main, sys.argv))
