"""The terminal table of a profile: its heaviest records (a first view; the rich views come later)."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from roofline.core.record import Record
from roofline.report.format import duration, si


def _weight(r: Record, timed: bool) -> float:
    """A record's share of the step: its calls' total time (timed) or roofline time (analytic)."""
    per_call = r.time_s if timed else r.roofline_time_s
    return (per_call or 0.0) * (r.count or 1)


def profile_table(records: list[Record], summary: dict[str, Any], top: int = 20) -> Table:
    """The `top` records by total time, with their share of the step, FLOPs, bytes, bound and % of roof."""
    timed = summary.get("mode") == "timed"
    total = summary.get("kernel_time_s") if timed else summary.get("roofline_time_s")
    title = f"{summary.get('name', 'profile')}: " + (f"{duration(total)} of kernel time" if timed
                                                      else f"{duration(total)} predicted (roofline)")
    table = Table(title=title)
    for col, justify in (("op", "left"), ("module", "left"), ("calls", "right"),
                         ("time/call" if timed else "roofline/call", "right"), ("share", "right"),
                         ("FLOP/call", "right"), ("bytes/call", "right"), ("bound", "left"),
                         ("% of roof", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    ranked = sorted(records, key=lambda r: -_weight(r, timed))[:top]
    for r in ranked:
        share = _weight(r, timed) / total if total else None
        frac = r.roofline_fraction
        table.add_row(r.op, r.module or "-", str(r.count or 1),
                      duration(r.time_s if timed else r.roofline_time_s),
                      f"{share:.1%}" if share is not None else "-", si(r.flops), si(r.bytes, "B"),
                      r.bound or "-", f"{frac:.0%}" if frac is not None else "-")
    return table
