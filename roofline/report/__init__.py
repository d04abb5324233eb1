"""Rendering: text tables, charts (model, placement, drawing, table) and the terminal chart."""
