"""The label placer's shortcuts give the answers of a brute-force scan: the grid index (`chart/grid.py`) finds
exactly the shapes whose boxes a scan over all of them finds near, in the same order; `clear`'s short test
for upright rectangles answers as the full separating-axis test does, borderline gaps included; and a whole
numbered chart is placed the same with the index, the short test, the incremental uncrossing and the
early-stopping callout cost as with the plain scans they replace.

The expected answers are computed here by brute force, on seeded random shapes, with nothing of the placer's
but the shapes (`rect`, `quad`): `_box_near` and `_uncross_by_recount` are the placer's code before the index,
kept verbatim; `_sat` is the full separating-axis test on edge normals found here (`_normals`), not by the
placer; and `_overlap` tells whether two shapes share inner points by another method altogether (edges that
cross, corners inside), which `clear` with no gap must answer the opposite of. No matplotlib.
"""

from __future__ import annotations

import math
import random

import pytest

import roofline.report.chart.placer as placer
from roofline.report.chart.grid import CELL_PX, SPREAD_CELLS, Grid
from roofline.report.chart.model import Chart, Point, Roof
from roofline.report.chart.placer import Candidate, Scene, place_labels
from roofline.report.chart.shapes import GAP_PX, Corners, clear, quad, rect


def _bounds(shape: Corners) -> tuple[float, float, float, float]:
    xs, ys = [x for x, _ in shape], [y for _, y in shape]
    return min(xs), min(ys), max(xs), max(ys)


def _box_near(a: tuple[float, float, float, float], b: tuple[float, float, float, float], gap: float) -> bool:
    """The box test `clear` starts with, negated: the boxes are not `gap` apart on either axis."""
    ax0, ay0, ax1, ay1 = a
    bx0, by0, bx1, by1 = b
    return not (ax1 + gap <= bx0 or bx1 + gap <= ax0 or ay1 + gap <= by0 or by1 + gap <= ay0)


def _edges(shape: Corners) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """A convex shape's edges, corner to next corner; a segment (two corners) is one edge."""
    n = len(shape)
    return [(shape[k], shape[(k + 1) % n]) for k in range(n if n > 2 else 1)]


def _normals(shape: Corners) -> list[tuple[float, float]]:
    """Unit normals of the shape's edges, found here: each edge (dx, dy) turned a quarter turn clockwise to
    (dy, -dx) and divided by its length (the placer turns the other way and measures with hypot; the test
    checks both sides of every normal, so the sign does not matter)."""
    out = []
    for (x0, y0), (x1, y1) in _edges(shape):
        dx, dy = x1 - x0, y1 - y0
        length = math.sqrt(dx * dx + dy * dy)
        if length > 0:
            out.append((dy / length, -dx / length))
    return out


def _sat(a: Corners, b: Corners, gap: float = GAP_PX) -> bool:
    """`clear` as it was before the short test for upright rectangles: boxes, then every edge normal of both
    shapes (from `_normals`)."""
    if not _box_near(_bounds(a), _bounds(b), gap):
        return True
    for nx, ny in _normals(a) + _normals(b):
        pa = [x * nx + y * ny for x, y in a]
        pb = [x * nx + y * ny for x, y in b]
        if max(pa) + gap <= min(pb) or max(pb) + gap <= min(pa):
            return True
    return False


def _turn(o: tuple[float, float], p: tuple[float, float], q: tuple[float, float]) -> float:
    """Twice the signed area of the triangle o, p, q: > 0 when q lies left of the line o -> p."""
    return (p[0] - o[0]) * (q[1] - o[1]) - (p[1] - o[1]) * (q[0] - o[0])


def _inside(xy: tuple[float, float], shape: Corners) -> bool:
    """Whether the point lies strictly inside the convex polygon (on one side of every edge; a segment has no
    inside)."""
    if len(shape) < 3:
        return False
    turns = [_turn(p, q, xy) for p, q in _edges(shape)]
    return all(t > 0 for t in turns) or all(t < 0 for t in turns)


def _overlap(a: Corners, b: Corners) -> bool:
    """Whether two convex shapes share a point inside both (for a segment: on it, between its ends), found
    without separating axes: two edges cross each other strictly, or a corner or the centre of one lies
    strictly inside the other (one shape within the other; the same shape twice)."""
    for p, q in _edges(a):
        for r, t in _edges(b):
            if _turn(p, q, r) * _turn(p, q, t) < 0 and _turn(r, t, p) * _turn(r, t, q) < 0:
                return True
    for one, other in ((a, b), (b, a)):
        centre = (sum(x for x, _ in one) / len(one), sum(y for _, y in one) / len(one))
        if any(_inside(xy, other) for xy in (*one, centre)):
            return True
    return False


def _random_shape(rnd: random.Random, span: float = 400.0) -> Corners:
    """An upright rectangle, a segment or a turned text box, somewhere in (-span/4 .. span)^2."""
    x, y = rnd.uniform(-span / 4, span), rnd.uniform(-span / 4, span)
    kind = rnd.randrange(3)
    if kind == 0:
        return rect(x, y, x + rnd.uniform(1, 60), y + rnd.uniform(1, 20))
    if kind == 1:
        return ((x, y), (x + rnd.uniform(-150, 150), y + rnd.uniform(-150, 150)))
    return quad((x, y), rnd.uniform(10, 80), rnd.uniform(5, 15), "center", "bottom", rnd.uniform(-80, 80))


# ---------------------------------------------------------------- the grid
@pytest.mark.parametrize("gap", [0.0, 1.0, 1.5, 3.0])
def test_grid_finds_exactly_the_boxes_a_scan_finds_in_order(gap: float) -> None:
    rnd = random.Random(7)
    grid = Grid()
    boxes = []
    for k in range(400):
        x0, y0 = rnd.uniform(-100, 900), rnd.uniform(-100, 900)
        # Mostly small boxes; one in ten as long as a roof's diagonal (kept aside: more than SPREAD_CELLS cells).
        w, h = (rnd.uniform(200, 900), rnd.uniform(200, 900)) if k % 10 == 0 else (rnd.uniform(0, 60),
                                                                                   rnd.uniform(0, 20))
        boxes.append((x0, y0, x0 + w, y0 + h))
        assert grid.add(boxes[-1]) == k
    assert len(grid) == 400
    assert any((b[2] - b[0]) * (b[3] - b[1]) > SPREAD_CELLS * CELL_PX ** 2 for b in boxes)
    for _ in range(300):
        x0, y0 = rnd.uniform(-150, 950), rnd.uniform(-150, 950)
        q = (x0, y0, x0 + rnd.uniform(0, 120), y0 + rnd.uniform(0, 40))
        assert grid.near(q, gap) == [k for k, b in enumerate(boxes) if _box_near(q, b, gap)]
    # A query wider than the chart sees every box it touches too.
    assert grid.near((-1e4, -1e4, 1e4, 1e4), gap) == list(range(400))


def test_grid_borderline_boxes_exactly_gap_apart_are_left_out() -> None:
    # Boxes exactly 3 px apart are clear (`ax1 + gap <= bx0`); one float step closer they are near.
    grid = Grid()
    grid.add((103.0, 0.0, 110.0, 5.0))
    grid.add((math.nextafter(103.0, 0.0), 10.0, 110.0, 15.0))
    assert grid.near((90.0, 0.0, 100.0, 15.0), 3.0) == [1]


def test_scene_near_shapes_and_segments_match_a_scan_as_the_scene_grows() -> None:
    rnd = random.Random(11)
    shapes = [_random_shape(rnd) for _ in range(150)]
    segments = [(f"roof:{k}", ((rnd.uniform(0, 400), rnd.uniform(0, 400)), (rnd.uniform(0, 400), rnd.uniform(0, 400))))
                for k in range(40)]
    scene = Scene((0.0, 0.0, 400.0, 400.0), shapes[:100], segments[:20])
    for step in range(3):
        for _ in range(60):
            probe = _bounds(_random_shape(rnd))
            gap = rnd.choice((0.0, 1.0, 1.5, 3.0))
            assert scene.near_shapes(probe, gap) == [s for s in scene.shapes if _box_near(probe, _bounds(s), gap)]
            assert scene.near_segments(probe, gap) == [s for s in scene.segments
                                                       if _box_near(probe, _bounds(s[1]), gap)]
        # The lists only grow: by `+=` (as the drawing code builds them) and by `take` (a placed label).
        if step == 0:
            scene.shapes += shapes[100:]
            scene.segments += segments[20:]
        else:
            leader = ((200.0, 200.0), (250.0 + step, 180.0))
            scene.take(Candidate(rect(250 + step, 170, 290, 185), (1.0, 1.0), (0.0, 0.0), "left", "center",
                                 leader=leader), "label:x")
            assert scene.shapes[-1] == rect(250 + step, 170, 290, 185) and scene.segments[-1] == ("label:x", leader)


# ---------------------------------------------------------------- clear's short test
def _pairs(shapes: list[Corners]) -> list[tuple[Corners, Corners]]:
    """Every ordered pair of the shapes, each with itself too, but a segment with itself: on its own normal its
    two ends project to one value up to rounding, so whether it is clear of itself is the rounding's answer (the
    placer never tests a line against itself)."""
    return [(a, b) for a in shapes for b in shapes if not (a is b and len(a) == 2)]


def test_clear_answers_as_the_full_separating_axis_test() -> None:
    rnd = random.Random(3)
    shapes = [_random_shape(rnd, 200.0) for _ in range(120)]
    answers = set()
    for a, b in _pairs(shapes):
        for gap in (0.0, 1.0, 3.0):
            expected = _sat(a, b, gap)
            assert clear(a, b, gap) == expected, (a, b, gap)
            answers.add(expected)
    assert answers == {True, False}  # both answers were exercised


def test_clear_with_no_gap_is_whether_the_shapes_share_no_inner_point() -> None:
    # Two convex shapes are apart or touch exactly when some edge normal separates them (the separating-axis
    # theorem), so with no gap `clear` must answer the opposite of `_overlap`, which uses no axis at all.
    rnd = random.Random(13)
    shapes = [_random_shape(rnd, 200.0) for _ in range(120)]
    pairs = _pairs(shapes)
    kinds = {(len(a), len(b), _overlap(a, b)) for a, b in pairs}
    assert {(2, 2, True), (2, 4, True), (4, 4, True), (4, 4, False), (2, 4, False)} <= kinds  # every pairing met
    for a, b in pairs:
        assert clear(a, b, 0.0) is not _overlap(a, b), (a, b)


@pytest.mark.parametrize("gap", [0.0, 1.0, 1.5, 3.0])
def test_clear_on_upright_rectangles_at_a_float_step_from_the_gap(gap: float) -> None:
    # b's left edge at a's right edge + gap, and a float step either side of it; the same on each side
    # and in y. An upright rectangle against a segment crossing the gap, too.
    a = rect(100.1, 50.3, 140.7, 61.9)
    for edge in (140.7 + gap, 100.1 - gap):
        for x in (math.nextafter(edge, -math.inf), edge, math.nextafter(edge, math.inf)):
            for b in (rect(x, 55.0, x + 30.0, 70.0), rect(x - 30.0, 55.0, x, 70.0), ((x, 40.0), (x, 70.0))):
                assert clear(a, b, gap) == _sat(a, b, gap) and clear(b, a, gap) == _sat(b, a, gap)
    for edge in (61.9 + gap, 50.3 - gap):
        for y in (math.nextafter(edge, -math.inf), edge, math.nextafter(edge, math.inf)):
            b = rect(110.0, y, 120.0, y + 5.0)
            assert clear(a, b, gap) == _sat(a, b, gap) and clear(b, a, gap) == _sat(b, a, gap)


def test_clear_with_a_non_finite_corner_takes_the_full_test() -> None:
    a = rect(0.0, 0.0, 10.0, 10.0)
    for b in (((5.0, 5.0), (math.inf, 5.0)), ((5.0, math.nan), (20.0, 5.0)), rect(5.0, 5.0, math.inf, 8.0)):
        assert clear(a, b, 1.0) == _sat(a, b, 1.0) and clear(b, a, 1.0) == _sat(b, a, 1.0)


# ---------------------------------------------------------------- a whole chart, both ways
def _log_px(xy: tuple[float, float]) -> tuple[float, float]:
    """Data -> pixels: 100 px per decade on both axes, the origin at (1, 1)."""
    return 100 * math.log10(xy[0]), 100 * math.log10(xy[1])


def _mono(text: str, weight: str) -> tuple[float, float]:
    """A fixed-width font: 6 px per character (7 bold), 10 px tall."""
    return (7.0 if weight == "bold" else 6.0) * len(text), 10.0


def _uncross_by_recount(order: list[Point], leaders_of):  # type: ignore[no-untyped-def]
    """`_uncross` as it was: every trial's crossings counted over all pairs."""
    def crossings(segs: list[Corners]) -> int:
        return sum(not _sat(a, b, 0.0) for k, a in enumerate(segs) for b in segs[k + 1:])

    order = list(order)
    crossed = crossings(leaders_of(order))
    improved = True
    while improved and crossed:
        improved = False
        for k in range(len(order) - 1):
            trial = [*order[:k], order[k + 1], order[k], *order[k + 2:]]
            n = crossings(leaders_of(trial))
            if n < crossed:
                order, crossed, improved = trial, n, True
    return order


def _crowded_scene() -> tuple[Scene, Chart, dict[str, int]]:
    """36 points: four clusters of touching markers (callouts) and loose points, under a memory roof (10 B/s:
    a 45-degree line) and a compute roof, each point with its headroom line up to the roof."""
    rnd = random.Random(5)
    points: list[Point] = []
    for cx, cy, count in ((1.5, 1.3, 6), (2.2, 1.6, 5), (1.2, 2.1, 4), (2.8, 2.4, 7)):  # decades: 100 px each
        for _ in range(count):
            x, y = cx + rnd.uniform(-0.05, 0.05), cy + rnd.uniform(-0.05, 0.05)
            points.append(Point(0, len(points), "op", 10 ** x, 10 ** y, True, "memory", 10 ** (y + 0.6)))
    for _ in range(14):
        x, y = rnd.uniform(0.3, 3.6), rnd.uniform(0.4, 3.4)
        points.append(Point(0, len(points), "op", 10 ** x, 10 ** y, True, "memory", 10 ** (y + 0.3)))
    roofs = (Roof(0, "datasheet", "memory", "dram", "DRAM", 10.0, x_end=300.0),
             Roof(0, "datasheet", "compute", "fp32", "FP32", 3000.0, ridge=300.0))
    chart = Chart("t", ("doc",), ("datasheet",), roofs, tuple(points), (), (1.0, 1e4), (1.0, 1e4))
    segments = [("roof:0:datasheet:memory:dram", (_log_px((1.0, 10.0)), _log_px((300.0, 3000.0)))),
                ("roof:0:datasheet:compute:fp32", (_log_px((300.0, 3000.0)), _log_px((1e4, 3000.0))))]
    segments += [(f"headroom:{p.gid}", (_log_px((p.ai, p.flops_per_s)), _log_px((p.ai, p.roof_flops_per_s))))
                 for p in points]
    markers = [rect(x - 5, y - 5, x + 5, y + 5) for x, y in (_log_px((p.ai, p.flops_per_s)) for p in points)]
    scene = Scene((0.0, 0.0, 400.0, 400.0), list(markers), segments, list(markers))
    return scene, chart, {p.gid: k + 1 for k, p in enumerate(points)}


def test_a_numbered_chart_is_placed_as_by_plain_scans(monkeypatch: pytest.MonkeyPatch) -> None:
    scene, chart, numbers = _crowded_scene()
    fast = place_labels(scene, chart, numbers, _log_px, _mono, 1.0)
    assert sum(p.leader_under for p in fast) >= 10  # the clusters got callouts: the paths under test ran

    full_cost = placer._callout_cost
    monkeypatch.setattr(placer, "clear", _sat)
    monkeypatch.setattr(Scene, "near_shapes", lambda self, box, gap: list(self.shapes))
    monkeypatch.setattr(Scene, "near_segment_numbers", lambda self, box, gap: list(range(len(self.segments))))
    monkeypatch.setattr(placer, "_uncross", _uncross_by_recount)
    monkeypatch.setattr(placer, "_callout_cost", lambda scene, layout, limit=math.inf: full_cost(scene, layout))
    scene, chart, numbers = _crowded_scene()
    slow = place_labels(scene, chart, numbers, _log_px, _mono, 1.0)
    assert slow == fast
