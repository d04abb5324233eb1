"""Terminal views of a profile document: rich renderables (nothing printed here) that read in 80 columns.

`profile_views(doc, top, by, depth, width)` is what `roofline profile` prints: the summary header, the top
records by total time, one roll-up (by op type, by module, or by kernel) and the what-if. `views_json` is the
same as data (for --json).

Tables: numbers right-aligned in their own columns, units in the headers, never cut or wrapped; the text
columns (op, module, kernel, fusion) take the width that is left and are shortened first (a module from the
left, at a dot: '…self_attn.q_proj'). Timed profiles rank by measured time (time_s x count); analytic ones
by roofline time, said "predicted".

Module roll-up (`module_group`): a numeric path component (a layer's index) is written '*' and rolled
together, and does not count towards `depth`; `depth` counts named components, the index following the
last one kept as '*': 'model.layers.0.mlp.down_proj' at depth 1 is 'model', at depth 2 'model.layers.*',
at depth 3 'model.layers.*.mlp'; with no depth the whole path ('model.layers.*.mlp.down_proj').
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from roofline.analysis.whatif import KIND_ORDER, KINDS, WhatIf, record_total, what_if
from roofline.core.aten_names import short_base_name, short_name
from roofline.core.document import Document, clean_json
from roofline.core.errors import UsageError
from roofline.core.format import count, duration, percent, si
from roofline.core.record import ROOT_MODULE, Record

BY = ("op", "module", "kernel")
TOP = 20
ROOT = ROOT_MODULE  # the module name shown for ops the root module runs itself
ELLIPSIS = "…"
OP_WIDTH = 18  # an op name is cut past this (the longest abbreviated aten names fit)
TEXT_MIN = 10  # a text column never gets less than this, whatever the width asks


# -- data ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Line:
    """One row of a view: a record, or a group of records (op type, module, kernel)."""

    key: str  # the short op, module group or kernel name
    time_s: float  # over all calls (predicted when analytic)
    share: float | None  # of the step's total
    calls: int
    roofline_s: float | None  # over all calls, of the records with a roof
    headroom_s: float | None  # time_s - roofline_s (timed, records with a roof)
    records: tuple[int, ...]
    module: str = ""
    bound: str | None = None
    roof_fraction: float | None = None  # roofline time / time (timed)
    ops: tuple[str, ...] = ()  # the kernel view: the ops that launched it


def summary_of(doc: Document) -> dict[str, Any]:
    """The document's profile summary (`extra["profile"]`), {} when it has none."""
    s = doc.extra.get("profile")
    return dict(s) if isinstance(s, Mapping) else {}


def is_predicted(records: Sequence[Record], summary: Mapping[str, Any]) -> bool:
    """An analytic profile (no measured time): views rank by roofline time."""
    return summary.get("mode") == "analytic" or not any(r.time_s is not None for r in records)


def step_total(records: Sequence[Record], summary: Mapping[str, Any]) -> float:
    """The base of every share: the kernel time (unattributed kernels included) when measured, the sum of
    roofline times when predicted."""
    predicted = is_predicted(records, summary)
    base = summary.get("roofline_time_s" if predicted else "kernel_time_s")
    return float(base) if base else sum(record_total(r, predicted) for r in records)


def _line(key: str, idx: list[int], records: Sequence[Record], predicted: bool, total: float, **kw: Any) -> Line:
    recs = [records[i] for i in idx]
    t = sum(record_total(r, predicted) for r in recs)
    roofed = [r for r in recs if r.roofline_time_s is not None]
    roof = sum(record_total(r, True) for r in roofed) if roofed else None
    headroom = None
    if not predicted and roofed:
        headroom = sum(record_total(r) - record_total(r, True) for r in roofed if r.time_s is not None)
    return Line(key, t, t / total if total > 0 else None, sum(r.count or 1 for r in recs), roof, headroom,
                tuple(idx), **kw)


def top_lines(records: Sequence[Record], summary: Mapping[str, Any], top: int = TOP) -> list[Line]:
    """The `top` records by total time (roofline time when predicted)."""
    predicted = is_predicted(records, summary)
    total = step_total(records, summary)
    order = sorted(range(len(records)), key=lambda i: (-record_total(records[i], predicted), i))[:max(top, 0)]
    return [_line(short_name(records[i].op), [i], records, predicted, total, module=records[i].module or "",
                  bound=records[i].bound, roof_fraction=None if predicted else records[i].roofline_fraction)
            for i in order]


def module_group(path: str, depth: int | None = None) -> str:
    """The roll-up key of a module path (module docstring): indices as '*', `depth` named components."""
    if not path:
        return ""
    parts = ["*" if p.isdigit() else p for p in path.split(".")]
    if depth is None:
        return ".".join(parts)
    if depth < 1:
        raise UsageError(f"--depth must be at least 1, got {depth}")
    kept, named = [], 0
    for p in parts:
        if p != "*":
            if named == depth:
                break
            named += 1
        kept.append(p)
    return ".".join(kept)


def rollup(records: Sequence[Record], summary: Mapping[str, Any], by: str = "op",
           depth: int | None = None) -> list[Line]:
    """Records grouped by op type ('add' and 'add_' together), module group or device kernel, by total time.
    The kernel view adds the kernels no op launched (summary 'unattributed')."""
    if by not in BY:
        raise UsageError(f"--by must be one of {', '.join(BY)}, got {by!r}")
    predicted = is_predicted(records, summary)
    total = step_total(records, summary)
    if by == "kernel":
        return _kernel_lines(records, summary, total)
    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        if by == "module":
            key = module_group(r.module or "", depth)
        else:  # the op type: in-place and out-of-place forms together
            key = short_base_name(r.op)
        groups[key].append(i)
    lines = [_line(k, idx, records, predicted, total) for k, idx in groups.items()]
    return sorted(lines, key=lambda x: (-x.time_s, x.key))


def _kernel_lines(records: Sequence[Record], summary: Mapping[str, Any], total: float) -> list[Line]:
    time: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    ops: dict[str, dict[str, None]] = defaultdict(dict)
    idx: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        for name, t in zip(r.kernels or [], r.kernel_times_s or [], strict=False):
            time[name] += t * (r.count or 1)  # kernel_times_s are per call
            calls[name] += r.count or 1
            ops[name][short_name(r.op)] = None
            idx[name].append(i)
    for u in summary.get("unattributed") or []:
        name = str(u.get("kernel"))
        time[name] += float(u.get("time_s") or 0.0)
        calls[name] += int(u.get("launches") or 0)
        ops[name]["(no op)"] = None
    lines = [Line(k, t, t / total if total > 0 else None, calls[k], None, None, tuple(idx[k]), ops=tuple(ops[k]))
             for k, t in time.items()]
    return sorted(lines, key=lambda x: (-x.time_s, x.key))


def whatif_json(doc: Document) -> dict[str, Any]:
    """The what-if of a profile document as JSON-able data."""
    return what_if(doc.records, summary_of(doc)).to_dict()


def views_json(doc: Document, top: int = TOP, by: str = "op", depth: int | None = None) -> dict[str, Any]:
    """What `profile_views` shows, as JSON-able data: top records, the roll-up, the what-if."""
    s = summary_of(doc)
    return clean_json({"predicted": is_predicted(doc.records, s), "total_s": step_total(doc.records, s),
                       "top": [asdict(x) for x in top_lines(doc.records, s, top)],
                       "rollup": {"by": by, "depth": depth,
                                  "lines": [asdict(x) for x in rollup(doc.records, s, by, depth)]},
                       "whatif": whatif_json(doc)})


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


def shorten_left(path: str, width: int) -> str:
    """'model.layers.0.self_attn.q_proj' in 20 columns -> '…self_attn.q_proj': the longest tail of whole
    components that fits, never starting at a layer index (a cut '…0.mlp' would read as a cut number)."""
    if len(path) <= width:
        return path
    parts = path.split(".")
    for i in range(1, len(parts)):
        tail = ".".join(parts[i:])
        if len(tail) + 1 <= width and not parts[i].isdigit():
            return ELLIPSIS + tail
    return ELLIPSIS + path[len(path) - width + 1:] if width > 1 else ELLIPSIS


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


def table(title: str, columns: list[Column], rows: list[list[str]], width: int, caption: str | None = None,
          styles: list[str] | None = None) -> Table:
    """A table that fits `width` columns: text columns shortened to the width the numbers leave, the widest
    first, each to at least TEXT_MIN (past that rich wraps the text, never the numbers). Cells are plain text
    (a kernel name's brackets are not markup); `styles`: one per row."""
    widths = [max([len(x) for x in c.header.split("\n")] + [len(r[j]) for r in rows]) for j, c in enumerate(columns)]
    excess = sum(widths) + len(columns) - 1 - width
    for j in sorted(range(len(columns)), key=lambda j: -widths[j]):
        c = columns[j]
        if excess <= 0 or c.shorten is None:
            continue
        new = max(TEXT_MIN, widths[j] - excess, *(len(x) for x in c.header.split("\n")))
        if new < widths[j]:
            excess -= widths[j] - new
            widths[j] = new
            for r in rows:
                r[j] = c.shorten(r[j], new)
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

def header(doc: Document, width: int = 80) -> Text:
    """Name, device, wall and kernel time, GPU idle, coverage, ops without formula, FLOPs, the collectives'
    share: packed in lines
    of `width`; the summary's notes after them."""
    s = summary_of(doc)
    predicted = is_predicted(doc.records, s)
    device = doc.device.get("name") or doc.device.get("spec_name") or doc.device.get("kind") or "an unknown device"
    where = s.get("time_device") or ("analytic, no data" if predicted else "")
    out = Text(f"{s.get('name') or 'profile'}: {'predicted' if predicted else 'measured'} on {device}"
               + (f" ({where})" if where else ""), style="bold")
    pairs: list[str] = []
    if predicted:
        pairs.append(f"predicted step {duration(step_total(doc.records, s))} (sum of roofline times)")
    else:
        if s.get("wall_s") is not None:
            plain = s.get("wall_uninstrumented_s")
            pairs.append(f"wall {duration(s['wall_s'])}" + (f" (plain call {duration(plain)})" if plain else ""))
        if s.get("kernel_time_s") is not None:
            pairs.append(f"kernel time {duration(s['kernel_time_s'])}")
        if s.get("gpu_idle_s") is not None:
            wall = s.get("wall_s")
            pairs.append(f"GPU idle {duration(s['gpu_idle_s'])}" + (f" ({percent(s['gpu_idle_s'] / wall, 0)} of wall)"
                                                                      if wall else ""))
        if s.get("coverage") is not None:
            pairs.append(f"coverage {percent(s['coverage'], nonzero=True)}")
    missing = s.get("without_formula") or []
    calls = sum(int(m.get("calls") or 0) for m in missing)
    pairs.append(f"ops without formula {len(missing)}"
                 + (f" ({count(calls)} call{'' if calls == 1 else 's'})" if missing else ""))
    if s.get("flops") is not None:
        pairs.append(f"FLOPs {si(s['flops'])}" + (f" (matmul {si(s['flops_matmul'])})" if s.get("flops_matmul")
                                                 else ""))
    if s.get("bytes") is not None:
        pairs.append(f"bytes {si(s['bytes'], 'B')}")
    comm = s.get("communication")
    if isinstance(comm, Mapping):
        share = comm.get("roofline_share" if predicted else "share")
        pairs.append(f"communication {percent(share, nonzero=True)} ({count(comm.get('calls') or 0)} "
                     f"collective call{'' if comm.get('calls') == 1 else 's'})")
    if s.get("regions"):
        pairs.append("regions " + ", ".join(sorted(s["regions"])))
    calls = s.get("calls") or sum(r.count or 1 for r in doc.records)
    pairs.append(f"{count(len(doc.records))} records, {count(calls)} calls")
    line = ""
    for p in pairs:
        if line and len(line) + 3 + len(p) > width:
            out.append("\n" + line)
            line = ""
        line = f"{line}   {p}" if line else p
    if line:
        out.append("\n" + line)
    for note in s.get("notes") or []:
        out.append("\n" + note, style="dim")
    return out


def top_table(records: Sequence[Record], summary: Mapping[str, Any], top: int = TOP, width: int = 80) -> Table:
    """The `top` records by total time: share of the step, total time, calls, op, module, bound, % of roof and
    headroom (total time - total roofline time); predicted: share, time, calls, op, module, bound, FLOP/B."""
    predicted = is_predicted(records, summary)
    lines = top_lines(records, summary, top)
    scale, unit = time_unit([x.time_s for x in lines])
    hscale, hunit = time_unit([x.headroom_s for x in lines])
    cols = [Column("share"), Column(f"time\n{unit}"), Column("calls"),
            Column("op", False, shorten_right), Column("module", False, shorten_left), Column("bound", False)]
    cols += [Column("FLOP/B")] if predicted else [Column("roof\n%"), Column(f"headroom\n{hunit}")]
    counted = any(records[x.records[0]].counters is not None for x in lines)  # `profile --counters`
    cols += [Column("bytes\n×min")] if counted else []
    rows = []
    for x in lines:
        r = records[x.records[0]]
        row = [percent(x.share, nonzero=True), fixed(x.time_s * scale), count(x.calls), shorten_right(x.key, OP_WIDTH),
               _module(x.module), x.bound or "-"]
        if predicted:
            row.append(fixed(r.arithmetic_intensity) if r.flops is not None else "-")
        else:
            row += [percent(x.roof_fraction, 0, nonzero=True),
                    fixed(x.headroom_s * hscale) if x.headroom_s is not None else "-"]
        if counted:
            excess = r.counters.excess_traffic if r.counters is not None else None
            row.append(f"{excess:.2f}" if excess is not None else "-")
        rows.append(row)
    what = "predicted time (roofline)" if predicted else "measured time"
    caption = None if predicted else "headroom: time - roofline time"
    if counted:
        from roofline.core.counters import excess_basis

        basis = excess_basis(r.counters for r in records if r.counters is not None)
        caption = f"{caption + '; ' if caption else ''}bytes ×min: ncu {basis} bytes / minimum"
    return table(f"Top {len(lines)} of {len(records)} records by {what}", cols, rows, width, caption=caption)


def rollup_table(records: Sequence[Record], summary: Mapping[str, Any], by: str = "op", depth: int | None = None,
                 width: int = 80) -> RenderableType:
    """The roll-up by op type, module group (`depth`) or kernel; the kernel view of a profile without device
    kernels (on the CPU, or analytic) is one line saying so."""
    predicted = is_predicted(records, summary)
    lines = rollup(records, summary, by, depth)
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
    key = Column("op" if by == "op" else "module", False, shorten_right if by == "op" else shorten_left)
    cols = [Column("share"), Column(f"time\n{unit}"), Column("calls"), Column("recs")]
    cols += [] if predicted else [Column("roof\n%"), Column(f"headroom\n{hunit}")]
    rows = []
    for x in lines:
        row = [percent(x.share, nonzero=True), fixed(x.time_s * scale), count(x.calls), count(len(x.records))]
        if not predicted:
            frac = x.roofline_s / x.time_s if x.roofline_s is not None and x.time_s > 0 else None
            row += [percent(frac, 0, nonzero=True), fixed(x.headroom_s * hscale) if x.headroom_s is not None else "-"]
        rows.append([*row, _module(x.key) if by == "module" else x.key])
    title = "By op type" if by == "op" else f"By module{f', depth {depth}' if depth else ''}"
    return table(title + (" (predicted)" if predicted else ""), [*cols, key], rows, width)


def whatif_view(records: Sequence[Record], summary: Mapping[str, Any], width: int = 80,
                result: WhatIf | None = None) -> Group:
    """The what-if: Amdahl at the roofs, the fusions ranked by time saved (with what each assumes), idle gaps."""
    w = result if result is not None else what_if(records, summary)
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


def profile_views(doc: Document, top: int = TOP, by: str = "op", depth: int | None = None,
                  width: int = 80) -> list[RenderableType]:
    """What `roofline profile` prints, in order: header, top records, the roll-up `by` ('op', 'module' at
    `depth`, 'kernel'), the what-if; laid out for a terminal of `width` columns."""
    s = summary_of(doc)
    return [header(doc, width), top_table(doc.records, s, top, width), rollup_table(doc.records, s, by, depth, width),
            whatif_view(doc.records, s, width)]


__all__ = ["BY", "Line", "header", "is_predicted", "module_group", "profile_views", "rollup", "rollup_table",
           "short_kernel", "shorten_left", "step_total", "top_lines", "top_table", "views_json", "whatif_json",
           "whatif_view"]
