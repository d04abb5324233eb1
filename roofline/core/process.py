"""Child processes of this tool (`run --repeat`, `run --devices`, the Nsight Compute targets): they run
`python -m roofline...` and must import the same roofline as this process, installed or not; and how this process
ends on SIGTERM (as on Ctrl-C: `stop_on_sigterm`)."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator


def child_env() -> dict[str, str]:
    """This process's environment with its import path as PYTHONPATH: a child started from another folder (a
    source tree that is not pip-installed, run from its root) still finds this roofline and its packages."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}


class Terminated(KeyboardInterrupt):
    """SIGTERM (`kill PID`, a CI job cancelled, a batch system's time limit), raised where the signal lands as
    Ctrl-C raises KeyboardInterrupt: every `except KeyboardInterrupt` and `finally` of the command runs for it too,
    so temporary files are removed and a sweep keeps its points for both."""


class Stop:
    """What `stop_on_sigterm` saw: `signal`, the number of the SIGTERM that stopped the command, else None."""

    def __init__(self) -> None:
        self.signal: int | None = None


@contextlib.contextmanager
def stop_on_sigterm() -> Iterator[Stop]:
    """For the block, SIGTERM raises `Terminated` (once: a second SIGTERM while the command cleans up is ignored,
    so a sweep's last write completes); the handler before it is put back after. Only the main thread can take a
    signal: elsewhere (a command run from a thread) nothing changes."""
    import signal

    stop = Stop()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def terminate(signum: int, frame: object) -> None:
        if stop.signal is None:
            stop.signal = signum
            raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGTERM, previous)
