"""The command line's progress: a transient status line on stderr (rich), the `Reporter`
(roofline.core.progress) that long steps report to."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from roofline.core.progress import reporting

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

# The line redraws itself this often while a step runs (rich's refresh thread), so that its elapsed clock
# moves during a step that reports nothing (building 1.6 GB of inputs took 35 s at "0:00:00"). The clock
# shows whole seconds, so once a second is enough; a redraw costs the host ~1 ms (REDRAW_S's note), 0.1% of
# one core at this rate, where rich's default of 10 a second would take 1% from torch's threads.
REFRESH_PER_S = 1.0
# Where stderr is no terminal (a CI log, a file) nothing is redrawn: progress is plain lines (`LogLines`), none
# before the command has run this long (a quick command's log stays as it was: the README's commands, the
# tests' CLI runs; a `sol --time` of a folder sat 74 s in a CI log without a line) ...
LOG_AFTER_S = 5.0
# ... then a new step's (a suite's entry) at once, but at most one a second (a suite of 500 quick entries is not
# 500 lines) ...
LOG_STEP_EVERY_S = 1.0
# ... and within a step, the status at most this often, whether it changed or not (a sol folder's problems and a
# calibration report statuses, not steps; a profile's analysis and a long first call report one status and
# nothing for a minute: a line every 10 s, never one per sample).
LOG_EVERY_S = 10.0
# How often the log's own thread looks whether a line is due (it writes one only at LOG_EVERY_S).
LOG_POLL_S = 1.0


class StatusLine:
    """The command line's Reporter: one transient line on stderr (rich), redrawn when a step reports and
    REFRESH_PER_S times a second on its own (its elapsed clock moves through a long step), with an optional
    bar of `total` steps (a suite's entries); notes print above it and stay. Nothing is drawn, and rich's
    progress module is not imported, until a step first reports. When stderr is not a terminal, plain
    `progress:` lines instead (LOG_AFTER_S, LOG_EVERY_S), never a redrawn bar. While it is open, notes from code
    handed no Reporter (`core.progress.tell`: the calibration cache) are its notices.

    `shorter` is what a long-run note suggests (the command's own options); `clock` times the log's lines."""

    def __init__(self, console: Console | None = None, total: int | None = None,
                 shorter: str = "a smaller shape is quicker", clock: Callable[[], float] = time.monotonic) -> None:
        self._console, self._total, self._shorter, self._clock = console, total, shorter, clock
        self._bar: Progress | None = None
        self._log: LogLines | None = None
        self._head, self._status, self._done = "", "", 0
        self._said: set[str] = set()
        self._start = clock()
        self._open = ExitStack()

    def __enter__(self) -> StatusLine:
        self._open.enter_context(reporting(self))
        return self

    def __exit__(self, *exc: object) -> None:
        self._open.close()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def _live(self) -> Progress:
        if self._bar is None:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
            from rich.table import Column

            # folded, not cut: a first run's "measuring this CPU's roofline (once, then cached): CPU fp32
            # matmul 1024^3 (round 1 of up to 4)" is 95 characters, cut at 80 with an ellipsis
            columns: list[Any] = [TextColumn("{task.description}", table_column=Column(overflow="fold"))]
            if self._total is not None:
                columns += [BarColumn(), MofNCompleteColumn()]
            self._bar = Progress(*columns, TimeElapsedColumn(), console=self._stderr(), transient=True,
                                 refresh_per_second=REFRESH_PER_S)
            self._bar.add_task("", total=self._total)
            self._bar.start()
        return self._bar

    def _stderr(self) -> Console:
        if self._console is None:
            from roofline.report.text import console

            self._console = console(stderr=True)
        return self._console

    def _draw(self, new_step: bool = False) -> None:
        text = ": ".join(t for t in (self._head, self._status) if t)
        if not self._stderr().is_terminal:  # a pipe or a file keeps no transient line (rich would leave a
            if self._log is None:           # blank one): plain lines
                self._log = LogLines(self._stderr(), self._start, self._clock)
            self._log.report(f"{self._done + 1}/{self._total} {text}" if self._total else text, new_step)
            return
        bar = self._live()
        bar.update(bar.task_ids[0], description=text, completed=self._done)
        bar.refresh()

    def step(self, done: int, head: str) -> None:
        """A new step of the bar (`done` finished before it), named `head`; clears the status."""
        self._head, self._status, self._done = head, "", done
        self._draw(new_step=True)

    def status(self, text: str) -> None:
        self._status = text
        self._draw()

    def notice(self, text: str) -> None:
        if text not in self._said:
            self._said.add(text)
            from rich.markup import escape

            # one line however long, as `cli.common.note` prints (the terminal wraps it; a path stays whole)
            self._stderr().print(f"[yellow]note:[/yellow] {escape(text)}", highlight=False, soft_wrap=True)

    def long_run(self, seconds: float, detail: str) -> None:
        self.notice(f"timing this takes {detail}; {self._shorter}")


class LogLines:
    """A status line's progress where stderr is not a terminal: plain `progress:` lines, one line each however
    long (a CI log does not wrap), with the time since the status line opened; none in its first LOG_AFTER_S, a
    new step's line at once (at most one every LOG_STEP_EVERY_S), and the status under way at most every
    LOG_EVERY_S, said again by its own thread (a daemon: LOG_POLL_S) while a long step reports nothing."""

    def __init__(self, console: Console, start: float, clock: Callable[[], float]) -> None:
        self._console, self._start, self._clock = console, start, clock
        self._text, self._logged, self._lock = "", float("-inf"), threading.Lock()
        self._due_s = LOG_EVERY_S  # the wait before the next line: LOG_STEP_EVERY_S while a new step is unsaid
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._heartbeat, name="roofline-progress-log", daemon=True)
        self._thread.start()

    def report(self, text: str, new_step: bool = False) -> None:
        """The status is `text` now; a line when one is due."""
        with self._lock:
            self._text = text
            if new_step:
                self._due_s = LOG_STEP_EVERY_S
            self._write()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()

    def _heartbeat(self) -> None:
        while not self._stop.wait(LOG_POLL_S):
            with self._lock:
                self._write()

    def _write(self) -> None:
        """The line, if there is a status and LOG_AFTER_S have passed since the start, and the wait due since the
        last line (a new step's, LOG_STEP_EVERY_S, else LOG_EVERY_S)."""
        now = self._clock()
        if not self._text or now - self._start < LOG_AFTER_S or now - self._logged < self._due_s:
            return
        self._logged, self._due_s = now, LOG_EVERY_S
        seconds = int(now - self._start)
        from rich.text import Text

        # Text: a shape's "[...]" is no markup; soft_wrap: one line however long
        self._console.print(Text(f"progress: {self._text} ({seconds // 60}:{seconds % 60:02d})"), soft_wrap=True)
