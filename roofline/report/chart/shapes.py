"""The label placer's geometry, in display pixels: convex shapes (rectangles, turned text boxes, segments) as
tuples of corners, and `clear`, the separating-axis test of whether two of them keep a gap. No matplotlib.

`clear` starts with the shapes' bounding boxes (most pairs on a chart are far apart) and takes a shortened,
exactly equivalent test when one shape is an upright rectangle; tests/test_placer_index.py checks both against
computations of its own.
"""

from __future__ import annotations

import functools
import math

Corners = tuple[tuple[float, float], ...]  # a convex shape in display pixels: a rectangle, or a segment

GAP_PX = 3.0  # clearance kept between a label and anything else
# Shapes whose box and edge normals are remembered (a chart of a few hundred points has a few thousand).
SHAPE_CACHE = 1 << 16


# ---------------------------------------------------------------- shapes
@functools.lru_cache(maxsize=SHAPE_CACHE)
def _box(shape: Corners) -> tuple[float, float, float, float]:
    """A shape's bounding box (x0, y0, x1, y1), remembered: the placer asks for the same shapes millions of
    times on a chart of a hundred points."""
    xs, ys = [x for x, _ in shape], [y for _, y in shape]
    return min(xs), min(ys), max(xs), max(ys)


@functools.lru_cache(maxsize=SHAPE_CACHE)
def _axes_of(shape: Corners) -> tuple[tuple[float, float], ...]:
    """Unit normals of a convex shape's edges (one for a segment)."""
    out = []
    n = len(shape)
    for k in range(n if n > 2 else 1):
        (x0, y0), (x1, y1) = shape[k], shape[(k + 1) % n]
        nx, ny = -(y1 - y0), x1 - x0
        norm = math.hypot(nx, ny)
        if norm > 0:
            out.append((nx / norm, ny / norm))
    return tuple(out)


_OTHER, _FINITE, _UPRIGHT = 0, 1, 2  # what `_kind` tells of a shape


@functools.lru_cache(maxsize=SHAPE_CACHE)
def _kind(shape: Corners) -> int:
    """_UPRIGHT: a rectangle with its sides along the axes, not flat, finite (its edge normals are exactly
    (+-1, +-0) and (+-0, +-1)); _FINITE: another shape of finite corners; _OTHER: a shape with an infinite or
    NaN coordinate."""
    if not all(math.isfinite(v) for corner in shape for v in corner):
        return _OTHER
    if len(shape) != 4:
        return _FINITE
    (x0, y0), (x1, y1), (x2, y2), (x3, y3) = shape
    return _UPRIGHT if y0 == y1 and x1 == x2 and y2 == y3 and x3 == x0 and x0 != x1 and y1 != y2 else _FINITE


def clear(a: Corners, b: Corners, gap: float = GAP_PX) -> bool:
    """Separating-axis test: True when the two convex shapes are at least `gap` pixels apart on some axis.
    Their bounding boxes first: most pairs on a chart are far apart, and boxes `gap` apart are shapes as far."""
    ax0, ay0, ax1, ay1 = _box(a)  # not bounds(): one call less, ~3 million times on a 110-point chart
    bx0, by0, bx1, by1 = _box(b)
    if ax1 + gap <= bx0 or bx1 + gap <= ax0 or ay1 + gap <= by0 or by1 + gap <= ay0:
        return True
    ka, kb = _kind(a), _kind(b)
    if (ka == _UPRIGHT and kb != _OTHER) or (kb == _UPRIGHT and ka != _OTHER):
        # The loop below, shortened and with the same answer, when one shape is an upright rectangle and the
        # other finite: the rectangle's axes are +-x and +-y, on which any finite corner projects to its own
        # coordinate (x * 1.0 + y * 0.0 == x), exactly; on +x and +y that is the box test above, on -x and
        # -y max(-xa) + gap <= min(-xb) reads gap - ax0 <= -bx1. Then only the other shape's own axes.
        if gap - ax0 <= -bx1 or gap - bx0 <= -ax1 or gap - ay0 <= -by1 or gap - by0 <= -ay1:
            return True
        axes = _axes_of(b) if ka == _UPRIGHT else _axes_of(a)
        if ka == kb:  # both upright: no other axis
            return False
    else:
        axes = _axes_of(a) + _axes_of(b)
    for nx, ny in axes:
        pa = [x * nx + y * ny for x, y in a]
        pb = [x * nx + y * ny for x, y in b]
        if max(pa) + gap <= min(pb) or max(pb) + gap <= min(pa):
            return True
    return False


def holds(shape: Corners, xy: tuple[float, float]) -> bool:
    """Whether the shape's bounding box holds the point."""
    x0, y0, x1, y1 = bounds(shape)
    return x0 <= xy[0] <= x1 and y0 <= xy[1] <= y1


def bounds(shape: Corners) -> tuple[float, float, float, float]:
    """A shape's bounding box (x0, y0, x1, y1)."""
    return _box(shape)


def rect(x0: float, y0: float, x1: float, y1: float) -> Corners:
    return ((x0, y0), (x1, y0), (x1, y1), (x0, y1))


def quad(anchor: tuple[float, float], w: float, h: float, ha: str, va: str, angle_deg: float = 0.0) -> Corners:
    """Corners of a w x h text box anchored at `anchor` by (ha, va), rotated about the anchor
    (matplotlib's rotation_mode='anchor')."""
    x0 = {"left": 0.0, "center": -w / 2, "right": -w}[ha]
    y0 = {"bottom": 0.0, "center": -h / 2, "top": -h}[va]
    c, s = math.cos(math.radians(angle_deg)), math.sin(math.radians(angle_deg))
    return tuple((anchor[0] + dx * c - dy * s, anchor[1] + dx * s + dy * c)
                 for dx, dy in ((x0, y0), (x0 + w, y0), (x0 + w, y0 + h), (x0, y0 + h)))


__all__ = ["GAP_PX", "Corners", "bounds", "clear", "holds", "quad", "rect"]
