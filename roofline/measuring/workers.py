"""Tasks run one at a time in a worker process (`roofline sol DIR --time`: one problem each), so that a task that
crashes the process, runs out of memory, poisons the CUDA context or hangs is that task's failure, and the tasks
after it go on in a fresh worker.

A worker serves tasks until one fails; a failed task's worker is ended (with every process it started: its own
session, measuring/sandbox.py's end_tree) and the next task gets a new one. Between tasks a worker frees what
the task left (garbage collection, the CUDA caching allocator's blocks).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# How long to wait for a worker that was asked to stop before it is killed.
STOP_S = 5.0


@dataclass
class Outcome:
    """A task's value, or why there is none (`failed`: one line)."""

    value: Any = None
    failed: str | None = None


class _Report:
    """A Reporter (core.progress) that sends each line to the parent."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def status(self, text: str) -> None:
        self._conn.send(("status", text))

    def notice(self, text: str) -> None:
        self._conn.send(("notice", text))

    def long_run(self, seconds: float, detail: str) -> None:
        self._conn.send(("notice", detail))


def _free() -> None:
    import gc
    import sys

    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def _serve(conn: Any, fn: Callable[[Any, Any], tuple[Any, bool]]) -> None:
    """The worker: its own session (so that its tree can be ended as one), then `fn(task, reporter)` per task:
    its value, and whether this process may serve the next task (False: a CUDA context left unusable)."""
    os.setsid()
    report = _Report(conn)
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        try:
            value = fn(task, report)
        except BaseException as exc:  # the task's failure, whatever it is, goes back as one line
            text = str(exc).strip()
            conn.send(("failed", f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"))
            return  # a task that raised may have left the process unusable (a CUDA error): a fresh worker next
        value, healthy = value
        conn.send(("done", value))
        if not healthy:
            return
        _free()


def _died(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"the process running it died of {signal.Signals(-code).name}"
        except ValueError:
            return f"the process running it died of signal {-code}"
    return f"the process running it exited with status {code} without an answer"


class Pool:
    """One worker at a time (spawned: no CUDA state inherited), replaced after a failed task."""

    def __init__(self, fn: Callable[[Any, Any], tuple[Any, bool]], timeout_s: float) -> None:
        import multiprocessing

        self._ctx = multiprocessing.get_context("spawn")
        self._fn, self._timeout = fn, timeout_s
        self._proc: Any = None
        self._conn: Any = None

    def _start(self) -> None:
        from roofline.measuring import sandbox

        sandbox.subreaper()  # a worker's orphans (its candidate's child when it is killed) come back here
        self._before = sandbox.children_now()
        self._conn, theirs = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_serve, args=(theirs, self._fn), daemon=True)
        self._proc.start()
        theirs.close()

    def _end(self) -> None:
        from roofline.measuring import sandbox

        if self._proc is None:
            return
        sandbox.end_tree(self._proc.pid, self._before)
        self._proc.join(STOP_S)
        self._conn.close()
        self._proc = self._conn = None

    def run(self, task: Any, progress: Any) -> Outcome:
        """`task` in the worker; its status lines passed to `progress`."""
        import time

        if self._proc is None or not self._proc.is_alive():
            self._end()
            self._start()
        self._conn.send(task)
        deadline = time.monotonic() + self._timeout
        while True:
            left = deadline - time.monotonic()
            try:
                ready = left > 0 and self._conn.poll(left)
                message = self._conn.recv() if ready else None
            except (EOFError, OSError):
                message, ready = None, True
            if message is None:
                self._proc.join(0.5 if ready else 0)
                code = self._proc.exitcode
                self._end()
                return Outcome(failed=_died(code) if ready else f"no answer within {self._timeout:.0f} s (stopped)")
            kind, body = message
            if kind == "status":
                progress.status(body)
            elif kind == "notice":
                progress.notice(body)
            elif kind == "done":
                return Outcome(value=body)
            else:
                self._end()
                return Outcome(failed=str(body))

    def close(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            try:
                self._conn.send(None)
            except OSError:
                pass
            self._proc.join(STOP_S)
        self._end()
