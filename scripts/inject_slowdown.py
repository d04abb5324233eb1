"""`roofline run` with a known regression injected: one suite entry's kernel followed by a spin of a given
fraction of its own time, so that a check harness sees whether `roofline check` catches a real slowdown of that
size (scripts/gpu_check.sh's `aa` and `check` stages, docs/ci.md's protocol). It is test-only, so it lives here
and not in the product: the product's kernel builder is wrapped from outside, as tests/test_cli_commands.py
wraps it with `slowing`.

    python scripts/inject_slowdown.py ENTRY=FRACTION run SUITE [run's options]

ENTRY is the entry's number in the suite (from 1), FRACTION the extra time (0.05: 5% slower). The runs of
`--repeat` (each a fresh process) get the same slowdown; the per-GPU runs of `--devices` do not. A record of
the slowed entry says so in its `impl`.

On a GPU the spin is a separate `torch.cuda._sleep` kernel after the operator's, sized from the operator's mean
event time and the spin's own rate measured beside it: read the injected entry's measured change rather than
assuming FRACTION. On the CPU it is a `time.sleep` after each call.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

# Spin cycles timed once to learn the spin's rate (seconds per cycle): a few hundred microseconds at GPU
# clocks, far above the event timer's resolution.
RATE_PROBE_CYCLES = 1_000_000
# Calls before the estimate of the kernel's own time: the first ones load kernels and plans.
WARMUP_CALLS = 3
# Event-timed calls the kernel's time and the spin's rate are each the mean of.
ESTIMATE_CALLS = 5


def slowed(fn: Callable[[], Any], device: str, fraction: float) -> Callable[[], Any]:
    """`fn` followed by a spin of `fraction` x its own time on `device`."""
    if device.startswith("cuda"):
        import torch

        from roofline.measuring.cuda_events import mean_event_time

        for _ in range(WARMUP_CALLS):
            fn()
        torch.cuda.synchronize()
        per_cycle = mean_event_time(lambda: torch.cuda._sleep(RATE_PROBE_CYCLES), ESTIMATE_CALLS) / RATE_PROBE_CYCLES
        cycles = int(fraction * mean_event_time(fn, ESTIMATE_CALLS) / per_cycle)
        return lambda: (fn(), torch.cuda._sleep(cycles))
    import time

    t0 = time.perf_counter()
    fn()
    extra = fraction * (time.perf_counter() - t0)
    return lambda: (fn(), time.sleep(extra))


def slowing(build: Callable[..., Any], entry: int, fraction: float) -> Callable[..., Any]:
    """`build` (`roofline.measuring.kernels.build`) with the kernel of its `entry`-th call slowed by `fraction`:
    a suite's run builds one kernel per entry, in the suite's order."""
    calls = 0

    def slowed_build(op: Any, dtype: Any, device: str) -> Any:
        nonlocal calls
        built = build(op, dtype, device)
        calls += 1
        if calls == entry:
            built.fn = slowed(built.fn, device, fraction)
            built.impl += f" + injected {fraction:.0%} slowdown (test only)"
        return built

    return slowed_build


def parse(text: str) -> tuple[int, float]:
    """ENTRY=FRACTION as (entry, fraction)."""
    try:
        entry, fraction = text.split("=")
        return int(entry), float(fraction)
    except ValueError:
        raise SystemExit(f"{text!r}: give ENTRY=FRACTION, e.g. 2=0.07 (see {__file__})") from None


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[1] != "run":
        raise SystemExit(__doc__)
    entry, fraction = parse(argv[0])
    from roofline.cli import run_many as run_command
    from roofline.cli.app import exit_now
    from roofline.cli.app import main as roofline
    from roofline.measuring import kernels

    kernels.build = slowing(kernels.build, entry, fraction)
    child = run_command._run_child

    def slowed_child(cmd: list[str]) -> int:  # a --repeat run: `python -m roofline run ...` with this slowdown
        assert cmd[1:3] == ["-m", "roofline"], cmd
        return child([cmd[0], __file__, argv[0], *cmd[3:]])

    run_command._run_child = slowed_child
    exit_now(roofline(argv[1:]))


if __name__ == "__main__":
    main(sys.argv[1:])
