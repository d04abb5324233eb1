"""The alpha-beta (latency + bandwidth) model of a collective fitted to measured times: t = c0 + c1 x x.

x is the bytes each GPU sends in the ring (`ops.collectives.ring_bytes_per_gpu`), so c1 is beta (seconds per
byte, 1 / the bandwidth one GPU's link sustains in one direction) and c0 the latency term, steps x (n-1) x
alpha (`ops.collectives.alpha_beta_time`). The fit minimises the RELATIVE error, sum ((c0 + c1 x - t) / t)^2
(weighted least squares, weights 1 / t^2): measured sizes span 1 KiB to 4 GiB, six orders of magnitude of
time, and an ordinary least-squares line would fit the largest sizes and ignore the latency of the small ones.
The knee n_1/2 = c0 / c1 is the size at which latency and bandwidth cost the same time (half the peak
bandwidth is reached there). Pure arithmetic: nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from roofline.core.errors import UsageError


@dataclass(frozen=True)
class AlphaBetaFit:
    """t = intercept_s + slope_s_per_byte x bytes, and how far the measurements lie from it."""

    intercept_s: float
    slope_s_per_byte: float
    # max over the points of |fit - measured| / measured
    worst_relative_error: float
    relative_errors: tuple[float, ...]

    def time_s(self, nbytes: float) -> float:
        return self.intercept_s + self.slope_s_per_byte * nbytes

    @property
    def bandwidth_bytes_per_s(self) -> float | None:
        """1 / slope: the asymptotic bandwidth (None for a flat or falling fit)."""
        return 1.0 / self.slope_s_per_byte if self.slope_s_per_byte > 0 else None

    @property
    def knee_bytes(self) -> float | None:
        """n_1/2 = intercept / slope (alpha x bandwidth), in the units of x; None when either is not positive."""
        if self.intercept_s <= 0 or self.slope_s_per_byte <= 0:
            return None
        return self.intercept_s / self.slope_s_per_byte


def fit_alpha_beta(nbytes: Sequence[float], times_s: Sequence[float]) -> AlphaBetaFit:
    """Least squares of t = c0 + c1 x on relative error (weights 1/t^2); needs two distinct sizes.

    NB: one line for all sizes; NCCL switches protocol (LL, LL128, Simple) and algorithm with the size, so
    the worst relative error says how well one alpha and one beta describe the whole range.
    """
    if len(nbytes) != len(times_s):
        raise UsageError(f"{len(nbytes)} sizes but {len(times_s)} times")
    if len(set(nbytes)) < 2:
        raise UsageError("an alpha-beta fit needs at least two distinct sizes")
    if any(t <= 0 for t in times_s):
        raise UsageError("an alpha-beta fit needs positive times")
    # Normal equations of min sum w (c0 + c1 x - t)^2 with w = 1/t^2.
    sw = swx = swxx = swt = swxt = 0.0
    for x, t in zip(nbytes, times_s, strict=True):
        w = 1.0 / (t * t)
        sw += w
        swx += w * x
        swxx += w * x * x
        swt += w * t
        swxt += w * x * t
    det = sw * swxx - swx * swx
    c1 = (sw * swxt - swx * swt) / det
    c0 = (swt - c1 * swx) / sw
    errors = tuple(abs(c0 + c1 * x - t) / t for x, t in zip(nbytes, times_s, strict=True))
    return AlphaBetaFit(c0, c1, max(errors), errors)
