"""Terminal views of a profile: rich renderables (nothing printed here) that read in 80 columns, rendered from
its view model (`analysis.profile_view.ProfileView`: every number is computed there, once).

`profile_views(view, width)` is what `roofline profile` prints: the summary header, the top records by total
time, one roll-up (by op type, by module, or by kernel) and the what-if.

Tables: numbers right-aligned in their own columns, units in the headers, never cut or wrapped; the text
columns (op, module, kernel, fusion) take the width that is left and are shortened first (a module from the
left, at a dot, keeping the layer index: 'layers.0.…q_proj'). Timed profiles rank by measured time, analytic
ones by roofline time, said "predicted".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from roofline.analysis.predict import wide_interval_note
from roofline.analysis.profile_view import ProfileView
from roofline.analysis.utilization import TIMES
from roofline.analysis.whatif import BACKWARD_MARK, KIND_ORDER, KINDS, WhatIf
from roofline.core.format import count, duration, percent, si
from roofline.core.model import above_roof, pipe_label
from roofline.core.record import PHASES, ROOT_MODULE, Record
from roofline.core.summary import StepPrediction, Utilization
from roofline.report.caveats import timing_caveats

ROOT = ROOT_MODULE  # the module name shown for ops the root module runs itself
ELLIPSIS = "…"
# Beside a "% of roof" above the roof: that op's roof or model is wrong (core.model.above_roof).
ABOVE_MARK = "!"
TEXT_MIN = 10  # a text column never gets less than this, whatever the width asks


# -- formatting ---------------------------------------------------------------------------------------------

def time_unit(values: Sequence[float | None]) -> tuple[float, str]:
    """The unit a column of seconds reads in: ns below 0.1 µs (toy models), µs below 100 ms, ms below 100 s,
    else s: at most 6 digits, and the largest value never 0.00."""
    top = max((abs(v) for v in values if v is not None), default=0.0)
    if 0 < top < 1e-7:
        return 1e9, "ns"
    if top < 0.1:
        return 1e6, "µs"
    return (1e3, "ms") if top < 100 else (1.0, "s")


def fixed(x: float | None) -> str:
    """A number without exponent: 12,345 / 12.3 / 1.23 / 0.01; None -> '-'."""
    if x is None:
        return "-"
    if abs(x) >= 99.95:  # what rounds to 100.0 reads 100
        return f"{x:,.0f}"
    return f"{x:.1f}" if abs(x) >= 9.995 else f"{x:.2f}"


# Marks a module cell ends with, kept whole whatever is cut: a backward op's module ('(root) [bwd]' read
# '…oot) [bwd]').
MARKS = (BACKWARD_MARK,)
# A module path's components: split at its dots, but not inside an index set ('layers.{0..15}.mlp').
_PARTS = re.compile(r"(?:\{[^}]*\}|[^.{])+")


def _is_index(part: str) -> bool:
    """A layer's index ('3') or a set of them ('{0..15}': analysis/repeats.py)."""
    return part.isdigit() or (part.startswith("{") and part.endswith("}"))


def shorten_left(path: str, width: int) -> str:
    """A module path in `width` columns, cut where rows of one table read alike and kept where they differ:
    its mark (' [bwd]') always; the common head ('model.', the root's class) first; then the components between
    its last layer index and its own name ('layers.0.…q_proj': '…self_attn.q_proj' read the same for every
    layer); then the middle of its own name, whose first word and end tell modules apart
    ('layers.0.post…layernorm' and 'layers.0.input_layernorm': both read 'layers.0.…layernorm'). A cut is
    marked '…'; a path never starts at a plain index ('…0.mlp' would read as a cut number)."""
    if len(path) <= width:
        return path
    mark = next((m for m in MARKS if path.endswith(m) and len(path) > len(m)), "")
    body, room = path[:len(path) - len(mark)], width - len(mark)
    if room < 1:
        return shorten_right(path, width)
    return next((f + mark for f in _forms(body, room) if len(f) <= room), shorten_right(body, room) + mark)


def _forms(body: str, room: int) -> list[str]:
    """The shortened forms of a module path, the most telling first (shorten_left), down to `room` columns."""
    parts = _PARTS.findall(body)
    n, name = len(parts), parts[-1] if parts else body
    index = max((i for i, p in enumerate(parts) if _is_index(p) and 0 < i < n - 1), default=None)
    tails = [ELLIPSIS + ".".join(parts[i:]) for i in range(1, n) if not parts[i].isdigit()]
    # its own name alone: whole after a cut head, then cut in its middle (its own '…' says so)
    alone = [ELLIPSIS + name] * (n > 1) + [_cut(name, r) for r in range(len(name) - 1, 0, -1)]
    if index is None:
        return tails + alone
    layer = ".".join(parts[index - 1:index + 1])
    forms = [*tails[:index - 1], ".".join(parts[index - 1:])]  # the head cut, the layer kept
    forms += [f"{layer}.{ELLIPSIS}{'.'.join(parts[j:])}" for j in range(index + 2, n)]  # and the middle
    forms += [f"{layer}.{ELLIPSIS if index < n - 2 else ''}{_cut(name, r)}"
              for r in range(len(name) - 1, MIN_NAME - 1, -1)]  # and the middle of its own name
    return forms + tails[index - 1:] + alone  # the layer dropped: '…{0..15}.mlp', '…mlp.down_proj'


# The fewest characters of a module's own name worth showing after its layer index; below it the name alone.
MIN_NAME = 6


def _cut(name: str, room: int) -> str:
    """A module's own name in `room` columns, its middle cut: its first word and the longest end of whole
    words that fits ('post…layernorm'), else its first and last characters ('LlamaF…usalLM')."""
    if len(name) <= room:
        return name
    words = name.split("_")
    for j in range(1, len(words)):
        end = "_".join(words[j:])
        if len(words[0]) + 1 + len(end) <= room:
            return words[0] + ELLIPSIS + end
    if room < 2:
        return ELLIPSIS[:room]
    head = room // 2
    return name[:head] + ELLIPSIS + name[len(name) - (room - 1 - head):]


def shorten_right(name: str, width: int) -> str:
    return name if len(name) <= width else name[:max(width - 1, 0)] + ELLIPSIS


def short_kernel(name: str) -> str:
    """A device kernel's function name without 'void', namespaces, template and call arguments:
    'void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)' -> 'vectorized_elementwise_kernel'."""
    s = name.removeprefix("void ").replace("(anonymous namespace)::", "").strip()
    s = re.match(r"[^<(]*", s).group(0).rsplit("::", 1)[-1].strip()  # type: ignore[union-attr]
    return s or name


@dataclass(frozen=True)
class Column:
    header: str  # may hold a second line: "time\nµs"
    numeric: bool = True  # right-aligned, never wrapped
    shorten: Callable[[str, int], str] | None = None  # how a text column gives up width
    last: bool = False  # keeps LAST_LEAD columns more than the other text columns (an op name: what the row is)
    least: Callable[[str], int] | None = None  # the fewest columns a cell reads in (TEXT_MIN without)


# A `last` column (the op) gives up width only once the other text columns are this much narrower than it,
# then alike: the op says what the row is, but the module its place ('sdpa_flash_for_cpu_backward' whole left
# 11 columns to its module, which read '…oot) [bwd]').
LAST_LEAD = 6


def module_least(cell: str) -> int:
    """The fewest columns a module cell reads in: its mark and the start of its own name ('(root) [bwd]'
    whole)."""
    mark = next((m for m in MARKS if cell.endswith(m) and len(cell) > len(m)), "")
    return len(mark) + min(len(cell) - len(mark), MIN_NAME + 1)


def table(title: str, columns: list[Column], rows: list[list[str]], width: int, caption: str | None = None,
          styles: list[str] | None = None) -> Table:
    """A table that fits `width` columns: text columns shortened to the width the numbers leave, a column at a
    time from the widest (a `last` one counted LAST_LEAD narrower), each to at least its `least` cell and
    TEXT_MIN (past that rich wraps the text, never the numbers). Cells are plain text (a kernel name's brackets
    are not markup); `styles`: one per row."""
    widths = [max([len(x) for x in c.header.split("\n")] + [len(r[j]) for r in rows]) for j, c in enumerate(columns)]
    floors = [max([TEXT_MIN, *(len(x) for x in c.header.split("\n"))] + [c.least(r[j]) for r in rows if c.least])
              for j, c in enumerate(columns)]
    full = list(widths)
    excess = sum(widths) + len(columns) - 1 - width
    while excess > 0:
        can = [j for j, c in enumerate(columns) if c.shorten is not None and widths[j] > floors[j]]
        if not can:
            break
        j = max(can, key=lambda j: (widths[j] - LAST_LEAD * columns[j].last, -j))
        widths[j] -= 1
        excess -= 1
    for j, c in enumerate(columns):
        if widths[j] < full[j] and c.shorten is not None:
            for r in rows:
                r[j] = c.shorten(r[j], widths[j])
    longest = max(len(title), len(caption or ""))
    t = Table(title=title, caption=caption, box=box.SIMPLE_HEAD, show_edge=False, padding=(0, 0),
              title_justify="left", caption_justify="left", min_width=min(longest, width))  # titles unwrapped
    for c in columns:
        if c.numeric:
            t.add_column(c.header, justify="right", no_wrap=True)
        else:
            t.add_column(c.header, overflow="fold")
    for i, r in enumerate(rows):
        t.add_row(*(Text(x) for x in r), style=styles[i] if styles else None)
    return t


def _module(path: str) -> str:
    return path or ROOT


MODULE_LINE = "  in "  # a fusion's second line: its module


def _fusion_cell(cell: str, width: int) -> str:
    """A fusion's module line shortened from the left; its title left whole (rich wraps it at its spaces)."""
    if cell.startswith(MODULE_LINE):
        return MODULE_LINE + shorten_left(cell[len(MODULE_LINE):], max(width - len(MODULE_LINE), 2))
    return cell


# -- views --------------------------------------------------------------------------------------------------

def utilization_line(u: Utilization | None) -> str | None:
    """'MFU 41.3%, MBU 12.0% (kernel time, datasheet BF16 tensor 989 TFLOP/s), 4.21k tokens/s': the first time
    and roof that have a figure (analysis/utilization.py); None when none has."""
    if u is None:
        return None
    for kind in TIMES:
        for roof in ("datasheet", "measured"):
            mfu = (u.mfu.get(kind) or {}).get(roof)
            mbu = (u.mbu.get(kind) or {}).get(roof)
            if mfu is None and mbu is None:
                continue
            said = ", ".join(f"{name} {percent(x)}" for name, x in (("MFU", mfu), ("MBU", mbu)) if x is not None)
            pipe = u.peak.pipe if u.peak is not None else None
            rate = u.peak.flops_per_s.get(roof) if u.peak is not None else None
            where = f"{roof} {pipe_label(pipe)} {si(rate, 'FLOP/s')}" if rate and pipe else roof
            tokens = (u.tokens_per_s or {}).get(kind)
            named = "roofline" if kind == "predicted" else kind  # an analytic run's: the sum of roofline times
            return f"{said} ({named} time, {where})" + (f", {si(tokens).replace(' ', '')} tokens/s" if tokens else "")
    return None


def _from_db(view: ProfileView) -> bool:
    """An analytic profile with an operator database's prediction beside the bound (prediction_pairs): its sums
    of roofline times are named the bound, not "predicted", which the database's times are."""
    p = view.summary.prediction
    return bool(p is not None and p.calls_from_db)


def header(view: ProfileView, width: int = 80) -> Text:
    """Name, device, wall and kernel time, GPU idle, coverage, ops without formula, FLOPs, the collectives'
    share: packed in lines of `width`; the summary's notes after them."""
    s, predicted = view.summary, view.predicted
    where = s.time_device or ("analytic, no data" if predicted else "")
    out = Text(f"{s.name or 'profile'}: {'predicted' if predicted else 'measured'} on "
               f"{view.device or 'an unknown device'}" + (f" ({where})" if where else ""), style="bold")
    pairs: list[str] = []
    if predicted:
        low = bool(s.lower_bound)  # ops without formula hold time the sum leaves out
        # with an operator database's prediction beside it (prediction_pairs), the sum is the bound, named so
        what = "roofline step" if _from_db(view) else "predicted step"
        pairs.append(f"{what} {'at least ' if low else ''}{duration(view.total_s)} (sum of roofline times"
                     + ("; a lower bound: ops without formula" if low else "") + ")")
        cov = s.analytic_coverage
        if cov is not None and cov.time is not None:
            pairs.append(f"coverage {percent(cov.time, nonzero=True)} of the time, "
                         f"{percent(cov.calls, nonzero=True)} of calls")
    else:
        if s.wall_s is not None:
            plain = s.wall_uninstrumented_s
            pairs.append(f"wall {duration(s.wall_s)}" + (f" (plain call {duration(plain)})" if plain else ""))
        if s.kernel_time_s is not None:
            pairs.append(f"kernel time {duration(s.kernel_time_s)}")
        if s.gpu_idle_s is not None:
            wall = s.wall_s
            pairs.append(f"GPU idle {duration(s.gpu_idle_s)}" + (f" ({percent(s.gpu_idle_s / wall, 0)} of wall)"
                                                                   if wall else ""))
        if s.coverage is not None:
            pairs.append(f"coverage {percent(s.coverage, nonzero=True)}")
    missing = s.without_formula
    calls = sum(int(m.calls or 0) for m in missing)
    pairs.append(f"ops without formula {len(missing)}"
                 + (f" ({count(calls)} call{'' if calls == 1 else 's'})" if missing else ""))
    if s.flops is not None:
        pairs.append(f"FLOPs {si(s.flops)}" + (f" (matmul {si(s.flops_matmul)})" if s.flops_matmul else ""))
    if s.bytes is not None:
        pairs.append(f"bytes {si(s.bytes, 'B')}")
    comm = s.communication
    if comm is not None:
        share = comm.roofline_share if predicted else comm.share
        pairs.append(f"communication {percent(share, nonzero=True)} ({count(comm.calls or 0)} "
                     f"collective call{'' if comm.calls == 1 else 's'})")
    util = utilization_line(s.utilization)
    if util:
        pairs.append(util)
    phases = s.phases
    if len(phases) > 1:
        pairs.append("phases " + ", ".join(
            f"{name} {duration(phases[name].roofline_time_s if predicted else phases[name].time_s)}"
            for name in PHASES if name in phases))
    if s.regions:
        pairs.append("regions " + ", ".join(sorted(s.regions)))
    pairs.append(f"{count(view.records)} records, {count(view.calls)} calls")
    pairs += prediction_pairs(s.prediction)
    line = ""
    for p in pairs:
        if line and len(line) + 3 + len(p) > width:
            out.append("\n" + line)
            line = ""
        line = f"{line}   {p}" if line else p
    if line:
        out.append("\n" + line)
    for note in s.notes:
        out.append("\n" + note, style="dim")
    return out


def prediction_pairs(p: StepPrediction | None) -> list[str]:
    """The header's predicted step (analysis/predict_step.py): the kernels' prediction and interval, beside the
    bound and the measured kernel time, and where it came from."""
    if p is None or p.predicted_kernel_time_s is None:
        return []
    if not p.calls_from_db:  # no database (or none of its families): the bound, said in one line
        return [f"prediction: {p.prediction_source}"]
    k = p.predicted_kernel_time_s
    measured = p.measured_kernel_time_s
    out = [f"predicted kernels {duration(k)} ({duration(p.predicted_kernel_low_s)}-"
           f"{duration(p.predicted_kernel_high_s)}), bound {duration(p.bound_time_s)}"]
    if measured and k:  # its own pair: the header packs pairs in 80 columns
        lo, hi = p.predicted_kernel_low_s or 0.0, p.predicted_kernel_high_s or 0.0
        out.append(f"measured {measured / k:.2f}x the prediction ({'inside' if lo <= measured <= hi else 'outside'} "
                   "its interval)")
    if p.predicted_launch_gaps_s:
        out.append(f"eager step {duration(p.predicted_step_s)} with launch gaps, if the host keeps up")
    out.append(f"predicted from {p.prediction_source}")
    return out


def top_table(view: ProfileView, width: int = 80) -> Table:
    """The top records by total time: share of the step, total time, calls, op, module, bound, % of roof and
    headroom (total time - total roofline time); predicted: share, time, calls, op, module, bound, FLOP/B.
    With counters (`profile --counters`) each record's counted bytes over the minimum."""
    predicted, lines, basis = view.predicted, view.top, view.counters_basis
    scale, unit = time_unit([x.time_s for x in lines])
    hscale, hunit = time_unit([x.headroom_s for x in lines])
    cols = [Column("share"), Column(f"time\n{unit}"), Column("calls"),
            Column("op", False, shorten_right, last=True), Column("module", False, shorten_left, least=module_least),
            Column("bound", False)]
    cols += [Column("FLOP/B")] if predicted else [Column("roof\n%"), Column(f"headroom\n{hunit}")]
    cols += [Column("bytes\n×min")] if basis is not None else []
    pred = any(x.predicted_s is not None for x in lines)
    cols += [Column(f"pred\n{unit}")] if pred else []
    rows = []
    for x in lines:
        # the op name whole unless the table must shorten it ('sdpa_flash_for_cpu_backward' was cut at 18)
        row = [percent(x.share, nonzero=True), fixed(x.time_s * scale), count(x.calls), x.key,
               _module(x.module), x.bound or "-"]
        if predicted:
            row.append(fixed(x.intensity))
        else:
            row += [percent(x.roof_fraction, 0, nonzero=True) + (ABOVE_MARK if above_roof(x.roof_fraction) else ""),
                    fixed(x.headroom_s * hscale) if x.headroom_s is not None else "-"]
        if basis is not None:
            row.append(f"{x.excess_traffic:.2f}" if x.excess_traffic is not None else "-")
        if pred:
            row.append(fixed(x.predicted_s * scale) if x.predicted_s is not None else "-")
        rows.append(row)
    what = ("roofline time" if _from_db(view) else "predicted time (roofline)") if predicted else "measured time"
    caption = None if predicted else "headroom: time - roofline time"
    if not predicted and any(above_roof(x.roof_fraction) for x in lines):
        caption = f"{caption}; {ABOVE_MARK}: above its roof (its roof or model is wrong)"
    if basis is not None:
        caption = f"{caption + '; ' if caption else ''}bytes ×min: ncu {basis} bytes / minimum"
    if pred:
        caption = f"{caption + '; ' if caption else ''}pred: predicted from the operator database"
    rows_of = ""
    if any(x.repeats > 1 for x in lines):
        caption = f"{caption + '; ' if caption else ''}{{…}}: one row for the layers in braces (--no-group: each)"
        rows_of = " rows"
    return table(f"Top {len(lines)}{rows_of} of {view.records} records by {what}", cols, rows, width, caption=caption)


def rollup_table(view: ProfileView, width: int = 80) -> RenderableType:
    """The roll-up `view.by`: by op type, module group (`view.depth`) or kernel; the kernel view of a profile
    without device kernels (on the CPU, or analytic) is one line saying so."""
    by, predicted, lines = view.by, view.predicted, view.rollup
    if by == "kernel" and not lines:
        return Text("By kernel: no device kernels in this profile (a CPU or analytic profile times ops, not "
                    "kernels).")
    scale, unit = time_unit([x.time_s for x in lines])
    if by == "kernel":
        cols = [Column("share"), Column(f"time\n{unit}"), Column("calls"),
                Column("ops", False, shorten_right), Column("kernel", False)]  # a kernel name folds, never cut
        rows = [[percent(x.share, nonzero=True), fixed(x.time_s * scale), count(x.calls), ", ".join(x.ops),
                 short_kernel(x.key)] for x in lines]
        return table("By kernel (calls: op calls that launched it)", cols, rows, width)
    hscale, hunit = time_unit([x.headroom_s for x in lines])
    key = Column(by, False, *((shorten_left, False, module_least) if by == "module" else (shorten_right,)))
    cols = [Column("share"), Column(f"time\n{unit}"), Column("calls"), Column("recs")]
    cols += [] if predicted else [Column("roof\n%"), Column(f"headroom\n{hunit}")]
    rows = []
    for x in lines:
        row = [percent(x.share, nonzero=True), fixed(x.time_s * scale), count(x.calls), count(len(x.records))]
        if not predicted:
            row += [percent(x.roof_fraction, 0, nonzero=True) + (ABOVE_MARK if above_roof(x.roof_fraction) else ""),
                    fixed(x.headroom_s * hscale) if x.headroom_s is not None else "-"]
        rows.append([*row, _module(x.key) if by == "module" else x.key])
    title = {"op": "By op type", "phase": "By phase of the step"}.get(
        by, f"By module{f', depth {view.depth}' if view.depth else ''}")
    said = (" (roofline time)" if _from_db(view) else " (predicted)") if predicted else ""
    return table(title + said, [*cols, key], rows, width)


def whatif_view(w: WhatIf, width: int = 80) -> Group:
    """The what-if: Amdahl at the roofs, the fusions ranked by time saved (with what each assumes), idle gaps."""
    parts: list[RenderableType] = []
    if w.amdahl is not None:
        a = w.amdahl
        scale, unit = time_unit([a.total_s])
        names = {"memory": "memory-bound ops at the memory roof", "compute": "compute-bound ops at the compute roof",
                 "both": "every op at its roof"}
        rows = [[names[sc.name], fixed(sc.time_s * scale), fixed(sc.saved_s * scale), percent(sc.share, nonzero=True),
                 count(sc.records)] for sc in (a.memory, a.compute, a.both)]
        said = f"Of {fixed(a.total_s * scale)} {unit} measured over the records"
        if a.unmodelled_s:
            said += f"; the {fixed(a.unmodelled_s * scale)} {unit} of ops without a formula kept as measured"
        parts.append(table("What-if: the ops at their roofs (Amdahl)",
                           [Column("if", False, shorten_right), Column(f"time\n{unit}"), Column(f"saves\n{unit}"),
                            Column("share"), Column("recs")], rows, width))
        parts.append(Text(said + ".", style="dim"))
    if w.fusions:
        scale, unit = time_unit([f.saved_s for f in w.fusions])
        rows, styles = [], []
        for f in w.fusions:  # two lines each: what fuses, then where
            rows += [[fixed(f.saved_s * scale) if f.saved_s is not None else "-", percent(f.share, 2, nonzero=True),
                      si(f.bytes_saved, "B"), count(f.occurrences), f"{f.label}: {f.title}"],
                     ["", "", "", "", MODULE_LINE + _module(f.module)]]
            styles += ["", "dim"]
        parts.append(table("What-if: fusions by time saved (at the memory roof)",
                           [Column(f"saves\n{unit}"), Column("share"), Column("bytes"), Column("×"),
                            Column("fusion, in module", False, _fusion_cell)], rows, width, styles=styles))
        kinds = [k for k in KIND_ORDER if any(f.kind == k for f in w.fusions)]
        nb = Text()
        for k in kinds:
            nb.append(f"{KINDS[k][0]}: {KINDS[k][1]}\n", style="dim")
        for note in w.notes:
            nb.append(note + "\n", style="dim")
        parts.append(nb)
    else:
        parts.append(Text("What-if: no fusion found in the dataflow."))
    if w.idle is not None:
        parts.append(Text(w.idle.message, style="bold" if w.idle.notable else ""))
    return Group(*parts)


def profile_warnings(records: Sequence[Record]) -> list[str]:
    """What a profile's numbers need said beside them, one line each (report/caveats.py): times taken on a busy
    machine or spread widely, predictions from a database too sparse to use. Empty when none applies."""
    sparse = wide_interval_note(records)
    return [*timing_caveats(records, lambda r: f"{r.op} {_module(r.module or ROOT_MODULE)}"),
            *([sparse] if sparse else [])]


def profile_views(view: ProfileView, width: int = 80, warnings: Sequence[str] = ()) -> list[RenderableType]:
    """What `roofline profile` prints, in order: header, top records and the `warnings` under them
    (`profile_warnings`), the roll-up `view.by`, the what-if; laid out for a terminal of `width` columns."""
    said = [Text.assemble(("warning:", "bold yellow"), f" {line}") for line in warnings]
    return [header(view, width), top_table(view, width), *said, rollup_table(view, width),
            whatif_view(view.whatif, width)]


__all__ = ["header", "profile_views", "profile_warnings", "rollup_table", "short_kernel", "shorten_left", "top_table",
           "whatif_view"]
