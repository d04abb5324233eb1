"""Where long steps say what they are doing: a transient status line on stderr, and notes that stay.

The runner, the timers and the calibration report to a `Reporter`; the command line passes a `StatusLine`,
everything else the silent `QUIET`. The line is redrawn only when a step reports (between samples, never
inside a timed call): a refreshing thread would take a core from torch's thread pool on a small CPU and
stall the kernels being timed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

# A step reporting more often than this is redrawn at this interval: a redraw costs the host ~1 ms.
REDRAW_S = 0.25
# A CPU timing forecast to take longer than this is announced before it starts, with how to shorten it.
LONG_RUN_S = 30.0


class Reporter(Protocol):
    """What long steps report to."""

    def status(self, text: str) -> None:
        """The step under way now (replaces the previous status)."""

    def notice(self, text: str) -> None:
        """A line the user keeps (said once per text)."""

    def long_run(self, seconds: float, detail: str) -> None:
        """The timing about to start is forecast to take `seconds` (over LONG_RUN_S); `detail` says how
        long and why ('at least 41 s (4 calls of at least 10 s, the roofline time)')."""


class Quiet:
    """A Reporter that says nothing (the Python API, the pytest plugin, tests)."""

    def status(self, text: str) -> None:
        pass

    def notice(self, text: str) -> None:
        pass

    def long_run(self, seconds: float, detail: str) -> None:
        pass


QUIET = Quiet()


class Throttle:
    """True at most once per `interval_s` of `clock` (the first call included): for steps that report
    every sample."""

    def __init__(self, clock: Callable[[], float], interval_s: float = REDRAW_S) -> None:
        self._clock, self._interval, self._last = clock, interval_s, float("-inf")

    def __call__(self) -> bool:
        now = self._clock()
        if now - self._last < self._interval:
            return False
        self._last = now
        return True


class StatusLine:
    """The command line's Reporter: one transient line on stderr (rich, no refresh thread), with an optional
    bar of `total` steps (a suite's entries); notes print above it and stay. Nothing is drawn, and rich's
    progress module is not imported, until a step first reports, and never when stderr is not a terminal.

    `shorter` is what a long-run note suggests (the command's own options)."""

    def __init__(self, console: Console | None = None, total: int | None = None,
                 shorter: str = "a smaller shape is quicker") -> None:
        self._console, self._total, self._shorter = console, total, shorter
        self._bar: Progress | None = None
        self._head, self._status, self._done = "", "", 0
        self._said: set[str] = set()

    def __enter__(self) -> StatusLine:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def _live(self) -> Progress:
        if self._bar is None:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            columns: list[Any] = [TextColumn("{task.description}")]
            if self._total is not None:
                columns += [BarColumn(), MofNCompleteColumn()]
            self._bar = Progress(*columns, TimeElapsedColumn(), console=self._stderr(), transient=True,
                                 auto_refresh=False)
            self._bar.add_task("", total=self._total)
            self._bar.start()
        return self._bar

    def _stderr(self) -> Console:
        if self._console is None:
            from roofline.report.text import console

            self._console = console(stderr=True)
        return self._console

    def _draw(self) -> None:
        if not self._stderr().is_terminal:  # a pipe or a file keeps no transient line (rich would leave a
            return                          # blank one)
        bar = self._live()
        text = ": ".join(t for t in (self._head, self._status) if t)
        bar.update(bar.task_ids[0], description=text, completed=self._done)
        bar.refresh()

    def step(self, done: int, head: str) -> None:
        """A new step of the bar (`done` finished before it), named `head`; clears the status."""
        self._head, self._status, self._done = head, "", done
        self._draw()

    def status(self, text: str) -> None:
        self._status = text
        self._draw()

    def notice(self, text: str) -> None:
        if text not in self._said:
            self._said.add(text)
            from rich.markup import escape

            self._stderr().print(f"[yellow]note:[/yellow] {escape(text)}", highlight=False)

    def long_run(self, seconds: float, detail: str) -> None:
        self.notice(f"timing this takes {detail}; {self._shorter}")


def rough_duration(seconds: float) -> str:
    """A forecast as a person says it: '0.6 s', '45 s', '3 min', '1.5 h'."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
