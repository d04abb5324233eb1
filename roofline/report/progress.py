"""The command line's progress: a transient status line on stderr (rich), the `Reporter`
(roofline.core.progress) that long steps report to."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

# The line redraws itself this often while a step runs (rich's refresh thread), so that its elapsed clock
# moves during a step that reports nothing (building 1.6 GB of inputs took 35 s at "0:00:00"). The clock
# shows whole seconds, so once a second is enough; a redraw costs the host ~1 ms (REDRAW_S's note), 0.1% of
# one core at this rate, where rich's default of 10 a second would take 1% from torch's threads.
REFRESH_PER_S = 1.0


class StatusLine:
    """The command line's Reporter: one transient line on stderr (rich), redrawn when a step reports and
    REFRESH_PER_S times a second on its own (its elapsed clock moves through a long step), with an optional
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
