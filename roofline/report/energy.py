"""The energy model's table (`roofline calibrate energy`); a record's energy rows are in `report.rows`.
Rendering only: the figures are `core.energy`'s and `measuring.energy`'s."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roofline.core.format import si
from roofline.report.text import Column, FitTable

if TYPE_CHECKING:
    from roofline.core.energy import EnergyModel


def energy_model_table(model: EnergyModel, details: dict[str, Any]) -> FitTable:
    """Each calibration kernel's power measured and as the fitted model gives it, then the model's figures."""
    cols = [Column("kernel", left=True), Column("power\nW"), Column("model\nW"), Column("SM\nMHz"),
            Column("rate", left=True)]
    cells = []
    for row, pt in zip(details.get("kernels", []), model.points, strict=False):
        rate = ", ".join([si(v, "FLOP/s") for v in pt.flops_per_s.values()] +
                         [f"{what} {si(v, 'B/s')}" for what, v in (("read", pt.read_bytes_per_s),
                                                                   ("write", pt.write_bytes_per_s)) if v])
        cells.append([row["name"], f"{row['power_w']:.0f}", f"{row.get('predicted_power_w', 0):.0f}",
                      f"{row['sm_mhz']:.0f}" if row.get("sm_mhz") else "-", rate])
    by_op: dict[str, list[dict[str, Any]]] = {}
    for row in details.get("operators", []):  # measured after the fit: the watts the model's terms leave out
        by_op.setdefault(row["op"], []).append(row)
    for op, rows in by_op.items():  # one line an operator: the means over its shapes, and their spread
        ok = [r for r in rows if "op_w" in r]
        if not ok:
            cells.append([f"{op} (own W)", "-", "-", "-", f"not measured: {rows[0].get('error', '?')}"[:60]])
            continue
        power, own = (sum(r[k] for r in ok) / len(ok) for k in ("power_w", "op_w"))
        spread = (f" ({min(r['op_w'] for r in ok):+.0f}..{max(r['op_w'] for r in ok):+.0f}, {len(ok)} shapes)"
                  if len(ok) > 1 else "")
        cells.append([f"{op} (own W)", f"{power:.0f}", f"{power - own:.0f}", "-", f"{own:+.0f} W its own{spread}"])
    figures = [f"{k.replace('_dense_tflops', '')} {v:.3g} pJ/FLOP" for k, v in model.pj_per_flop.items()]
    figures.append(f"HBM read {model.pj_per_byte_read:.3g}, write {model.pj_per_byte_written:.3g}"
                   + (f", read+write overlap {model.pj_per_byte_mixed:.3g}" if model.pj_per_byte_mixed else "")
                   + " pJ/B")
    idle = f", idle {model.idle_w:.0f} W" if model.idle_w else ""
    active = f", +{model.active_w:.0f} W while a kernel runs" if model.active_w else ""
    title = (f"energy model: {'; '.join(figures)}; static {model.static_w:.0f} W{idle}{active}; cap "
             f"{model.power_cap_w:.0f} W"
             + (f"; fit residual {model.residual:.1%}" if model.residual is not None else ""))
    return FitTable(cols, cells, title=title)
