"""What a chart writes of a name: cut to a length a chart can show (`cut_label`)."""

from __future__ import annotations

# A name on the chart (a point's, a series', a roof's) is cut to this many characters, its middle left out: a
# profile's op, dtype and module path fit, and a 1,000,000-character op name (a document may hold one) drew for
# 214 s into a 78 MB SVG, and raised in the PNG's text layout.
LABEL_CHARS = 120


def cut_label(text: str) -> str:
    """`text` as the chart names it: whole up to LABEL_CHARS, else its head and its tail (where a module path
    tells two ops apart) around an ellipsis."""
    if len(text) <= LABEL_CHARS:
        return text
    head = (LABEL_CHARS - 1) // 2
    return f"{text[:head]}…{text[len(text) - (LABEL_CHARS - 1 - head):]}"


__all__ = ["LABEL_CHARS", "cut_label"]
