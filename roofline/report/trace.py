"""Terminal views of a job's traces (`roofline trace` of several ranks): the ranks, the slowest rank of each
step and why, and each collective with its size, bandwidths, exposed time and skew. Rendered from the results
document's `trace` (traces/job.py `TraceResult.trace_summary`), so a stored document renders the same."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import RenderableType
from rich.table import Table

from roofline.core.format import duration, si

# The collectives shown, the most exposed first.
TOP_COLLECTIVES = 12
LEFT = frozenset({"op #", "trace", "why (over the median rank)"})  # text columns
WRAPPED = frozenset({"trace", "why (over the median rank)"})  # the columns that wrap in a narrow terminal


def _table(title: str, headers: list[str]) -> Table:
    t = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False, collapse_padding=True)
    for h in headers:
        t.add_column(h, justify="left" if h in LEFT else "right", no_wrap=h not in WRAPPED)
    return t


def _bw(x: Any) -> str:
    return si(x, "B/s") if isinstance(x, (int, float)) and x else "-"


def _s(x: Any) -> str:
    return duration(x) if isinstance(x, (int, float)) else "-"


def trace_views(summary: Mapping[str, Any]) -> list[RenderableType]:
    """The job's views (module docstring); none for a single trace without collectives."""
    ranks = summary.get("ranks") or []
    out: list[RenderableType] = []
    if len(ranks) > 1:
        t = _table(f"{len(ranks)} ranks (the records above are rank {summary.get('rank')}'s)",
                   ["rank", "calls", "kernel time", "wall", "comm", "exposed", "trace"])
        for r in ranks:
            t.add_row(str(r["rank"]), str(r["calls"]), _s(r["kernel_time_s"]), _s(r["wall_s"]),
                      _s(r["communication_s"]), _s(r["exposed_communication_s"]), str(r["path"]))
        out.append(t)
    slow = summary.get("slow_steps") or []
    if slow:
        t = _table("Slowest rank of each step", ["step", "rank", "time", "median", "why (over the median rank)"])
        for s in slow:
            why = ", ".join(f"{op} +{duration(x)}" for op, x in s["ops"]) or "-"
            t.add_row("all" if s["step"] < 0 else str(s["step"]), str(s["rank"]), _s(s["time_s"]),
                      _s(s["median_s"]), why)
        out.append(t)
    colls = summary.get("collectives") or []
    if colls:
        shown = sorted(colls, key=lambda c: -(c["exposed_s"] or 0.0))[:TOP_COLLECTIVES]
        t = _table(f"Collectives ({len(shown)} of {len(colls)}, the most exposed first; time: the slowest rank's)",
                   ["op #", "bytes", "time", "algbw", "busbw", "exposed", "skew", "last"])
        for c in shown:
            t.add_row(f"{c['op']} {c['nth']}", si(c["bytes"], "B"), _s(c["time_s"]), _bw(c["algbw_bytes_per_s"]),
                      _bw(c["busbw_bytes_per_s"]), _s(c["exposed_s"]), _s(c["skew_s"]), str(c["last_rank"]))
        out.append(t)
    return out
