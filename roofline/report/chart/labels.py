"""What a chart writes of a name: cut to a length a chart can show (`cut_label`); the dtypes its title names
(`title_dtypes`)."""

from __future__ import annotations

from collections.abc import Sequence

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




# A dtype is named in a chart's title when its records hold at least this share of the drawn FLOPs: the dtypes the
# compute runs in, not an index tensor's (one aten::arange's int64 beside an fp32 model's GEMMs).
TITLE_DTYPE_SHARE = 0.01


def title_dtypes(pairs: Sequence[tuple[str, float]]) -> list[str]:
    """The dtypes a chart's title names, in order of first appearance, from (dtype, FLOPs) of each drawn record:
    those holding at least TITLE_DTYPE_SHARE of the FLOPs, all of them when no record has FLOPs."""
    flops: dict[str, float] = {}
    for dtype, f in pairs:
        flops[dtype] = flops.get(dtype, 0.0) + f
    total = sum(flops.values())
    return [d for d, f in flops.items() if not total or f >= TITLE_DTYPE_SHARE * total]


__all__ = ["LABEL_CHARS", "TITLE_DTYPE_SHARE", "cut_label", "title_dtypes"]
