"""Where long steps say what they are doing: a transient status line on stderr, and notes that stay.

The runner, the timers and the calibration report to a `Reporter`; the command line passes a `StatusLine`
(roofline.report.progress),
everything else the silent `QUIET`. The line is redrawn when a step reports (between samples, throttled to
REDRAW_S) and, so that its clock moves during a long step, once a second by itself (REFRESH_PER_S there).
"""

from __future__ import annotations

from collections.abc import Callable
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
