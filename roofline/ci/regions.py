"""The whole regions of a profile document, as `roofline check` judges them: read from its summary.

A region of `roofline profile` (`with roofline.region("step"):`) has, in the document's summary, how often
it was entered, each entry's wall time (`entry_wall_s`), and its kernel time over all entries; its
roofline time is the sum over its records. A profile that marks no region is one region, WHOLE_RUN, with
the run's total kernel time. The summary is read as `core.summary.ProfileSummary`; values that are missing or
malformed (a time that is not a positive number, a wall missing an entry) are read as absent, never as 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from roofline.core.document import Document
from roofline.core.summary import ProfileSummary

WHOLE_RUN = "(whole run)"  # the region of a profile that marks none


@dataclass(frozen=True)
class RegionRun:
    """A region of a profile document, from its summary: its per-entry wall times (None in a document made
    before they were recorded), its kernel time over all entries, and its roofline time per entry."""

    name: str
    entered: int
    entry_wall_s: tuple[float, ...] | None
    time_s: float | None
    roofline_time_s: float


def _positive(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0 \
        else None


def profile_regions(doc: Document) -> dict[str, RegionRun]:
    """The regions of a timed profile document ({} for any other): those it marked, else WHOLE_RUN (its
    total kernel time, once)."""
    stored = doc.extra.get("profile")
    if not isinstance(stored, dict):
        return {}
    summary = ProfileSummary.from_dict(stored)
    if summary.analytic:
        return {}

    def roof(region: str | None) -> float:
        return sum((r.roofline_time_s or 0.0) * (r.count or 1) for r in doc.records
                   if region is None or r.region == region)

    if not summary.regions:
        return {WHOLE_RUN: RegionRun(WHOLE_RUN, 1, None, _positive(summary.kernel_time_s), roof(None))}
    out = {}
    for name, info in summary.regions.items():
        entered = info.entered if isinstance(info.entered, int) and info.entered > 0 else 1
        walls = info.entry_wall_s if isinstance(info.entry_wall_s, tuple) else ()
        good = [w for w in map(_positive, walls) if w is not None]
        out[str(name)] = RegionRun(str(name), entered, tuple(good) if good and len(good) == len(walls) else None,
                                   _positive(info.time_s), roof(str(name)) / entered)
    return out


__all__ = ["WHOLE_RUN", "RegionRun", "profile_regions"]
