"""Where each label of a roofline chart goes: geometry on plain rectangles in display pixels, no matplotlib.

A greedy, deterministic placer: each label tries candidate spots in a fixed order and takes the first that
stays inside the axes and touches no placed label, marker, ridge point or other line (shapes are exact
rotated rectangles, tested with the separating-axis theorem: `shapes.py`). Memory-roof labels go first (along
their diagonal), then point labels, highest first (around their marker, further out with a leader line when
the near ring is taken; a leader may not cross a label or marker). A label with no free spot takes the
free-of-shapes spot crossing the fewest lines, else the least-overlapping one.

On a numbered chart, tight clusters of markers get their numbers first, as a callout (see `place_callout`).
The compute roofs' labels sit in the right margin, stacked by `stack`.

A spot is tested only against the shapes and lines whose boxes lie near it (the `Scene` files them in a
uniform grid, `grid.py`) and in the scene's order, so a chart of hundreds of points is placed in about a
second, the same as by scanning everything (tests/test_placer_index.py checks both ways give one answer).

The drawing code hands in a `Scene` (the axes' area, the drawn lines and markers, in pixels), a `to_px`
function (data -> display pixels) and a `measure` function (text, weight -> width, height in pixels), and
draws the `Placement`s it gets back in their order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from roofline.report.chart.grid import Grid
from roofline.report.chart.model import Chart, Point, Roof, marker_pt
from roofline.report.chart.shapes import GAP_PX, Corners, bounds, clear, holds, quad
from roofline.report.style import MARKER_PT, NUMBER_WEIGHT

ToPx = Callable[[tuple[float, float]], tuple[float, float]]  # data coordinates -> display pixels
Measure = Callable[[str, str], tuple[float, float]]  # (text, font weight) -> (width, height) in pixels


@dataclass
class Candidate:
    """A spot for a label: its box, where its annotation is anchored and how it is aligned."""

    quad: Corners
    xy: tuple[float, float]  # data coordinates of the anchor
    offset_pt: tuple[float, float]
    ha: str
    va: str
    angle: float = 0.0
    leader: Corners | None = None  # the leader line from the marker's edge to the label, in display pixels
    ring: int = 0  # how far out (0: by the marker, no leader)
    centre: tuple[float, float] = (math.nan, math.nan)  # the point's centre, in display pixels


@dataclass
class Scene:
    """What a label must keep clear of, in display pixels; placing a label adds it (`take`).

    `shapes` and `segments` only grow (append, +=): they are filed in a grid (`grid.Grid`) as they come, so
    that `near_shapes` and `near_segments` give, in their order, just those a spot could touch."""

    area: tuple[float, float, float, float]  # the axes (x0, y0, x1, y1)
    shapes: list[Corners]  # placed labels, markers and ridge points
    segments: list[tuple[str, Corners]]  # (owner gid, segment) of every drawn line
    markers: list[Corners] = field(default_factory=list)  # the markers and ridge points of shapes
    _shape_grid: Grid = field(default_factory=Grid, init=False, repr=False, compare=False)
    _segment_grid: Grid = field(default_factory=Grid, init=False, repr=False, compare=False)

    def take(self, c: Candidate, gid: str) -> None:
        """Mark a chosen spot as used: its box, and its leader line (owned by `gid`)."""
        if c.leader is not None:
            self.segments.append((gid, c.leader))
        self.shapes.append(c.quad)

    def near_shapes(self, box: tuple[float, float, float, float], gap: float) -> list[Corners]:
        """The shapes, in order, whose boxes are not `gap` apart from `box`: every shape that `clear(q, shape,
        gap)` could find touching a shape q with that box (the others it finds clear by their boxes)."""
        self._file_new()
        return [self.shapes[k] for k in self._shape_grid.near(box, gap)]

    def near_segments(self, box: tuple[float, float, float, float], gap: float) -> list[tuple[str, Corners]]:
        """The (owner gid, segment) pairs, in order, whose boxes are not `gap` apart from `box`."""
        return [self.segments[k] for k in self.near_segment_numbers(box, gap)]

    def near_segment_numbers(self, box: tuple[float, float, float, float], gap: float) -> list[int]:
        """`near_segments`, as positions in `segments`, ascending."""
        self._file_new()
        return self._segment_grid.near(box, gap)

    def _file_new(self) -> None:
        """File in the grids the shapes and segments added since the last question."""
        for shape in self.shapes[len(self._shape_grid):]:
            self._shape_grid.add(bounds(shape))
        for _, seg in self.segments[len(self._segment_grid):]:
            self._segment_grid.add(bounds(seg))


@dataclass(frozen=True)
class Placement:
    """A label to draw: its gid ('label:roof:...' or 'label:point:DOC:RECORD'), text and spot."""

    gid: str
    text: str
    spot: Candidate
    doc: int
    kind: str  # "roof" (along its diagonal), "name" (a point's label) or "number" (a numbered chart's)
    weight: str = "normal"
    leader_under: bool = False  # a callout's: its leader is a line beneath the markers, not an arrow


# ---------------------------------------------------------------- choosing a spot
def choose(scene: Scene, candidates: list[Candidate], own: set[str], near: bool = False) -> Candidate:
    """The first free candidate, in preference order. With `near` (a point's number), a spot by the marker
    that crosses a line beats one further out on a leader: the cost of a spot is its ring plus the lines
    it crosses (another label's leader counting most), the first of the cheapest wins."""
    ax0, ay0, ax1, ay1 = scene.area

    def inside(c: Candidate) -> bool:
        x0, y0, x1, y1 = bounds(c.quad)
        return x0 >= ax0 and y0 >= ay0 and x1 <= ax1 and y1 <= ay1

    def lines_crossed(c: Candidate) -> list[str]:
        """The owners of the lines (not its own) the spot crosses, in the scene's order."""
        return [gid for gid, seg in scene.near_segments(bounds(c.quad), 1.5)
                if gid not in own and not clear(c.quad, seg, 1.5)]

    def free_of_lines(c: Candidate) -> bool:
        """The label crosses no line, and its leader no other label's leader (a sweep's crossed: the leader to
        m=8192 ran over m=4096's)."""
        if not all(clear(c.quad, seg, 1.5) for gid, seg in scene.near_segments(bounds(c.quad), 1.5)
                   if gid not in own):
            return False
        return c.leader is None or all(clear(c.leader, seg, 0.5) for gid, seg in
                                       scene.near_segments(bounds(c.leader), 0.5)
                                       if gid.startswith("label:") and gid not in own)

    def free_of_shapes(c: Candidate) -> bool:
        if not all(clear(c.quad, shape) for shape in scene.near_shapes(bounds(c.quad), GAP_PX)):
            return False  # (asked first: it fails more often than the leader's test, and costs less)
        # A leader may cross a marker that covers its own point's centre (it cannot avoid it), no other.
        return c.leader is None or all(clear(c.leader, shape, 1.0) or holds(shape, c.centre)
                                       for shape in scene.near_shapes(bounds(c.leader), 1.0))

    fits = [c for c in candidates if inside(c)] or candidates
    if near and (free := [c for c in fits if free_of_shapes(c)]):
        def cost(c: Candidate) -> float:
            return c.ring + sum(3.0 if g.startswith("label:") else 1.5 if g.startswith("roof:") else 0.75
                                for g in lines_crossed(c))

        return min(free, key=cost)
    for c in fits:
        if free_of_shapes(c) and free_of_lines(c):
            return c
    free = [c for c in fits if free_of_shapes(c)]
    if free:  # then the spot crossing the fewest lines (the first such, in preference order)
        return min(free, key=lambda c: len(lines_crossed(c)))

    def overlap(c: Candidate) -> float:
        x0, y0, x1, y1 = bounds(c.quad)
        total = 0.0
        for shape in scene.near_shapes((x0, y0, x1, y1), 0.0):  # the others overlap it by nothing
            u0, v0, u1, v1 = bounds(shape)
            w, h = min(x1, u1) - max(x0, u0), min(y1, v1) - max(y0, v0)
            total += w * h if w > 0 and h > 0 else 0.0
        return total

    return min(fits, key=overlap)


# ---------------------------------------------------------------- candidate spots
# Where along a diagonal its label may sit (fraction of the visible part), middle first.
_ALONG = tuple(sorted((k / 20 for k in range(2, 19)), key=lambda f: (abs(f - 0.45), f)))
# Directions around a marker, in preference order: right, left, up-right, down-right, up, down, up-left, down-left.
_DIRECTIONS = (0, 180, 35, -35, 90, -90, 145, -145, 15, -15, 165, -165, 60, -60, 120, -120)
RINGS_PT = (7, 16, 28, 42, 60, 85, 115, 150)
NUMBER_RINGS_PT = (6, 13, 21, 30, 42, 60, 85)  # a number is small: it finds room closer in
_CLUSTER_PT = 30.0  # points closer than this to each other form a cluster, whose numbers fan out from it


def roof_candidates(chart: Chart, r: Roof, to_px: ToPx, w: float, h: float, px_per_pt: float) -> list[Candidate]:
    """Spots for a memory roof's label: along the visible part of its diagonal, parallel to it."""
    x_lo, x_hi = chart.x_range
    gap_pt = 2.5
    out: list[Candidate] = []
    end = min(r.x_end or x_hi, x_hi)
    y_lo, y_hi = chart.y_range
    vis_lo = max(x_lo, y_lo / r.value)
    vis_hi = min(end, y_hi / r.value)
    if vis_hi <= vis_lo:
        return out
    (x0p, y0p), (x1p, y1p) = to_px((vis_lo, vis_lo * r.value)), to_px((vis_hi, vis_hi * r.value))
    angle = math.degrees(math.atan2(y1p - y0p, x1p - x0p))
    nx, ny = -math.sin(math.radians(angle)), math.cos(math.radians(angle))
    lv0, lv1 = math.log10(vis_lo), math.log10(vis_hi)
    for frac in _ALONG:
        x = 10 ** (lv0 + (lv1 - lv0) * frac)
        px, py = to_px((x, x * r.value))
        for side in (1, -1):
            off = (nx * gap_pt * side, ny * gap_pt * side)
            anchor = (px + off[0] * px_per_pt, py + off[1] * px_per_pt)
            va = "bottom" if side > 0 else "top"
            out.append(Candidate(quad(anchor, w, h, "center", va, angle), (x, x * r.value), off, "center", va,
                                 angle))
    return out


def outward(points: Sequence[Point], to_px: ToPx, px_per_pt: float) -> dict[str, float]:
    """For each point with neighbours, the direction (degrees) away from its neighbours' centre: its number
    goes that way first, so that the numbers of a cluster fan out around it and their leaders do not cross."""
    xy = {p.gid: to_px((p.ai, p.flops_per_s)) for p in points}
    reach = _CLUSTER_PT * px_per_pt
    out = {}
    for gid, (x, y) in xy.items():
        near = [(u, v) for g, (u, v) in xy.items() if g != gid and math.hypot(u - x, v - y) < reach]
        if near:
            mx, my = sum(u for u, _ in near) / len(near), sum(v for _, v in near) / len(near)
            if math.hypot(x - mx, y - my) > 0.5:
                out[gid] = math.degrees(math.atan2(y - my, x - mx))
    return out


def point_candidates(p: Point, to_px: ToPx, w: float, h: float, px_per_pt: float,
                     rings: Sequence[float] = RINGS_PT, prefer: float | None = None) -> list[Candidate]:
    """Spots around a point's marker: the near ring first (no leader), then rings further out; in each
    ring the directions of _DIRECTIONS, or those nearest `prefer` (degrees) first. A marker larger than
    MARKER_PT (a profile's, by its share) pushes every ring out by the difference in radius."""
    cx, cy = to_px((p.ai, p.flops_per_s))
    size = marker_pt(p)
    grow = (size - MARKER_PT) / 2
    directions = _DIRECTIONS if prefer is None else sorted(
        _DIRECTIONS, key=lambda d: abs((d - prefer + 180) % 360 - 180))
    out = []
    for ring, radius in enumerate(rings):
        for deg in directions:
            c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
            dx, dy = (radius + grow) * c, (radius + grow) * s * (0.8 if ring == 0 else 1.0)
            ha = "left" if c > 0.3 else "right" if c < -0.3 else "center"
            va = "bottom" if s > 0.3 else "top" if s < -0.3 else "center"
            anchor = (cx + dx * px_per_pt, cy + dy * px_per_pt)
            leader = None
            if ring > 0:  # from the marker's edge to the anchor
                start = (size / 2 + 1) * px_per_pt
                leader = ((cx + c * start, cy + s * start), anchor)
            out.append(Candidate(quad(anchor, w, h, ha, va), (p.ai, p.flops_per_s), (dx, dy), ha, va,
                                 leader=leader, ring=ring, centre=(cx, cy)))
    return out


# ---------------------------------------------------------------- callouts for tight clusters (numbered charts)
# Markers that touch (centres closer than _TOUCH_PT) form a cluster; one of _CALLOUT_MIN or more points gets
# its numbers as a callout: a row under or over it, ordered left to right like the points (which, numbered
# by intensity, reads 9, 10, 11, ...), or a column beside it ordered top to bottom, each number on a
# straight leader to its marker (drawn beneath the markers), neighbours swapped where their leaders would
# cross. A long cluster may split: its upper half over it and the rest under it, or left and right. Of
# all sides x _CALLOUT_GAPS_PT, the cheapest layout wins (_callout_cost: collisions, then lines crossed);
# when every one collides, the cluster's numbers are placed one by one like the others.
_TOUCH_PT = MARKER_PT * 1.6
_CALLOUT_MIN = 3
_CALLOUT_SIDES = ("below", "above", "right", "left")
_CALLOUT_GAPS_PT = (12.0, 20.0, 30.0, 44.0, 60.0)
_CALLOUT_STEP_PX = 10.0  # between two numbers of a callout (a row; half that in a column)
_BLOCKED = 1000.0  # the cost of a callout that collides with something or leaves the axes
_GRAZE = 40.0  # the cost of a leader over a marker outside its cluster

Layout = list[tuple[Point, Candidate]]


def clusters(points: Sequence[Point], to_px: ToPx, px_per_pt: float) -> list[list[Point]]:
    """Groups of touching markers (single linkage) of at least _CALLOUT_MIN points, largest first."""
    xy = [to_px((p.ai, p.flops_per_s)) for p in points]
    parent = list(range(len(xy)))

    def root(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for i in range(len(xy)):
        for j in range(i + 1, len(xy)):
            if math.dist(xy[i], xy[j]) < _TOUCH_PT * px_per_pt:
                parent[root(i)] = root(j)
    groups: dict[int, list[Point]] = {}
    for k, p in enumerate(points):
        groups.setdefault(root(k), []).append(p)
    found = [g for g in groups.values() if len(g) >= _CALLOUT_MIN]
    return sorted(found, key=lambda g: (-len(g), min(p.ai for p in g)))


def place_callout(scene: Scene, cluster: list[Point], numbers: dict[str, int], to_px: ToPx, measure: Measure,
                  px_per_pt: float) -> Layout:
    """A cluster's numbers as a row or column: (point, spot) each, or nothing when no layout fits."""
    centre = {p.gid: to_px((p.ai, p.flops_per_s)) for p in cluster}
    size = {p.gid: measure(str(numbers[p.gid]), NUMBER_WEIGHT) for p in cluster}
    by_y = sorted(cluster, key=lambda p: (-centre[p.gid][1], numbers[p.gid]))
    by_x = sorted(cluster, key=lambda p: (centre[p.gid][0], numbers[p.gid]))
    half = (len(cluster) + 1) // 2
    # One row or column for the whole cluster; failing that, its upper half over it and the rest under it,
    # or its left half left of it and the rest right of it (half as long, so they fit where one does not).
    plans = [[(side, cluster)] for side in _CALLOUT_SIDES] + [
        [("above", by_y[:half]), ("below", by_y[half:])], [("left", by_x[:half]), ("right", by_x[half:])]]
    best: tuple[float, Layout] | None = None
    for plan in plans:
        for gap_pt in _CALLOUT_GAPS_PT:
            layout: Layout = []
            for side, members in plan:
                if side in ("below", "above"):
                    order = sorted(members, key=lambda p: (centre[p.gid][0], numbers[p.gid]))
                else:
                    order = sorted(members, key=lambda p: (-centre[p.gid][1], numbers[p.gid]))

                def leaders(o: list[Point], side: str = side, gap_pt: float = gap_pt) -> list[Corners]:
                    return [(centre[p.gid], anchor) for p, anchor, _, _ in
                            _callout_spots(scene, o, side, gap_pt * px_per_pt, centre, size, px_per_pt)]

                order = _uncross(order, leaders)
                layout += _callout_layout(scene, order, side, gap_pt * px_per_pt, centre, size, px_per_pt)
            cost = _callout_cost(scene, layout, math.inf if best is None else best[0])
            if best is None or cost < best[0]:
                best = (cost, layout)
    if best is None or best[0] >= _BLOCKED:
        return []
    return best[1]


def _callout_layout(scene: Scene, order: list[Point], side: str, gap: float,
                    centre: dict[str, tuple[float, float]], size: dict[str, tuple[float, float]],
                    px_per_pt: float) -> Layout:
    """The numbers of `order` in a row under or over the cluster, or a column right or left of it, `gap`
    pixels from its markers and kept inside the axes; each with its leader from its marker's edge."""
    layout = []
    for p, anchor, ha, va in _callout_spots(scene, order, side, gap, centre, size, px_per_pt):
        cx, cy = centre[p.gid]
        w, hh = size[p.gid]
        reach = math.dist(anchor, (cx, cy)) or 1.0
        edge_px = marker_pt(p) * px_per_pt / 2 + 1  # the leader starts at its own marker's edge
        start = (cx + (anchor[0] - cx) / reach * edge_px, cy + (anchor[1] - cy) / reach * edge_px)
        offset = ((anchor[0] - cx) / px_per_pt, (anchor[1] - cy) / px_per_pt)
        layout.append((p, Candidate(quad(anchor, w, hh, ha, va), (p.ai, p.flops_per_s), offset, ha, va,
                                    leader=(start, anchor), ring=1, centre=(cx, cy))))
    return layout


Spots = list[tuple[Point, tuple[float, float], str, str]]  # (point, anchor in pixels, ha, va) of each number


def _callout_spots(scene: Scene, order: list[Point], side: str, gap: float,
                   centre: dict[str, tuple[float, float]], size: dict[str, tuple[float, float]],
                   px_per_pt: float) -> Spots:
    """Where `_callout_layout` anchors each number (all that `_uncross` needs of it)."""
    x0, y0, x1, y1 = scene.area
    everyone = centre.values()  # the whole cluster: a half's row or column clears all of it
    xs, ys = [centre[p.gid][0] for p in order], [centre[p.gid][1] for p in order]
    top_y, bottom_y = max(c[1] for c in everyone), min(c[1] for c in everyone)
    right_x, left_x = max(c[0] for c in everyone), min(c[0] for c in everyone)
    half = max(marker_pt(p) for p in order) * px_per_pt / 2 + 1
    h = max(hh for _, hh in size.values())
    spots = []
    if side in ("below", "above"):
        total = sum(size[p.gid][0] for p in order) + _CALLOUT_STEP_PX * (len(order) - 1)
        left = min(max(sum(xs) / len(xs) - total / 2, x0), x1 - total)
        edge = bottom_y - half - gap if side == "below" else top_y + half + gap
        va = "top" if side == "below" else "bottom"
        for p in order:
            w = size[p.gid][0]
            spots.append((p, (left + w / 2, edge), "center", va))
            left += w + _CALLOUT_STEP_PX
    else:
        total = h * len(order) + _CALLOUT_STEP_PX / 2 * (len(order) - 1)
        top = max(min(sum(ys) / len(ys) + total / 2, y1), y0 + total)
        edge = right_x + half + gap if side == "right" else left_x - half - gap
        ha = "left" if side == "right" else "right"
        for p in order:
            spots.append((p, (edge, top - h / 2), ha, "center"))
            top -= h + _CALLOUT_STEP_PX / 2
    return spots


def _leaders(layout: Layout) -> list[Corners]:
    """The callout's leaders, measured from the points' centres."""
    return [(c.centre, c.leader[1]) for _, c in layout if c.leader is not None]


def _crossings(layout: Layout) -> int:
    """How many pairs of the callout's leaders cross."""
    segs = _leaders(layout)
    return sum(not clear(a, b, 0.0) for k, a in enumerate(segs) for b in segs[k + 1:])


def _uncross(order: list[Point], leaders_of: Callable[[list[Point]], list[Corners]]) -> list[Point]:
    """Swap neighbours of the callout order while that lowers the number of crossing leaders (`_crossings`
    of the layout; `leaders_of` gives its leaders). Which pairs cross is kept, so that a trial tests again
    only the pairs with a leader that moved (a swap of neighbours moves two)."""
    order = list(order)
    segs = leaders_of(order)
    n = len(segs)
    crosses = [[False] * n for _ in range(n)]  # crosses[i][j]: leaders i and j cross (i != j)
    for i in range(n):
        for j in range(i + 1, n):
            crosses[i][j] = crosses[j][i] = not clear(segs[i], segs[j], 0.0)
    crossed = sum(row.count(True) for row in crosses) // 2
    improved = True
    while improved and crossed:
        improved = False
        for k in range(len(order) - 1):
            trial = [*order[:k], order[k + 1], order[k], *order[k + 2:]]
            moved_segs = leaders_of(trial)
            moved = [i for i in range(n) if moved_segs[i] != segs[i]]
            rows = {i: [j != i and not clear(moved_segs[min(i, j)], moved_segs[max(i, j)], 0.0) for j in range(n)]
                    for i in moved}
            pairs = {(min(i, j), max(i, j)) for i in moved for j in range(n) if j != i}
            was = sum(crosses[i][j] for i, j in pairs)
            now = sum(rows[i][j] if i in rows else rows[j][i] for i, j in pairs)
            if crossed - was + now < crossed:
                order, segs, crossed, improved = trial, moved_segs, crossed - was + now, True
                for i, row in rows.items():
                    for j in range(n):
                        crosses[i][j] = crosses[j][i] = row[j]
    return order


def _callout_cost(scene: Scene, layout: Layout, limit: float = math.inf) -> float:
    """Collisions (each _BLOCKED); then crossings: of its own leaders, of a number over a line (it would seem
    to belong to it), of a leader over a line; then leader length. Summed in that order, number by number;
    once the sum reaches `limit` (the best layout's cost so far) it is returned as it stands: every term is
    positive or zero, so such a layout costs at least `limit` and cannot win."""
    ax0, ay0, ax1, ay1 = scene.area
    own_quads = [c.quad for _, c in layout]
    centres = [c.centre for _, c in layout]
    markers = {id(m) for m in scene.markers}
    cost = 3.0 * _crossings(layout)
    for p, c in layout:
        if cost >= limit:
            return cost
        bx0, by0, bx1, by1 = bounds(c.quad)
        if bx0 < ax0 or by0 < ay0 or bx1 > ax1 or by1 > ay1:
            cost += _BLOCKED
        if not all(clear(c.quad, shape) for shape in scene.near_shapes((bx0, by0, bx1, by1), GAP_PX)):
            cost += _BLOCKED
        if cost >= limit:
            return cost
        assert c.leader is not None
        # A leader passes under the cluster's other markers (drawn beneath them); over a number or label it
        # blocks the callout, over another marker it costs much (it seems to point there too).
        lx0, ly0, lx1, ly1 = bounds(c.leader)
        for shape in scene.near_shapes((lx0, ly0, lx1, ly1), 1.0) + [q for q in own_quads if q is not c.quad]:
            if not (clear(c.leader, shape, 1.0) or any(holds(shape, xy) for xy in centres)):
                cost += _GRAZE if id(shape) in markers else _BLOCKED
                if cost >= limit:
                    return cost
        # The lines near the number or its leader, in order (the tests below find the others clear).
        by_quad = scene.near_segment_numbers((bx0, by0, bx1, by1), 1.5)
        by_leader = scene.near_segment_numbers((lx0, ly0, lx1, ly1), 0.0)
        for k in sorted(set(by_quad) | set(by_leader)):
            gid, seg = scene.segments[k]
            if gid == f"headroom:{p.gid}":
                continue
            if not clear(c.quad, seg, 1.5):
                cost += 3.0 if gid.startswith("label:") else 2.0
            if not clear(c.leader, seg, 0.0):
                cost += 3.0 if gid.startswith("label:") else 1.0 if gid.startswith("roof:") else 0.5
        cost += math.dist(*c.leader) / 1000
    return cost


# ---------------------------------------------------------------- all the labels of a chart
def place_labels(scene: Scene, chart: Chart, numbers: dict[str, int], to_px: ToPx, measure: Measure,
                 px_per_pt: float) -> list[Placement]:
    """Memory-roof labels along their diagonals, then each point's label (or number, when `numbers` is
    given: a numbered chart's, where only the points in `numbers` get one), in the order they are to be
    drawn. `scene` gains each label placed."""
    placed: list[Placement] = []

    def put(p: Placement) -> None:
        scene.take(p.spot, p.gid)
        placed.append(p)

    for r in (r for r in chart.roofs if r.kind == "memory"):
        w, h = measure(r.text, "normal")
        cands = roof_candidates(chart, r, to_px, w, h, px_per_pt)
        if cands:
            put(Placement(f"label:roof:{r.gid}", r.text, choose(scene, cands, {f"roof:{r.gid}"}), r.doc, "roof"))

    done: set[str] = set()
    targets = [p for p in chart.points if p.gid in numbers] if numbers else list(chart.points)
    if numbers:  # tight clusters first: their numbers in a row or column beside them
        for cluster in clusters(targets, to_px, px_per_pt):
            for p, spot in place_callout(scene, cluster, numbers, to_px, measure, px_per_pt):
                put(Placement(f"label:point:{p.gid}", str(numbers[p.gid]), spot, p.doc, "number", NUMBER_WEIGHT,
                              leader_under=True))
                done.add(p.gid)
    order = sorted(targets, key=lambda p: (-p.flops_per_s, p.ai, p.doc, p.record))
    away = outward(chart.points, to_px, px_per_pt) if numbers else {}
    for p in order:
        if p.gid in done:
            continue
        if numbers:
            text, weight, kind = str(numbers[p.gid]), NUMBER_WEIGHT, "number"
        else:
            text, weight, kind = p.label, "normal", "name"
        w, h = measure(text, weight)
        cands = point_candidates(p, to_px, w, h, px_per_pt, NUMBER_RINGS_PT if numbers else RINGS_PT,
                                 away.get(p.gid))
        put(Placement(f"label:point:{p.gid}", text, choose(scene, cands, {f"headroom:{p.gid}"}, near=bool(numbers)),
                      p.doc, kind, weight))
    return placed


def stack(wanted: Sequence[float], heights: Sequence[float], bottom: float, top: float) -> list[float]:
    """Heights (pixels) for labels in a column, wanted at `wanted` (highest first): each moves the least
    that keeps them GAP_PX * 2/3 apart and between `bottom` and `top`; from the highest down, then back up
    from the bottom if the stack ran off it."""
    tall = [h + 2 * GAP_PX / 3 for h in heights]
    ys = list(wanted)
    for k in range(len(ys)):
        ys[k] = min(ys[k], top - tall[k] / 2)
        if k:
            ys[k] = min(ys[k], ys[k - 1] - (tall[k - 1] + tall[k]) / 2)
    for k in reversed(range(len(ys))):
        ys[k] = max(ys[k], bottom + tall[k] / 2)
        if k + 1 < len(ys):
            ys[k] = max(ys[k], ys[k + 1] + (tall[k] + tall[k + 1]) / 2)
    return ys


__all__ = ["Candidate", "Placement", "Scene", "choose", "clusters", "outward", "place_callout", "place_labels",
           "point_candidates", "roof_candidates", "stack"]
