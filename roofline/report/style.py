"""How every chart looks: fonts, the colour and marker of each document, the colour of each bound.

Shared by the roofline chart (`roofline.report.chart`) and the comparison bar chart, so a compute-bound
operator is the same red everywhere. Saving (formats, resolution) is `roofline.report.figures`.
"""

from __future__ import annotations

# Font sizes in points: 9 pt stays readable on a laptop screen at the charts' 150 dpi.
FONT_PT = 9.0
TITLE_PT = 11.0
NUMBER_WEIGHT = "bold"  # a numbered chart's point numbers, on the chart and in its table

# One colour and marker per document (cycled past six); points are coloured by bound.
DOC_COLOURS = ("#2b2b2b", "#7b3294", "#00798c", "#b35806", "#1b7837", "#c51b7d")
DOC_MARKERS = ("o", "s", "^", "D", "v", "P")
MARKER_PT = 7.5
BOUND_COLOURS = {"compute": "#d7301f", "memory": "#2166ac"}
OTHER_BOUND_COLOUR = "#8c8c8c"  # any class not known here (e.g. a later "latency")


def bound_colour(bound: str) -> str:
    """The colour of a bound class: red compute, blue memory, grey anything else."""
    return BOUND_COLOURS.get(bound, OTHER_BOUND_COLOUR)


def doc_colour(doc: int) -> str:
    """The colour of the `doc`-th document's roofs, numbers and legend entry."""
    return DOC_COLOURS[doc % len(DOC_COLOURS)]


def doc_marker(doc: int) -> str:
    """The marker shape of the `doc`-th document's points."""
    return DOC_MARKERS[doc % len(DOC_MARKERS)]


__all__ = ["BOUND_COLOURS", "DOC_COLOURS", "DOC_MARKERS", "FONT_PT", "MARKER_PT", "NUMBER_WEIGHT",
           "OTHER_BOUND_COLOUR", "TITLE_PT", "bound_colour", "doc_colour", "doc_marker"]
