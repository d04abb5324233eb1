"""A uniform grid over display pixels that finds, among many boxes, those near a given one: the label
placer's spatial index (a chart of a hundred points asks millions of times which of its thousands of
shapes and line segments lie near a candidate spot).

Each item is filed, by its bounding box, in the square cells the box covers; a query looks in the cells
around its own box and keeps exactly the items whose boxes come within `gap` of it, by the same test
`shapes.clear` starts with, in the order the items were added (the placer's first-free and cheapest
choices depend on that order). An item whose box covers more than SPREAD_CELLS cells (a roof's diagonal
across the whole chart) is kept aside and looked at by every query. No matplotlib.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

Box = tuple[float, float, float, float]  # (x0, y0, x1, y1) in display pixels

# A cell's side in pixels: a label is ~40-150 x 15 px, a marker ~15 px; a candidate spot then looks in ~6
# cells, and a cell holds a handful of items on a crowded chart (measured: 24-64 px draw as fast).
CELL_PX = 32.0
# More cells than this and an item is checked by every query instead (a grid of ~50 x 30 cells over an
# axes of 1500 x 1000 px: a long diagonal's box would otherwise fill hundreds of them).
SPREAD_CELLS = 64
# Queries look this much further than asked: cells are found by rounding coordinates, and the exact test
# after it decides; one pixel more costs nothing and covers any rounding.
_SLACK_PX = 1.0


class Grid:
    """Boxes numbered in the order they are added, found by nearness (`near`)."""

    def __init__(self, cell: float = CELL_PX) -> None:
        self.cell = cell
        self.boxes: list[Box] = []
        self._cells: dict[tuple[int, int], list[int]] = {}
        self._spread: list[int] = []

    def __len__(self) -> int:
        return len(self.boxes)

    def _span(self, x0: float, y0: float, x1: float, y1: float) -> tuple[int, int, int, int]:
        c = self.cell
        return math.floor(x0 / c), math.floor(y0 / c), math.floor(x1 / c), math.floor(y1 / c)

    def add(self, box: Box) -> int:
        """File a box; returns its number (0, 1, ...)."""
        k = len(self.boxes)
        self.boxes.append(box)
        i0, j0, i1, j1 = self._span(*box)
        if (i1 - i0 + 1) * (j1 - j0 + 1) > SPREAD_CELLS:
            self._spread.append(k)
            return k
        for i in range(i0, i1 + 1):
            for j in range(j0, j1 + 1):
                self._cells.setdefault((i, j), []).append(k)
        return k

    def near(self, box: Box, gap: float) -> list[int]:
        """Numbers, ascending, of exactly the boxes that are not `gap` apart from `box` on either axis: those
        for which `shapes.clear`'s box test does not already answer "clear"."""
        ax0, ay0, ax1, ay1 = box
        reach = gap + _SLACK_PX
        i0, j0, i1, j1 = self._span(ax0 - reach, ay0 - reach, ax1 + reach, ay1 + reach)
        boxes = self.boxes
        if (i1 - i0 + 1) * (j1 - j0 + 1) > len(boxes):  # a query as wide as the chart: every box
            found: Iterable[int] = range(len(boxes))
        elif i0 == i1 and j0 == j1 and not self._spread:  # one cell: its list is in order already
            found = self._cells.get((i0, j0), ())
        else:
            seen = set(self._spread)
            cells = self._cells
            for i in range(i0, i1 + 1):
                for j in range(j0, j1 + 1):
                    items = cells.get((i, j))
                    if items:
                        seen.update(items)
            found = sorted(seen)
        out = []
        for k in found:
            bx0, by0, bx1, by1 = boxes[k]
            if not (ax1 + gap <= bx0 or bx1 + gap <= ax0 or ay1 + gap <= by0 or by1 + gap <= ay0):
                out.append(k)
        return out


__all__ = ["CELL_PX", "SPREAD_CELLS", "Box", "Grid"]
