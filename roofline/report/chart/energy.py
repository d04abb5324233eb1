"""The power roof and the energy roofline as plain data (no drawing): from the energy model a results document
keeps in its device block (`energy_model`, written by `--energy` when `roofline calibrate energy` ran).

- `power_roofs`: per compute pipe the chart draws, the FLOP/s the power cap lets a kernel of each intensity
  sustain (`core.energy.power_roof_flops_per_s`), sampled over the chart's x range: a curve that leans on the
  memory roofs at low intensity and flattens below the compute roof at high intensity. One curve per pipe
  figure of the model; none for a pipe the fit gave no energy per FLOP (its roof would have no flat part), nor
  for one whose flat part lies above the pipe's compute roof (the cap never binds that pipe: its compute roof
  is reached first).
- `energy_view`: the energy roofline, FLOP per joule against intensity: the best a kernel can do at its
  attainable rate min(compute, DRAM x I, power roof) with static and active watts included, and each record
  that has `energy` at (intensity, its measured FLOP/J).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from roofline.core.document import Document
from roofline.core.energy import PIPE_FALLBACK, EnergyModel, flops_per_j_roof, power_roof_flops_per_s
from roofline.core.format import si

# Samples per decade of intensity along a curve: smooth at the chart's size (a 6-decade axis: 150 points).
SAMPLES_PER_DECADE = 25


def document_model(doc: Document) -> EnergyModel | None:
    """The energy model a document keeps (None when it has none, or a malformed one)."""
    raw = (doc.device or {}).get("energy_model")
    if not isinstance(raw, dict):
        return None
    try:
        return EnergyModel.from_dict(raw)
    except (ValueError, KeyError, TypeError):
        return None


@dataclass(frozen=True)
class Curve:
    """One sampled curve of a document: a pipe's power roof (FLOP/s) or energy roof (FLOP/J)."""

    doc: int
    pipe: str
    name: str
    xs: tuple[float, ...]
    ys: tuple[float, ...]

    @property
    def gid(self) -> str:
        return f"{self.doc}:{self.pipe}"


def _intensities(x_range: tuple[float, float]) -> list[float]:
    lo, hi = (math.log10(v) for v in x_range)
    n = max(2, int((hi - lo) * SAMPLES_PER_DECADE) + 1)
    return [10 ** (lo + (hi - lo) * i / (n - 1)) for i in range(n)]


def _doc_pipes(doc: Document) -> dict[str, str]:
    """The compute pipes of a document's records, with their labels."""
    return {str(r.compute_pipe): str(r.compute_pipe_label or r.compute_pipe) for r in doc.records if r.compute_pipe}


def _pipe_peak(doc: Document, pipe: str) -> float:
    """The highest compute roof the document's records of `pipe` were placed on (0: none said)."""
    return max((r.peak_flops_per_s or 0.0 for r in doc.records if r.compute_pipe == pipe), default=0.0)


def power_roofs(docs: Sequence[Document], x_range: tuple[float, float]) -> list[Curve]:
    """Each document's power roof per pipe of its records (module docstring); none without an energy model."""
    out = []
    xs = _intensities(x_range)
    for i, doc in enumerate(docs):
        model = document_model(doc)
        if model is None:
            continue
        drawn: set[str] = set()
        for pipe, label in _doc_pipes(doc).items():
            figure_of = pipe if pipe in model.pj_per_flop else PIPE_FALLBACK.get(pipe, pipe)
            if not model.pipe_figure(pipe) or figure_of in drawn:
                continue  # a pipe the fit gave no energy per FLOP has no flat power roof; one curve per figure
            plateau = power_roof_flops_per_s(model, pipe, math.inf) or 0.0
            if 0 < _pipe_peak(doc, pipe) <= plateau:
                continue  # the cap lets this pipe run past its compute roof: it never binds, nothing to draw
            drawn.add(figure_of)
            ys = [power_roof_flops_per_s(model, pipe, x) or 0.0 for x in xs]
            out.append(Curve(i, pipe, f"power cap {model.power_cap_w:.0f} W ({label})", tuple(xs), tuple(ys)))
    return out


@dataclass(frozen=True)
class EnergyPoint:
    doc: int
    record: int
    label: str
    ai: float
    flops_per_j: float


@dataclass(frozen=True)
class EnergyView:
    title: str
    curves: tuple[Curve, ...]
    points: tuple[EnergyPoint, ...]
    x_range: tuple[float, float]
    y_range: tuple[float, float]


def _compute_and_dram(doc: Document, pipe: str) -> tuple[float | None, float | None]:
    block = (doc.device or {}).get("ceilings") or {}
    compute = (block.get("compute_flops_per_s") or {}).get(pipe)
    dram = (block.get("memory_bytes_per_s") or {}).get("dram")
    rec = next((r for r in doc.records if r.compute_pipe == pipe), None)
    if compute is None and rec is not None:
        compute = rec.peak_flops_per_s
    if dram is None and rec is not None:
        dram = rec.peak_bytes_per_s
    return compute, dram


def energy_view(docs: Sequence[Document], title: str | None = None) -> EnergyView:
    """The energy roofline of these documents (module docstring); points from records with `energy`."""
    points = [EnergyPoint(i, j, rec.label, float(rec.arithmetic_intensity), float(rec.energy["flops_per_j"]))
              for i, doc in enumerate(docs) for j, rec in enumerate(doc.records)
              if rec.energy and (rec.energy.get("flops_per_j") or 0) > 0
              and rec.arithmetic_intensity is not None and rec.arithmetic_intensity > 0]
    ais = [p.ai for p in points] or [1.0, 1000.0]
    x_range = (min(ais) / 10, max(ais) * 10)
    curves = []
    for i, doc in enumerate(docs):
        model = document_model(doc)
        if model is None:
            continue
        seen: set[tuple[str, float, float]] = set()
        for pipe, label in _doc_pipes(doc).items():
            compute, dram = _compute_and_dram(doc, pipe)
            figure_of = pipe if pipe in model.pj_per_flop else PIPE_FALLBACK.get(pipe, pipe)
            if compute is None or dram is None or (figure_of, compute, dram) in seen:
                continue  # fp16 and bf16 tensor pipes of one peak and one figure: one curve
            seen.add((figure_of, compute, dram))
            xs, ys = [], []
            for x in _intensities(x_range):
                power = power_roof_flops_per_s(model, pipe, x)
                rate = min(compute, dram * x, power if power is not None else math.inf)
                y = flops_per_j_roof(model, pipe, x, rate)
                if y is not None:
                    xs.append(x)
                    ys.append(y)
            if xs:
                curves.append(Curve(i, pipe, f"{label}: best FLOP/J", tuple(xs), tuple(ys)))
    values = [p.flops_per_j for p in points] + [y for c in curves for y in c.ys]
    if not values:
        from roofline.core.errors import UsageError

        raise UsageError("no energy to draw: run with --energy (and `roofline calibrate energy` for the roof)")
    y_range = (min(values) / 3, max(values) * 3)
    names = sorted({str((d.device or {}).get("name") or "device") for d in docs})
    return EnergyView(title or f"energy roofline: {', '.join(names)}", tuple(curves), tuple(points), x_range,
                      y_range)


def energy_caption(view: EnergyView) -> list[str]:
    """One line per point: its label and FLOP/J (the chart numbers them)."""
    return [f"{n}. {p.label}: {si(p.flops_per_j, 'FLOP/J')} at {p.ai:.3g} FLOP/B"
            for n, p in enumerate(view.points, start=1)]

