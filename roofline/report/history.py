"""The views of a history store: `history show` (each series as a sparkline with its spread, in 80 columns, or
JSON), `history detect`'s lines, and `history plot`'s files: a chart (PNG, SVG or PDF through matplotlib) or one
self-contained HTML page, chosen by the output's suffix (WRITERS).

Every number comes from the series and the judged changes (`roofline.history.detect`); this module only lays them
out. The chart and the page show, per series, the run medians over the runs (labelled by commit), the spread of
each run (its samples' quartiles: the noise band), the roofline time at the run's SM clock, and the changes.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from roofline.core.errors import UsageError
from roofline.core.files import atomic_write, refuse_existing
from roofline.core.format import duration, percent
from roofline.core.stats import mad, median
from roofline.history.detect import Judged
from roofline.history.series import Point, Series

# `history show` fits this many columns (a terminal's default; CI logs).
WIDTH = 80
# The sparkline's levels, lowest first.
BLOCKS = "▁▂▃▄▅▆▇█"
# The sparkline shows at most this many runs (the latest): the rest of the line holds the numbers.
SPARK_RUNS = 36
# A chart draws at most this many series, one panel each (a suite's records); more: name the ones to draw.
MAX_PANELS = 12
# A commit is shown by this many characters (git's short form).
SHORT_COMMIT = 8
# MAD to standard deviation for normal noise.
MAD_TO_SD = 1.4826


def value_text(value: float | None, metric: str) -> str:
    return duration(value) if metric == "time" else percent(value)


def confidence(p_value: float) -> str:
    """1 - p as a percentage, with p: '99.97% (p=3.1e-04)'."""
    return f"{1 - p_value:.2%} (p={p_value:.2g})"


def short(commit: str | None) -> str:
    return (commit or "?")[:SHORT_COMMIT]


def sparkline(values: Sequence[float]) -> str:
    """One block a value, scaled from the lowest (▁) to the highest (█); all equal: a flat middle line."""
    lo, hi = min(values), max(values)
    if hi <= lo:
        return BLOCKS[len(BLOCKS) // 2 - 1] * len(values)
    top = len(BLOCKS) - 1
    return "".join(BLOCKS[round((v - lo) / (hi - lo) * top)] for v in values)


def run_spread(values: Sequence[float]) -> float | None:
    """The runs' spread: the robust relative standard deviation of the run values (MAD x 1.4826 / median)."""
    mid = median(values)
    return MAD_TO_SD * mad(values) / abs(mid) if len(values) > 1 and mid else None


def _series_lines(s: Series, metric: str) -> list[str]:
    values = [v for v in s.values(metric) if v is not None]
    head = f"{s.name} · {s.gpu} · {len(s.points)} run{'s' * (len(s.points) != 1)}"
    head = head if len(head) <= WIDTH else head[:WIDTH - 1] + "…"
    if not values:
        return [head, "  no value in this metric (no roofline time)"]
    spread = run_spread(values)
    stats = (f"last {value_text(values[-1], metric)}  runs ±{percent(spread) if spread is not None else '-'}  "
             f"{value_text(min(values), metric)}–{value_text(max(values), metric)}")
    room = min(SPARK_RUNS, WIDTH - 4 - len(stats))  # the numbers whole; the sparkline takes what is left
    return [head, f"  {sparkline(values[-room:]):<{room}}  {stats}"]


def show_text(series: Sequence[Series], metric: str) -> str:
    """`history show`: two lines a series (its name, GPU and runs; the sparkline of its latest runs, the last
    value, the runs' spread and range), in WIDTH columns."""
    if not series:
        return "no series matched\n"
    lines = []
    for s in series:
        lines += _series_lines(s, metric)
    return "\n".join(lines) + "\n"


def point_dict(p: Point, metric: str) -> dict[str, Any]:
    r = p.run
    return {"run": r.id, "commit": r.commit, "branch": r.branch, "machine": r.machine, "device": r.device,
            "driver": r.driver, "created": r.created, "added": r.added, "median_s": p.median_s, "q1_s": p.q1_s,
            "q3_s": p.q3_s, "samples": p.n, "roofline_time_s": p.roofline_time_s,
            "roof_at_clock_s": p.roof_at_clock_s, "sm_clock_mhz": p.sm_clock_mhz,
            "power_limit_w": p.power_limit_w, "value": p.value(metric)}


def series_json(series: Sequence[Series], metric: str) -> str:
    """`history show --json`: every series with every point."""
    return json.dumps([{"key": s.key, "name": s.name, "gpu": s.gpu, "op": s.op, "metric": metric,
                        "spread": run_spread([v for v in s.values(metric) if v is not None] or [0.0]),
                        "points": [point_dict(p, metric) for p in s.points]} for s in series], indent=2) + "\n"


def detect_text(judged: Sequence[Judged], threshold: float) -> str:
    """`history detect`: each change as one line under its series, then the verdict."""
    lines = []
    for j in judged:
        if j.skipped:
            lines.append(f"{j.series.name} ({j.series.gpu}): not judged: {j.skipped}")
            continue
        if not j.changes:
            continue
        lines.append(f"{j.series.name} ({j.series.gpu}):")
        for f in j.changes:
            c = f.change
            also = f"; {', '.join(f.also)} there too" if f.also else ""
            gate = " FAIL" if f.failed else ""
            lines.append(f"  at {short(f.run.commit)} (run {c.index + 1} of {len(j.series.points)}"
                         f"): {f.direction} {c.size:+.1%}, {value_text(c.before, j.metric)} -> "
                         f"{value_text(c.after, j.metric)}, confidence {confidence(c.p_value)}{also}{gate}")
    judged_n = sum(1 for j in judged if not j.skipped)
    changes = sum(len(j.changes) for j in judged)
    failed = sum(1 for j in judged for f in j.changes if f.failed)
    lines.append(f"{changes} change{'s' * (changes != 1)} in {judged_n} series judged; {failed} worse by more "
                 f"than {threshold:.1%}: {'failed' if failed else 'passed'}")
    return "\n".join(lines) + "\n"


def detect_json(judged: Sequence[Judged], threshold: float) -> str:
    return json.dumps({"threshold": threshold, "failed": any(j.failed for j in judged),
                       "series": [j.to_dict() for j in judged]}, indent=2) + "\n"


# ---------------------------------------------------------------- the chart
def _panel(ax: Any, s: Series, j: Judged | None, metric: str) -> None:
    """One series: run values, the band of each run's quartiles, the roofline at the clock, the changes."""
    x = list(range(len(s.points)))
    scale, unit = (1e6, "µs") if metric == "time" else (100.0, "% of roofline")
    vals = [(v or 0.0) * scale for v in s.values(metric)]
    bands = [p.spread(metric) or (0.0, 0.0) for p in s.points]
    ax.fill_between(x, [b[0] * scale for b in bands], [b[1] * scale for b in bands], color="#9ecae1", alpha=0.5,
                    linewidth=0, label="quartiles of each run")
    ax.plot(x, vals, "o-", color="#08519c", markersize=3, linewidth=1, label="run median")
    if metric == "time" and any(p.roof_at_clock_s for p in s.points):
        ax.plot(x, [(p.roof_at_clock_s or float("nan")) * scale for p in s.points], "--", color="#636363",
                linewidth=1, label="roofline time at the run's clock")
    for f in j.changes if j else ():
        ax.axvline(f.change.index - 0.5, color="#cb181d" if f.worse else "#238b45", linewidth=1.2)
        ax.annotate(f"{f.change.size:+.1%} {short(f.run.commit)}", (f.change.index - 0.5, 1), xytext=(3, -3),
                    xycoords=("data", "axes fraction"), textcoords="offset points", fontsize=7, ha="left", va="top",
                    rotation=90)
    ax.set_title(f"{s.name} ({s.gpu})", fontsize=8, loc="left")
    ax.set_ylabel(unit, fontsize=7)
    step = max(1, len(x) // 10)
    ax.set_xticks(x[::step], [short(p.run.commit) for p in s.points][::step], fontsize=6, rotation=30)
    ax.tick_params(axis="y", labelsize=7)


def write_chart(path: Path, series: Sequence[Series], judged: Sequence[Judged], metric: str, force: bool) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from roofline.report.figures import save_figure

    by_key = {j.series.key: j for j in judged}
    fig = Figure(figsize=(9, 2.2 * len(series) + 0.4))
    axes = fig.subplots(len(series), 1, squeeze=False)[:, 0]
    for ax, s in zip(axes, series, strict=True):
        _panel(ax, s, by_key.get(s.key), metric)
    axes[0].legend(fontsize=6, loc="upper left")
    fig.suptitle(f"roofline history: {len(series)} series, {metric}", fontsize=9)
    fig.tight_layout()
    return save_figure(fig, path, exclusive=not force)


# ---------------------------------------------------------------- the page
SVG_W, SVG_H, PAD = 760, 170, 34


def _svg(s: Series, j: Judged | None, metric: str) -> str:
    """The series as an inline SVG: band, medians (each point with a hover title), roofline, changes."""
    vals = s.values(metric)
    bands = [p.spread(metric) for p in s.points]
    roofs = [p.roof_at_clock_s if metric == "time" else None for p in s.points]
    ys = [v for v in vals if v is not None] + [b for band in bands if band for b in band]
    ys += [r for r in roofs if r]
    lo, hi = (min(ys), max(ys)) if ys else (0.0, 1.0)
    hi = hi if hi > lo else lo + 1.0
    n = max(len(vals) - 1, 1)

    def px(i: float) -> float:
        return PAD + i / n * (SVG_W - 2 * PAD)

    def py(v: float) -> float:
        return SVG_H - PAD - (v - lo) / (hi - lo) * (SVG_H - 2 * PAD)

    parts = [f'<svg class="series" viewBox="0 0 {SVG_W} {SVG_H}" width="{SVG_W}" height="{SVG_H}" role="img">']
    ok = [(i, b) for i, b in enumerate(bands) if b]
    if ok:
        pts = [f"{px(i):.1f},{py(b[1]):.1f}" for i, b in ok] + [f"{px(i):.1f},{py(b[0]):.1f}" for i, b in ok[::-1]]
        parts.append(f'<polygon class="band" points="{" ".join(pts)}"/>')
    if any(roofs):
        pts = [f"{px(i):.1f},{py(r):.1f}" for i, r in enumerate(roofs) if r]
        parts.append(f'<polyline class="roof" points="{" ".join(pts)}"/>')
    line = [f"{px(i):.1f},{py(v):.1f}" for i, v in enumerate(vals) if v is not None]
    parts.append(f'<polyline class="median" points="{" ".join(line)}"/>')
    for i, (v, p) in enumerate(zip(vals, s.points, strict=True)):
        if v is not None:
            tip = f"{short(p.run.commit)}: {value_text(v, metric)} ({p.n} samples, {p.run.machine})"
            parts.append(f'<circle class="run" cx="{px(i):.1f}" cy="{py(v):.1f}" r="3"><title>{html.escape(tip)}'
                         "</title></circle>")
    for f in j.changes if j else ():
        x = px(f.change.index - 0.5)
        tip = f"{f.direction} {f.change.size:+.1%} at {short(f.run.commit)}, confidence {confidence(f.change.p_value)}"
        tip += "".join(f"; {a}" for a in f.also)
        parts.append(f'<line class="change {f.direction}" x1="{x:.1f}" x2="{x:.1f}" y1="{PAD / 2}" '
                     f'y2="{SVG_H - PAD / 2}"><title>{html.escape(tip)}</title></line>')
    parts.append(f'<text x="4" y="14">{html.escape(value_text(hi, metric))}</text>'
                 f'<text x="4" y="{SVG_H - 4}">{html.escape(value_text(lo, metric))}</text></svg>')
    return "".join(parts)


_STYLE = ("body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}section{margin:1em 0}"
          "h2{font-size:14px;margin:.2em 0}.band{fill:#9ecae1;opacity:.6}.median{fill:none;stroke:#08519c;"
          "stroke-width:1.5}.run{fill:#08519c}.roof{fill:none;stroke:#636363;stroke-dasharray:4 3}"
          ".change{stroke-width:2}.worse{stroke:#cb181d}.better{stroke:#238b45}text{font-size:10px;fill:#555}"
          "li.fail{color:#cb181d;font-weight:600}.hidden{display:none}")
_SCRIPT = ("document.getElementById('filter').addEventListener('input',function(e){var q=e.target.value."
           "toLowerCase();document.querySelectorAll('section.series').forEach(function(s){s.classList.toggle("
           "'hidden',s.dataset.name.toLowerCase().indexOf(q)<0)})});")


def _section(s: Series, j: Judged | None, metric: str) -> str:
    items = []
    for f in j.changes if j else ():
        also = f" ({', '.join(f.also)} there too)" if f.also else ""
        items.append(f'<li class="{"fail" if f.failed else f.direction}">{f.direction} {f.change.size:+.1%} at '
                     f"{html.escape(short(f.run.commit))}: {html.escape(value_text(f.change.before, metric))} → "
                     f"{html.escape(value_text(f.change.after, metric))}, confidence {confidence(f.change.p_value)}"
                     f"{html.escape(also)}</li>")
    note = f"<p>not judged: {html.escape(j.skipped)}</p>" if j and j.skipped else ""
    return (f'<section class="series" data-name="{html.escape(s.name)}"><h2>{html.escape(s.name)} · '
            f"{html.escape(s.gpu)} · {len(s.points)} runs</h2>{_svg(s, j, metric)}{note}"
            + (f'<ul class="changes">{"".join(items)}</ul>' if items else "") + "</section>")


def history_html(series: Sequence[Series], judged: Sequence[Judged], metric: str) -> str:
    """One self-contained page (nothing fetched): a filter box and, per series, its chart and changes."""
    from roofline._version import __version__

    by_key = {j.series.key: j for j in judged}
    body = "".join(_section(s, by_key.get(s.key), metric) for s in series)
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>roofline history</title>"
            f"<style>{_STYLE}</style></head><body><h1>roofline history</h1><p>{len(series)} series in {metric}; "
            f"roofline {html.escape(__version__)}. Line: run medians; band: each run's quartiles; dashed: the "
            "roofline time at the run's SM clock; red/green: changes worse/better.</p>"
            '<input id="filter" type="search" placeholder="filter series">'
            f"{body}<script>{_SCRIPT}</script></body></html>\n")


def write_page(path: Path, series: Sequence[Series], judged: Sequence[Judged], metric: str, force: bool) -> Path:
    return atomic_write(path, history_html(series, judged, metric), exclusive=not force)


Writer = Callable[[Path, Sequence[Series], Sequence[Judged], str, bool], Path]
# `history plot -o FILE`: the output's suffix picks the writer.
WRITERS: dict[str, Writer] = {".png": write_chart, ".svg": write_chart, ".pdf": write_chart, ".html": write_page}


def writer(path: str | os.PathLike[str], force: bool) -> tuple[Path, Writer]:
    """The writer of `path`'s suffix, the path checked as every output is (refused when it exists, without
    --force) before anything is read or drawn."""
    p = Path(path)
    found = WRITERS.get(p.suffix.lower())
    if found is None:
        raise UsageError(f"{p}: cannot tell what to write from '{p.suffix or '(no suffix)'}': use "
                         f"{', '.join(WRITERS)}")
    return refuse_existing(p, force), found
