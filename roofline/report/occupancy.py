"""Occupancy as a person reads it: the rich tables of one launch and of a sweep, and the sweep's chart."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from roofline.analysis.occupancy import LIMITS, SWEEP_AXES, Occupancy, limiter_names, ranges, varied
from roofline.core.errors import UsageError
from roofline.report.figures import figure_format, save_figure

if TYPE_CHECKING:
    from rich.table import Table

# The occupancy curve is a small step plot: 120 dpi keeps its PNG small and sharp enough.
OCCUPANCY_DPI = 120

_LIMIT_LABEL = {"warps": "warps per SM", "registers": "registers", "shared_memory": "shared memory",
                "blocks": "blocks per SM"}


def render_occupancy(o: Occupancy) -> Table:
    """The four limits with their arithmetic, the active blocks in the last row; the caption holds the rest
    of the working (warps per block, notes, the carve-out needed), so the arithmetic is shown once. The
    arithmetic column wraps within the console's width."""
    from rich.table import Table
    from rich.text import Text

    t = Table(title=f"occupancy on {o.gpu} (cc {o.compute_capability}): {o.threads_per_block} threads, "
                    f"{o.registers_per_thread} registers, {o.shared_memory_per_block_bytes} B shared memory",
              show_lines=True, caption_justify="left")
    t.add_column("limit", no_wrap=True)
    t.add_column("blocks\nper SM", justify="right", no_wrap=True)
    t.add_column("arithmetic", overflow="fold")
    for k in LIMITS:
        v = o.limits[k]
        mark = " *" if k in o.limiters else ""
        t.add_row(_LIMIT_LABEL[k] + mark, "-" if v is None else str(v), Text(o.reasons.get(k, "")))
    shown = ", ".join("-" if v is None else str(v) for v in o.limits.values())
    t.add_row("[bold]active[/bold]", f"[bold]{o.active_blocks_per_sm}[/bold]",
              f"min({shown}) = {o.active_blocks_per_sm} blocks x {o.warps_per_block} warps = "
              f"{o.active_warps_per_sm} of {o.max_warps_per_sm} warps: [bold]{o.occupancy:.1%}[/bold]")
    caption = [f"* the limit that sets the occupancy ({limiter_names(o.limiters)})"]
    caption += [line for line in o.working if line.startswith(_CAPTION_LINES)]
    t.caption = "\n".join(caption)
    return t


# The lines of the working that the table's rows do not already show.
_CAPTION_LINES = ("warps per block", "note:", "carve-out needed")


def render_sweep(points: Sequence[Occupancy]) -> Table:
    """A sweep as ranges of the varied input over which the result holds (the curve's steps)."""
    from rich.table import Table

    if not points:
        raise UsageError("empty sweep")
    kind = varied(points)
    o0 = points[0]
    held = {"registers": f"{o0.threads_per_block} threads, {o0.shared_memory_per_block_bytes} B shared memory",
            "threads": f"{o0.registers_per_thread} registers, {o0.shared_memory_per_block_bytes} B shared memory",
            "shared-memory": f"{o0.threads_per_block} threads, {o0.registers_per_thread} registers"}[kind]
    t = Table(title=f"occupancy on {o0.gpu} as {kind} varies ({held})")
    t.add_column(SWEEP_AXES[kind][1], justify="right")
    for c in ("blocks/SM", "warps/SM", "occupancy"):
        t.add_column(c, justify="right")
    t.add_column("limited by")
    for lo, hi, o in ranges(points):
        t.add_row(str(lo) if lo == hi else f"{lo}-{hi}", str(o.active_blocks_per_sm), str(o.active_warps_per_sm),
                  f"{o.occupancy:.1%}", limiter_names(o.limiters))
    return t


def plot_sweep(points: Sequence[Occupancy], path: str | Path, mark: Occupancy | None = None) -> Path:
    """The occupancy curve (a step plot of occupancy against the varied input) as PNG/SVG/PDF; `mark` draws
    one configuration on it. matplotlib is imported here, headless (Agg)."""
    if not points:
        raise UsageError("empty sweep")
    figure_format(path)  # a bad suffix fails before any drawing
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    kind = varied(points)
    attr, label = SWEEP_AXES[kind]
    xs = [getattr(o, attr) for o in points]
    ys = [100 * o.occupancy for o in points]
    fig = Figure(figsize=(7, 4))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.step(xs, ys, where="post", color="tab:blue", linewidth=1.6)
    if mark is not None:
        ax.plot([getattr(mark, attr)], [100 * mark.occupancy], "o", color="tab:red",
                label=f"this launch: {mark.occupancy:.0%}")
        ax.legend(loc="upper right")
    ax.set_xlabel(label)
    ax.set_ylabel("occupancy (% of max warps per SM)")
    ax.set_ylim(0, 105)
    ax.grid(alpha=0.3)
    ax.set_title(f"{points[0].gpu} (cc {points[0].compute_capability}): occupancy vs {kind}")
    return save_figure(fig, path, title=ax.get_title(), dpi=OCCUPANCY_DPI)
