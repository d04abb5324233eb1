"""Roofline charts of results documents: the model (what is drawn), the label placer, the table of a
numbered chart and the matplotlib drawing, one module each.

- `model`: `chart_model(docs)` -> `Chart` (ceilings, points, ranges, title), pure data; `load_documents`.
  A whole-model profile's points carry their share of the time (marker areas, the top ones numbered).
- `placer`: where each label goes, on plain rectangles in display pixels.
- `labels`: what a chart writes of a name (`cut_label`: a name past LABEL_CHARS cut in the middle).
- `table`: the table listing a numbered chart's points (more than NUMBERED_ABOVE of them).
- `draw`: `build_figure` and `save_chart` (matplotlib, imported only when a figure is built).
The terminal chart (`roofline.report.terminal`) draws the same model in characters; colours and fonts are
`roofline.report.style`, file formats `roofline.report.figures`.
"""

from roofline.report.chart.draw import build_figure, save_chart
from roofline.report.chart.model import (
    NUMBERED_ABOVE,
    PROFILE_LABELLED,
    ROOF_CHOICES,
    Chart,
    Point,
    Roof,
    chart_model,
    is_numbered,
    is_profile,
    load_documents,
    marker_pt,
    point_numbers,
)

__all__ = ["NUMBERED_ABOVE", "PROFILE_LABELLED", "ROOF_CHOICES", "Chart", "Point", "Roof", "build_figure",
           "chart_model", "is_numbered", "is_profile", "load_documents", "marker_pt", "point_numbers", "save_chart"]
