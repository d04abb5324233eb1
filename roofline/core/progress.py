"""Where long steps say what they are doing: a transient status line on stderr, and notes that stay.

The runner, the timers and the calibration report to a `Reporter`; the command line passes a `StatusLine`
(roofline.report.progress),
everything else the silent `QUIET`. The line is redrawn when a step reports (between samples, throttled to
REDRAW_S) and, so that its clock moves during a long step, once a second by itself (REFRESH_PER_S there).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

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
        long and why ('about 36 s more (3 calls of about 12 s, as long as the first)')."""


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


# ---------------------------------------------------------------- notes from code handed no Reporter
class RooflineNotice(UserWarning):
    """A note from code that is handed no Reporter (the calibration cache, unreadable or unwritable), said as a
    warning where no reporter is open (the Python API: `warnings` filters it like any other)."""


class Notices(Quiet):
    """A Reporter that says notices only, each once, through `say` (the command line's `note:` line, open for a
    whole command: notes from code outside any status line, `roofline compare` reading the calibration cache)."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say, self._said = say, set[str]()

    def notice(self, text: str) -> None:
        if text not in self._said:
            self._said.add(text)
            self._say(text)


_OPEN: list[Reporter] = []  # the reporters open now (`reporting`), innermost last


@contextmanager
def reporting(reporter: Reporter) -> Iterator[Reporter]:
    """Within the block, `tell` says its notes through `reporter` (the command line's StatusLine opens itself so)."""
    _OPEN.append(reporter)
    try:
        yield reporter
    finally:
        _OPEN.remove(reporter)


def tell(text: str) -> None:
    """A note from code that is handed no Reporter: the innermost open reporter's notice (on the command line one
    `note:` line, said once), else a RooflineNotice."""
    if _OPEN:
        _OPEN[-1].notice(text)
    else:
        warnings.warn(text, RooflineNotice, stacklevel=3)
