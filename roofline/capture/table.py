"""The terminal table of a profile (`Profile.table()`): its heaviest records, as `roofline profile` shows them
(roofline.report.profile.top_table)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table

from roofline.core.record import Record
from roofline.report.profile import TOP, top_table


def profile_table(records: Sequence[Record], summary: Mapping[str, Any], top: int = TOP, width: int = 80) -> Table:
    """The `top` records by total time (roofline time when analytic), laid out for `width` columns."""
    return top_table(records, summary, top, width)
