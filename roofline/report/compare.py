"""`roofline compare` drawn: the table (one operator, or a suite's totals) and the horizontal bar chart.

Rendering only: every number is the comparison's (`analysis.compare`); nothing here computes a time or a cost.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from roofline.analysis.compare import NO_PRICE, UNSUPPORTED, Comparison, GPURow, SuiteComparison, SuiteRow
from roofline.ceilings.prices import Prices
from roofline.core.errors import RooflineError
from roofline.core.format import duration, joules, number, si
from roofline.core.record import shape_text
from roofline.report.figures import DPI, figure_format, save_figure
from roofline.report.style import BOUND_COLOURS, FONT_PT, TITLE_PT, bound_colour
from roofline.report.text import WIDE, Column, FitTable


# ---------------------------------------------------------------- tables
def money(x: float | None, currency: str) -> str:
    """0.01234 -> '0.0123 USD'; large sums keep their cents: 1234.5 -> '1,234.50 USD'."""
    if x is None:
        return "-"
    if x >= 100:
        return f"{x:,.2f} {currency}"
    return f"{x:.3g} {currency}"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def _cost_columns(prices: Prices | None, what: str) -> list[Column]:
    if prices is None:
        return []
    c = prices.currency
    return [Column(f"{c}/\nGPU-h"), Column(f"{c}/1M\n{what}"), Column("vs\ncheapest")]


def _cost_cells(r: GPURow | SuiteRow, prices: Prices | None) -> list[str]:
    if prices is None:
        return []
    if r.status != "ok":
        return ["-", "-", "-"]
    if r.price_per_hour is None:
        return [NO_PRICE, NO_PRICE, "-"]
    return [f"{r.price_per_hour:g}", number(r.cost_per_million), _ratio(r.cost_vs_cheapest)]


def _caption(prices: Prices | None, unsupported: list[tuple[str, str]], notes: tuple[str, ...],
             suite: bool = False, measured: str | None = None, shared: tuple[str, ...] = ()) -> list[str]:
    lines = ["roofline time: a lower bound, max(FLOPs / peak, bytes / bandwidth); vs fastest: time / the fastest "
             "GPU's time"]
    if measured is not None:
        lines.append(f"measured: median times from {measured}; % of roof = roofline time / measured time"
                     + ("; n/N: only n of N entries measured (no total)" if suite else ""))
    if prices is not None:
        src = f" ({prices.source})" if prices.source else ""
        lines.append(f"prices: {prices.currency} per GPU-hour as of {prices.date}, {prices.path}{src}")
        lines.append(f"cost per 1M {'runs' if suite else 'calls'} = roofline time x price / 3600 x 1e6 "
                     f"(a lower bound, as the time is); vs cheapest: cost / the cheapest GPU's cost")
    lines += shared
    lines += [f"{UNSUPPORTED}: {gpu}: {why}" for gpu, why in unsupported]
    lines += [f"note: {n}" for n in notes]
    return lines


def _shared(values: list[str | None], what: str) -> tuple[bool, list[str]]:
    """Whether every supported GPU has the same `what` (then a caption line says it, not a column)."""
    seen = {v for v in values if v}
    if len(seen) == 1:
        return True, [f"{what}: {next(iter(seen))} for every GPU"]
    return False, []


def _render_op(c: Comparison, wide: bool = False) -> FitTable:
    measured = c.measured_path is not None
    title = (f"compare: {c.label} ({shape_text(c.params)})\n{si(c.flops, 'FLOP')}, {si(c.bytes, 'B')}, "
             f"AI {number(c.arithmetic_intensity)} FLOP/B")
    ok = [r for r in c.rows if r.status == "ok"]
    one_roof, roof_line = _shared([r.roof for r in ok], "roof")
    one_pipe, pipe_line = _shared([r.record.compute_pipe_label if r.record else None for r in ok], "pipe")
    cols = [Column("#"), Column("GPU", left=True),
            Column("roof", left=True, drop=WIDE if one_roof else 0, quiet=one_roof), Column("bound", left=True, drop=1),
            Column("pipe", left=True, drop=WIDE if one_pipe else 3, quiet=one_pipe),
            Column("predicted\ntime" if any(r.time_source == "predicted" for r in ok) else "roofline\ntime"),
            Column("vs\nfastest"), Column("attainable\nTFLOP/s", drop=2), Column("roof\nGB/s", drop=2)]
    if measured:
        cols += [Column("measured\ntime"), Column("% of\nroof")]
    energy = any(r.measured_energy_j is not None for r in c.rows)
    if energy:
        cols += [Column("measured\nJ/call", note="measured J/call: the NVML energy counter (--energy)")]
        if c.tokens:
            cols += [Column("measured\nJ/token", note=f"measured J/token: J/call / {c.tokens} tokens per call "
                            "(--tokens-per-call)")]
    cols += _cost_columns(c.prices, "calls")
    rows = []
    for r in c.rows:
        if r.status != "ok":
            cells = ["-", r.gpu, "-", "-", "-", UNSUPPORTED, "-", "-", "-"]
        else:
            rec = r.record
            pipe = (rec.compute_pipe_label if rec else None) or "-"
            cells = [str(r.rank), r.gpu, r.roof or "-", r.bound or "-", pipe,
                     duration(r.time_s), _ratio(r.vs_fastest), number((r.attainable_flops_per_s or 0) / 1e12),
                     f"{(rec.peak_bytes_per_s if rec else 0) / 1e9:.4g}"]
        if measured:
            frac = r.roofline_fraction
            cells += [duration(r.measured_time_s), f"{frac:.0%}" if frac is not None else "-"]
        if energy:
            cells.append(joules(r.measured_energy_j))
            if c.tokens:
                cells.append(joules(r.measured_j_per_token))
        rows.append(cells + _cost_cells(r, c.prices))
    caption = _caption(c.prices, [(r.gpu, r.reason) for r in c.rows if r.status != "ok"], c.notes,
                       measured=c.measured_path, shared=(*roof_line, *pipe_line))
    return FitTable(cols, rows, title=title, caption=caption, wide=wide)


def _top_op(r: SuiteRow) -> str:
    """The operator that takes most of a GPU's total, with its share: 'gemv 61%'."""
    if r.status != "ok" or not r.by_op or not r.time_s:
        return "-"
    op, t = max(r.by_op.items(), key=lambda kv: kv[1])
    return f"{op} {t / r.time_s:.0%}"


def _render_suite(c: SuiteComparison, wide: bool = False) -> FitTable:
    measured = c.measured_path is not None
    one_roof, roof_line = _shared([r.roof for r in c.ranked], "roof")
    title = f"compare: suite {c.suite} ({len(c.entries)} entries, per run of the whole suite)"
    cols = [Column("#"), Column("GPU", left=True),
            Column("roof", left=True, drop=WIDE if one_roof else 0, quiet=one_roof),
            Column("total\ntime"), Column("vs\nfastest"), Column("attainable\nTFLOP/s", drop=3),
            Column("mem-\nbound", drop=2, note="mem-bound: share of the total spent in memory-bound entries"),
            Column("most time in", left=True, wrap=True, want=0, drop=1),
            *(Column(f"{op}\nµs", drop=4, note="OP µs: the roofline time of that operator's entries, summed")
              for op in c.op_names)]
    if measured:
        cols += [Column("measured\ntime"), Column("% of\nroof")]
    cols += _cost_columns(c.prices, "runs")
    n = len(c.entries)
    rows = []
    for r in c.rows:
        if r.status != "ok":
            cells = ["-", r.gpu, r.roof or "-", UNSUPPORTED, "-", "-", "-", "-", *("-" for _ in c.op_names)]
        else:
            share = r.memory_bound_share
            cells = [str(r.rank), r.gpu, r.roof or "-", duration(r.time_s), _ratio(r.vs_fastest),
                     number((r.attainable_flops_per_s or 0) / 1e12), f"{share:.0%}" if share is not None else "-",
                     _top_op(r), *(number(r.by_op[op] * 1e6) if op in r.by_op else "-" for op in c.op_names)]
        if measured:
            if r.measured_entries == n and r.time_s and r.measured_time_s:
                cells += [duration(r.measured_time_s), f"{r.time_s / r.measured_time_s:.0%}"]
            else:
                cells += [f"{r.measured_entries}/{n}" if r.measured_entries else "-", "-"]
        rows.append(cells + _cost_cells(r, c.prices))
    caption = _caption(c.prices, [(r.gpu, r.reason) for r in c.rows if r.status != "ok"], c.notes, True,
                       c.measured_path, shared=tuple(roof_line))
    return FitTable(cols, rows, title=title, caption=caption, wide=wide)


def render_compare(c: Comparison | SuiteComparison, wide: bool = False) -> FitTable:
    """The ranking as a table that fits the console (every column with `wide`): fastest GPU first,
    unsupported GPUs last. Rendering only: the numbers are the comparison's."""
    return _render_suite(c, wide) if isinstance(c, SuiteComparison) else _render_op(c, wide)


# ---------------------------------------------------------------- chart
OP_COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974",
              "#64b5cd")  # one per operator name in a suite's stacked bars (cycled)
MEASURED_COLOUR = "#1a1a1a"


def _bar_text(ax: Any, y: float, x: float, text: str, gid: str) -> None:
    ax.annotate(text, xy=(x, y), xytext=(3, 0), textcoords="offset points", va="center", ha="left", fontsize=8,
                gid=gid)


def plot_compare(c: Comparison | SuiteComparison, path: str | os.PathLike[str]) -> Path:
    """A horizontal bar chart, fastest GPU on top: roofline time per GPU (stacked by operator for a suite;
    measured times as diamonds) and, with prices, cost per million calls. PNG, SVG or PDF by suffix."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure_format(path)  # a bad suffix fails before any drawing
    ok: list[GPURow | SuiteRow] = list(c.ranked)
    if not ok:
        raise RooflineError("no GPU can run it: nothing to draw")
    bad = [r for r in c.rows if r.status != "ok"]
    labels = [r.gpu for r in ok]
    ys = list(range(len(ok)))
    priced = c.prices is not None
    suite = isinstance(c, SuiteComparison)
    with matplotlib.rc_context({"font.size": FONT_PT, "axes.titlesize": FONT_PT + 1, "svg.fonttype": "none",
                                "pdf.fonttype": 42}):
        fig = Figure(figsize=(11.0 if priced else 7.5, 1.6 + 0.38 * len(ok)), dpi=DPI, layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(1, 2 if priced else 1, sharey=True, squeeze=False)[0]
        ax = axes[0]
        top = max(r.time_s or 0.0 for r in ok)
        if isinstance(c, SuiteComparison):
            left = [0.0] * len(ok)
            for k, op in enumerate(c.op_names):
                widths = [r.by_op.get(op, 0.0) * 1e6 for r in c.ranked]  # the same rows as `ok`, typed SuiteRow
                bars = ax.barh(ys, widths, left=left, color=OP_COLOURS[k % len(OP_COLOURS)], label=op, height=0.7)
                for bar, gpu in zip(bars, labels, strict=True):
                    bar.set_gid(f"bar:op:{op}:{gpu}")
                left = [a + b for a, b in zip(left, widths, strict=True)]
            fig.legend(loc="outside lower left", fontsize=8, ncol=min(len(c.op_names), 6), frameon=False)
        else:
            bars = ax.barh(ys, [(r.time_s or 0.0) * 1e6 for r in c.ranked], height=0.7,
                           color=[bound_colour(r.bound or "") for r in c.ranked])
            for bar, gpu in zip(bars, labels, strict=True):
                bar.set_gid(f"bar:time:{gpu}")
            from matplotlib.patches import Patch

            bounds = [b for b in BOUND_COLOURS if any(r.bound == b for r in c.ranked)]
            fig.legend(handles=[Patch(color=BOUND_COLOURS[b], label=f"{b}-bound") for b in bounds],
                       loc="outside lower left", fontsize=8, ncol=len(bounds), frameon=False)
        for y, r in zip(ys, ok, strict=True):
            end = r.time_s or 0.0
            complete = not isinstance(r, SuiteRow) or r.measured_entries == len(r.entry_times)
            if r.measured_time_s is not None and complete:  # a suite's partial measurement is not drawn
                ax.plot([r.measured_time_s * 1e6], [y], marker="D", color=MEASURED_COLOUR, markersize=6,
                        linestyle="none", gid=f"measured:{r.gpu}", zorder=5)
                end = max(end, r.measured_time_s)
                top = max(top, end)
            _bar_text(ax, y, end * 1e6, f"{duration(r.time_s)}  ({_ratio(r.vs_fastest)})", f"label:time:{r.gpu}")
        ax.set_xlim(0, top * 1e6 * 1.35)
        ax.set_yticks(ys, labels)
        ax.invert_yaxis()
        what = "per run of the suite" if suite else "per call"
        ax.set_xlabel(f"roofline time {what} (µs)" + ("; ◆ measured" if c.measured_path else ""))
        ax.set_title("time (lower is better)", loc="left")
        if priced:
            assert c.prices is not None
            cax = axes[1]
            costs = [r.cost_per_million for r in ok]
            cbars = cax.barh(ys, [x or 0.0 for x in costs], height=0.7, color="#5a5a5a")
            for bar, r in zip(cbars, ok, strict=True):
                bar.set_gid(f"bar:cost:{r.gpu}")
            ctop = max((x for x in costs if x is not None), default=1.0)
            for y, r, x in zip(ys, ok, costs, strict=True):
                text = NO_PRICE if x is None else money(x, c.prices.currency)
                _bar_text(cax, y, x or 0.0, text, f"label:cost:{r.gpu}")
            cax.set_xlim(0, ctop * 1.45)
            cax.set_xlabel(f"{c.prices.currency} per million {'runs' if suite else 'calls'} "
                           f"(prices as of {c.prices.date})")
            cax.set_title("cost (lower is better)", loc="left")
        for a in axes:
            for side in ("top", "right"):
                a.spines[side].set_visible(False)
            a.grid(True, axis="x", color="#e3e3e3", linewidth=0.6)
            a.set_axisbelow(True)
        subject = f"suite {c.suite}" if isinstance(c, SuiteComparison) else c.label
        fig.suptitle(f"Which GPU? {subject}", x=0.01, ha="left", fontsize=TITLE_PT, fontweight="bold")
        if bad:
            ax.set_title(f"{UNSUPPORTED}: " + ", ".join(r.gpu for r in bad), loc="right", fontsize=8,
                         color="#555555").set_gid("unsupported")
        return save_figure(fig, path, title=f"Which GPU? {subject}", pad_inches=0.15, facecolor="white")
