"""How numbers read in every view (tables, charts, advice, check reports): one function per kind of number."""

from __future__ import annotations

import math

_PREFIXES = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
# The width of output that is not a terminal (pipes, files, CI logs) unless COLUMNS says otherwise: the
# width every default view is laid out for (`roofline.report.text.console`).
DEFAULT_WIDTH = 80
# Significant figures of a duration: enough to tell a 1% change apart at any scale.
DURATION_DIGITS = 3


def si(x: float | None, unit: str = "", digits: int = 3) -> str:
    """1.37e11, 'FLOP/s' -> '137 GFLOP/s'; None -> '-'."""
    if x is None:
        return "-"
    for scale, p in _PREFIXES:
        if abs(x) >= scale:
            return f"{x / scale:.{digits}g} {p}{unit}"
    return f"{x:.{digits}g} {unit}".rstrip()


def table_scale(values: list[float | None], unit: str) -> tuple[float, str]:
    """One SI prefix for a column of rates, chosen by its largest value so that it reads 1-999 in it:
    [1.86e10, 4.9e8] 'FLOP/s' -> (1e9, 'GFLOP/s') (a CPU table reads '18.6' and '0.49', not '0.0186' and
    '0.00049' TFLOP/s). No values: the unprefixed unit."""
    top = max((abs(v) for v in values if v is not None and math.isfinite(v)), default=0.0)
    for scale, p in _PREFIXES:
        if top >= scale:
            return scale, f"{p}{unit}"
    return 1.0, unit


def duration(s: float | None, digits: int = DURATION_DIGITS) -> str:
    """Seconds in the unit that reads best: '1.23 s', '45.6 ms', '7.89 µs'; None -> '-'."""
    if s is None:
        return "-"
    if s >= 1:
        return f"{s:.{digits}g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.{digits}g} ms"
    return f"{s * 1e6:.{digits}g} µs"


def joules(j: float | None, digits: int = DURATION_DIGITS) -> str:
    """Joules in the unit that reads best: '1.15 J', '55.9 mJ', '7.89 µJ'; None -> '-'."""
    if j is None:
        return "-"
    if abs(j) >= 1 or j == 0:
        return f"{j:.{digits}g} J"
    if abs(j) >= 1e-3:
        return f"{j * 1e3:.{digits}g} mJ"
    return f"{j * 1e6:.{digits}g} µJ"


def number(x: float | None) -> str:
    """3 significant digits without exponents for large values: 0.105, 28.2, 2,490; None -> '-'."""
    if x is None:
        return "-"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


# A float holds every integer up to 2**53 exactly; past it, the last digits printed would be rounding.
EXACT_FLOAT_INT = 2**53


def count(x: float) -> str:
    """An exact count with thousands separators: 137,438,953,472; one a float cannot hold exactly (past 2**53)
    reads as what it is, a rounded value: 'about 2e+60'."""
    if abs(x) > EXACT_FLOAT_INT:
        return f"about {x:.6g}"
    return f"{x:,.0f}"


def percent(x: float | None, digits: int = 1, *, nonzero: bool = False) -> str:
    """A fraction as a percentage: 0.0512 -> '5.1%'; None or not finite -> '-'. With `nonzero` a positive
    fraction too small for `digits` reads '<0.1%' (a share that exists is never shown as 0; the profile views)."""
    if x is None or not math.isfinite(x):
        return "-"
    smallest = 10.0 ** -digits
    if nonzero and 0 < x * 100 < smallest / 2:
        return f"<{smallest:.{digits}f}%"
    return f"{x * 100:.{digits}f}%"


def rough_duration(seconds: float) -> str:
    """A forecast as a person says it: '0.6 s', '45 s', '3 min', '1.5 h'."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
