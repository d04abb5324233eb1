"""Saving a matplotlib figure: the format from the path's suffix, tool metadata, one-line errors."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from roofline._version import __version__
from roofline.core.errors import UsageError
from roofline.core.files import atomic_write

FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
# Resolution of raster output: sharp on a laptop screen and in a README.
DPI = 150


def figure_format(path: str | os.PathLike[str]) -> str:
    """'png', 'svg' or 'pdf' from the suffix; checked before any drawing so a bad path fails fast."""
    p = Path(path)
    fmt = FORMATS.get(p.suffix.lower())
    if fmt is None:
        raise UsageError(f"{p}: cannot tell the chart format from '{p.suffix or '(no suffix)'}': "
                         f"use {', '.join(FORMATS)}")
    return fmt


def save_figure(fig: Any, path: str | os.PathLike[str], title: str | None = None, dpi: int = DPI,
                exclusive: bool = False, **savefig: Any) -> Path:
    """Write `fig` (a matplotlib Figure) as PNG, SVG or PDF by the path's suffix, with the title and
    'roofline <version>' in the file's metadata: drawn in memory, then written as every output file is
    (`atomic_write`: whole or not at all, only over a regular file; created only where none is when `exclusive`,
    a chart without --force)."""
    import io

    p = Path(path)
    fmt = figure_format(p)
    meta = {"Title": title if title is not None else fig.get_suptitle(),
            "Software" if fmt == "png" else "Creator": f"roofline {__version__}"}
    drawn = io.BytesIO()
    fig.savefig(drawn, format=fmt, dpi=dpi, bbox_inches="tight", metadata=meta, **savefig)
    return atomic_write(p, drawn.getvalue(), exclusive=exclusive)
