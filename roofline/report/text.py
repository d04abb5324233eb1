"""Terminal rendering (rich): tables of specs, operators and records. Rendering only, no computation.

Every default view reads in 80 columns. Tables of many rows are `FitTable`s: numbers in their own columns,
right-aligned, units in the headers, never wrapped or cut; text columns (a shape, a summary) wrap at spaces;
columns that do not fit the width the table is printed at are left out (and named in the caption), and a
command's `--wide` prints every column at its full width.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from roofline.ceilings.specs import GPUSpec
from roofline.core.format import DEFAULT_WIDTH, duration, number, percent, si, table_scale
from roofline.core.model import above_roof
from roofline.core.record import Record, shape_text
from roofline.core.stats import relative_sd
from roofline.report.rows import bound_text, counter_rows, record_rows  # noqa: F401 - where they were

if TYPE_CHECKING:  # typing only
    from roofline.ops.base import Operator


def console(stderr: bool = False) -> Console:
    """The console of a command's output: the terminal's width, else COLUMNS, else DEFAULT_WIDTH."""
    c = Console(stderr=stderr, highlight=False, soft_wrap=False)
    if not c.is_terminal:
        columns = os.environ.get("COLUMNS", "")
        width = int(columns) if columns.isdigit() and int(columns) > 0 else DEFAULT_WIDTH
        c = Console(stderr=stderr, highlight=False, soft_wrap=False, width=width)
    return c


def show(*renderables: RenderableType, wide: bool = False) -> None:
    """Print on stdout at the console's width; `wide`: at the width the widest renderable needs, so that a
    `--wide` table is never squeezed (a terminal then wraps its lines; `| less -S` keeps them)."""
    con = console()
    if wide:
        need = max((natural_width(r) for r in renderables), default=0)
        if need > con.width:
            con = Console(highlight=False, soft_wrap=False, width=need)
    for r in renderables:
        con.print(r)


def natural_width(r: RenderableType) -> int:
    """The columns `r` takes when nothing constrains it."""
    if isinstance(r, FitTable):
        return r.natural_width()
    return Console(width=10_000).measure(r).maximum


# ---------------------------------------------------------------- tables that fit
WIDE = 1_000  # Column.drop of a column shown only with --wide
# A word in a wrapping column longer than this may be folded over lines (Nsight Compute's kernel names run to
# 60 characters; op names, shapes and dtypes stay under 20 and never fold).
FOLD_ABOVE = 24
# The narrowest a wrapping column folds to when its words and the numbers beside it do not fit ("forward:",
# "compute-", an eight-letter word, still reads whole).
FOLD_MIN = 8
GAP = 1  # one space between columns (box.SIMPLE_HEAD without edges): the most columns in 80


@dataclass(frozen=True)
class Column:
    """One column of a FitTable.

    `drop`: 0, always shown; n > 0, left out (highest n first, a whole group of equal n at once) while the
    table is wider than the console; WIDE, shown with --wide only. `wrap`: text that may wrap at spaces (a
    shape, a list of names); it asks for `want` columns before optional columns are kept beside it. `note`: a
    caption line that explains the column, shown with it; `quiet`: a left-out column the caption need not name
    (the caption says its one value)."""

    header: str  # "\n" splits it over two lines
    left: bool = False  # text, left-aligned; numbers are right-aligned
    wrap: bool = False
    drop: int = 0
    want: int = 24
    note: str = ""
    quiet: bool = False  # not named among the columns --wide adds (its value is in the caption)


def _lines(cell: str) -> list[str]:
    return cell.split("\n")


class FitTable:
    """A table of many rows that fits the width it is printed at (see the module docstring). Cells are plain
    text (no markup); the title and caption wrap at the console's width."""

    def __init__(self, columns: Sequence[Column], rows: Iterable[Sequence[str]], *, title: str = "",
                 caption: Sequence[str] = (), wide: bool = False, warnings: Sequence[str] = ()) -> None:
        self.columns = list(columns)
        self.rows = [list(r) for r in rows]
        for r in self.rows:
            if len(r) != len(self.columns):
                raise ValueError(f"a row of {len(r)} cells in a table of {len(self.columns)} columns")
        self.title, self.caption, self.wide = title, list(caption), wide
        self.warnings = list(warnings)  # what the numbers need said beside them (report.caveats), first, not dim

    # -- layout
    def _natural(self, j: int) -> int:
        cells = [self.columns[j].header, *(r[j] for r in self.rows)]
        return max(cell_len(line) for c in cells for line in _lines(c))

    def _minimum(self, j: int) -> int:
        """A wrapping column's narrowest: its longest word (or header line), but no more than FOLD_ABOVE: a
        longer word (a kernel's name) folds over lines rather than squeeze the numbers beside it."""
        words = [w for r in self.rows for line in _lines(r[j]) for w in line.split()]
        header = [cell_len(h) for h in _lines(self.columns[j].header)]
        return max([min(cell_len(w), FOLD_ABOVE) for w in words] + header)

    def _shown(self, width: int | None) -> list[int]:
        if self.wide or width is None:
            return list(range(len(self.columns)))
        shown = [j for j, c in enumerate(self.columns) if c.drop < WIDE]

        def need(js: list[int]) -> int:
            return sum(min(self._natural(j), max(self.columns[j].want, self._minimum(j))) if self.columns[j].wrap
                       else self._natural(j) for j in js) + GAP * (len(js) - 1)

        while need(shown) > width and any(self.columns[j].drop for j in shown):
            worst = max(self.columns[j].drop for j in shown)
            shown = [j for j in shown if self.columns[j].drop != worst]
        return shown

    def _widths(self, shown: list[int], width: int | None) -> list[int]:
        widths = [self._natural(j) for j in shown]
        wrap = [k for k, j in enumerate(shown) if self.columns[j].wrap]
        if width is None or self.wide or not wrap:
            return widths
        room = width - GAP * (len(shown) - 1) - sum(w for k, w in enumerate(widths) if k not in wrap)
        if sum(widths[k] for k in wrap) <= room:
            return widths
        low = {k: self._minimum(shown[k]) for k in wrap}
        # numbers are never cut: when the wrapping columns' longest words leave them too little room, the
        # longest words fold (the widest column first, none below FOLD_MIN)
        while sum(low.values()) > room and max(low.values()) > FOLD_MIN:
            k = max(low, key=lambda k: low[k])
            low[k] -= 1
        # the widest wrapping columns give way first, none below its longest word
        level = max(widths[k] for k in wrap)
        while level > 1 and sum(max(low[k], min(widths[k], level)) for k in wrap) > room:
            level -= 1
        for k in wrap:
            widths[k] = max(low[k], min(widths[k], level))
        return widths

    def natural_width(self) -> int:
        """Every column at its full width (what --wide prints)."""
        shown = list(range(len(self.columns)))
        return sum(self._natural(j) for j in shown) + GAP * (len(shown) - 1)

    def table(self, width: int | None) -> Table:
        """The rich table at `width` (None or wide: every column, full width); no title or caption."""
        shown = self._shown(width)
        t = Table(box=box.SIMPLE_HEAD, show_edge=False, padding=(0, 0), pad_edge=False)
        for j, w in zip(shown, self._widths(shown, width), strict=True):
            c = self.columns[j]
            t.add_column(c.header, justify="left" if c.left else "right", width=w, no_wrap=not c.wrap,
                         overflow="fold" if c.wrap else "ellipsis")
        for r in self.rows:
            t.add_row(*(Text(r[j]) for j in shown))
        return t

    def caption_lines(self, width: int | None) -> list[str]:
        shown = self._shown(width)
        notes = dict.fromkeys(c.note for j, c in enumerate(self.columns) if c.note and j in shown)  # once each
        lines = self.caption + list(notes)
        left = [" ".join(c.header.split()) for j, c in enumerate(self.columns) if j not in shown and not c.quiet]
        if left:
            lines.append(f"--wide adds: {', '.join(left)}")
        return lines

    # -- rich protocol
    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = None if self.wide else options.max_width
        if self.title:
            yield Text(self.title, style="table.title")
        yield self.table(width)
        for line in self.warnings:
            yield Text.assemble(("warning:", "bold yellow"), f" {line}")
        for line in self.caption_lines(width):
            yield Text(line, style="table.caption")

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(min(self.natural_width(), options.max_width), self.natural_width())


# ---------------------------------------------------------------- specs and operators
def specs_table(specs: list[GPUSpec], wide: bool = False) -> FitTable:
    """One row per spec file: the dense peaks, memory and L2."""
    def v(s: GPUSpec, key: str) -> str:
        x = s.get(key)
        return "-" if x is None else f"{x:g}"

    cols = [Column("id", left=True), Column("name", left=True, wrap=True, drop=WIDE),
            Column("aliases", left=True, wrap=True, drop=WIDE), Column("SMs"), Column("boost\nMHz", drop=1),
            Column("FP32\nTFLOP/s"), Column("BF16 TC\nTFLOP/s"), Column("FP8 TC\nTFLOP/s"), Column("memory\nGB"),
            Column("memory\ntype", left=True), Column("memory\nGB/s"), Column("L2\nMiB")]
    rows = [[s.id, s.name, ", ".join(s.aliases), v(s, "sm_count"), v(s, "boost_clock_mhz"), v(s, "fp32_dense_tflops"),
             v(s, "bf16_tensor_dense_tflops"), v(s, "fp8_tensor_dense_tflops"), v(s, "memory_size_gb"),
             s.memory_type, v(s, "memory_bandwidth_gbps"), f"{s['l2_cache_kib'] / 1024:g}"] for s in specs]
    return FitTable(cols, rows, title="GPU specs (dense peaks; TC: tensor cores)", wide=wide,
                    caption=["every number with its source: roofline specs show ID"])


def spec_table(s: GPUSpec) -> Group:
    """Every field of one spec: `name value`, then its source (and note) indented beneath it, so that the
    sources wrap at any width."""
    items: list[tuple[str, str, str]] = []
    for key, amount in s.values.items():
        note = s.notes.get(key)
        items.append((key, f"{amount:g}", s.sources.get(key, "") + (f"\nnote: {note}" if note else "")))
    for key, lst in s.lists.items():
        items.append((key, ", ".join(map(str, lst)), s.sources.get(key, "")))
    pad = max((len(k) for k, _, _ in items), default=0)
    parts: list[RenderableType] = [
        Text(f"{s.name} ({s.id}; {s.architecture}, compute capability {s.compute_capability})", style="bold")]
    for key, value, source in items:
        line = Text(key.ljust(pad) + "  ", style="bold")
        line.append(value)
        parts.append(line)
        if source:
            parts.append(Padding(Text(source, style="dim"), (0, 0, 0, 4), expand=False))
    return Group(*parts)


def _default_text(f: dataclasses.Field[Any]) -> str:
    """An operator field's default as `ops list` shows it: 4096, off/on, 'm' (a default that follows another
    parameter, from its help), the choices with the default first."""
    meta = f.metadata
    if meta.get("choices"):
        return ", ".join(meta["choices"])
    if meta.get("kind") == "flag":
        return "on" if f.default else "off"
    if f.default is None:
        follows = re.search(r"default: ([\w-]+)", meta.get("help", ""))
        return f"= {follows.group(1)}" if follows else "-"
    return str(f.default)


def ops_table(ops: dict[str, type[Operator]]) -> Table:
    """One row per operator (sorted by family): its parameters with their defaults, its summary, variants
    and dtypes."""
    t = Table(title="operators (roofline analyze OP --help: every parameter)", title_justify="left",
              box=box.SIMPLE_HEAD, show_edge=False, show_lines=True, padding=(0, 1), pad_edge=False,
              caption="choices: the first is the default", caption_justify="left")
    t.add_column("op", no_wrap=True)
    t.add_column("parameters (default)")
    t.add_column("summary")
    for name, cls in sorted(ops.items(), key=lambda kv: (kv[1].family, kv[0])):
        params, variants = [], None
        for f in dataclasses.fields(cls):
            if f.name == "variant":
                variants = ", ".join(f.metadata["choices"])
                continue
            params.append(f"--{f.name.replace('_', '-')} ({_default_text(f)})")
        about = Text(cls.summary)
        if variants:
            about.append(f"\nvariants: {variants}", style="dim")
        about.append(f"\ndtypes: {' '.join(cls.dtypes)}", style="dim")
        t.add_row(name, Text("\n".join(params)), about)
    return t


# ---------------------------------------------------------------- one record (analyze)
def record_table(r: Record) -> Table:
    """One record as label/value rows; long values wrap at spaces within the console's width."""
    return rows_table(f"roofline: {r.op}", record_rows(r))


def rows_table(title: str, rows: list[tuple[str, str]]) -> Table:
    """Label/value rows under a title (`roofline.report.plain.boxed` draws the same without rich)."""
    t = Table(show_header=False, title=title)
    t.add_column("", style="bold", no_wrap=True)
    t.add_column("", overflow="fold")
    for label, value in rows:
        t.add_row(label, Text(value))
    return t


# ---------------------------------------------------------------- many records (run)
def _is_size(default: Any) -> bool:
    """A default that is a size (m=4096, heads=32): shown even when a record keeps it."""
    return isinstance(default, int) and not isinstance(default, bool) and default > 1


def compact_shapes(records: Sequence[Record]) -> list[str]:
    """Each record's parameters as the run table shows them (`compact_params`)."""
    return compact_params([(r.op, r.params) for r in records])


def compact_params(items: Sequence[tuple[str, dict[str, Any]]]) -> list[str]:
    """Each (operator, parameters) as the run and check tables show them: every size (m, heads, numel, ...)
    and every parameter that differs from its operator's default or between the items of its operator (eight
    gemv rows read m, n and k each); a default that is no size (batch=1, stride=1, causal=False,
    epilogue=none) is left out. Every parameter of an operator that is not in the catalog."""
    from roofline.ops import OPERATORS

    varying: dict[str, set[str]] = {}
    for op in {op for op, _ in items}:
        same = [p or {} for o, p in items if o == op]
        varying[op] = {k for k in {k for p in same for k in p} if len({repr(p.get(k)) for p in same}) > 1}
    shapes = []
    for op, params in items:
        cls = OPERATORS.get(op)
        defaults = {f.name: f.default for f in dataclasses.fields(cls)} if cls else {}
        kept = {k: v for k, v in (params or {}).items()
                if k in varying[op] or k not in defaults or defaults[k] != v or _is_size(defaults[k])}
        shapes.append(shape_text(kept))
    return shapes


def kernels_table(records: list[Record], title: str, wide: bool = False, top: int = 0) -> FitTable:
    """An imported Nsight Compute report: one row per kernel (its ncu ID, name and NVTX range), ncu's time,
    the DRAM bytes it counted and where they place it. Kernel names fold over lines rather than squeeze the
    numbers (FOLD_ABOVE). `top` > 0: only the `top` longest kernels, longest first, and a line for the rest."""
    caption = []
    if 0 < top < len(records):
        total = sum(r.time_s or 0.0 for r in records)
        shown = sorted(records, key=lambda r: -(r.time_s or 0.0))[:top]
        rest = total - sum(r.time_s or 0.0 for r in shown)
        share = f" ({rest / total:.1%} of the time)" if total else ""
        caption.append(f"{len(records) - top} more kernels{share}: --top 0 shows every one")
        records = shown
    ranges = any(r.region for r in records)
    cols = [Column("id"), Column("kernel", left=True, wrap=True),
            *([Column("NVTX\nrange", left=True, wrap=True, drop=1)] if ranges else []),
            Column("dtype", left=True, drop=2), Column("time"), Column("DRAM\nbytes", drop=3),
            Column("AI\nFLOP/B", note="AI: arithmetic intensity, counted FLOPs per counted DRAM byte"),
            Column("bound", left=True), Column("% of\nroof", note="% of roof: roofline time / ncu's time")]
    rows = []
    for r in records:
        dram = r.counters.dram_bytes if r.counters is not None else None
        rows.append([str(r.params.get("id", "")), str(r.params.get("kernel", r.op)),
                     *([r.region or "-"] if ranges else []), r.dtype,
                     duration(r.time_s) if r.time_s is not None else "-", "-" if dram is None else si(dram, "B"),
                     number(r.arithmetic_intensity), "-" if r.bound is None else r.bound,
                     percent(r.roofline_fraction, 0)])
    return FitTable(cols, rows, title=title, wide=wide, caption=caption)


# Beside a "% of roof" above 100%: that record is a bug in its roof or its model, not a result.
ABOVE_MARK = "!"


def records_table(records: list[Record], title: str = "results", wide: bool = False) -> FitTable:
    """One row per record. Timed: the roofline time beside the measured one and the fraction of the roof;
    analytic: the roof the record sits under (attainable FLOP/s at its arithmetic intensity)."""
    timed = any(r.timed for r in records)
    shapes = [r.shape for r in records] if wide else compact_shapes(records)
    shape_note = "" if wide else "shape: sizes, and other parameters when not the operator's default"
    per_gpu = any(r.device_index is not None for r in records)  # `run --devices`: a record per entry and GPU
    flop_scale, flop_unit = table_scale([r.attainable_flops_per_s for r in records]
                                        + [r.achieved_flops_per_s for r in records], "FLOP/s")
    byte_scale, byte_unit = table_scale([r.achieved_bytes_per_s for r in records], "B/s")
    cached = any(r.memory_level for r in records)
    from roofline.analysis.predict import bound_only_note, from_database

    # all on the bound: one caption line, not a column. A predicted time beside the bound says more than the
    # roof's numbers behind it: at 80 columns the attainable rate and then the AI give way (--wide, the JSON)
    predicted = any(from_database(r) for r in records)
    cols = [*([Column("GPU", note="GPU: the device index the record ran on")] if per_gpu else []),
            Column("op", left=True, wrap=True, want=0), Column("shape", left=True, wrap=True, note=shape_note),
            Column("dtype", left=True),
            Column("AI\nFLOP/B", drop=2 if timed or predicted else 0,
                   note="AI: arithmetic intensity, FLOP per byte of memory traffic"),
            Column("bound", left=True, note="memory (L3): on the CPU's measured L3 roof (the working set fits "
                   "there)" if cached else ""),
            Column("roofline\ntime", note="roofline time: the lower bound max(FLOPs / peak, bytes / bandwidth)"),
            Column(f"attainable\n{flop_unit}", drop=3 if timed or predicted else 0,
                   note="attainable: the roof at the record's AI, min(peak, AI x bandwidth)")]
    if predicted:
        cols.append(Column("predicted\ntime", note="predicted time: from the operator database (docs/prediction.md)"))
    above = [above_roof(r.roofline_fraction) for r in records]
    from roofline.ci.runs import run_medians

    medians = [run_medians(r) for r in records]  # `run --repeat`: each record's runs, their spread shown
    runs = max((len(m) for m in medians if m), default=0)
    if timed and runs:  # the spread between runs, not within the samples: the noise check compares against
        spread = Column("± sd\nof runs", drop=1 if predicted else 0,
                        note=f"± sd of runs: the standard deviation of a run's median over the {runs} runs, % of "
                             "their mean")
    elif timed:
        spread = Column("±\nIQR/2", drop=1 if predicted else 0,  # beside a prediction, the spread gives way
                        note="± IQR/2: half the interquartile range of the samples, % of the median")
    if timed:
        cols += [Column("measured\ntime", note=f"measured time: the mean of the {runs} runs' medians (as check "
                        "reads it)" if runs else ""), spread,
                 *([Column("run\nmedians", left=True, drop=3, note="run medians: the fastest and slowest run's")]
                   if runs else []),
                 Column(f"achieved\n{flop_unit}", drop=4), Column(f"achieved\n{byte_unit}", drop=4),
                 Column("% of\nroof", note="% of roof: roofline time / measured time"
                        + (f"; {ABOVE_MARK}: above its roof, so the roof or the model is wrong (the record's "
                           "verdict says which)" if any(above) else ""))]
    clocked = timed and any(r.sm_clock_mhz for r in records)  # a GPU's clock; a CPU reports none
    if clocked:
        cols.append(Column("SM\nMHz", drop=1, note="SM MHz: the median SM clock during the samples"))
    counted = any(r.counters is not None for r in records)
    if counted:
        from roofline.core.counters import excess_basis

        basis = excess_basis(r.counters for r in records if r.counters is not None)
        cols.append(Column("bytes\n× min", note=f"bytes × min: Nsight Compute's {basis} bytes / the model's "
                                                  "minimum"))
    rows = []
    for r, shape, meds in zip(records, shapes, medians, strict=True):
        row = [*([str(r.device_index) if r.device_index is not None else "-"] if per_gpu else []),
               r.op + (f" {r.variant}" if r.variant else ""), shape, r.dtype,
               number(r.arithmetic_intensity), bound_text(r), duration(r.roofline_time_s),
               number(r.attainable_flops_per_s / flop_scale) if r.attainable_flops_per_s is not None else "-"]
        if predicted:
            row.append(duration(r.predicted_time_s))
        if timed:
            stats = (r.timing.stats if r.timing else None) or {}
            sm = r.sm_clock_mhz
            row += [duration(r.time_s), _spread(stats, meds) if r.timed else "-",
                    *([f"{duration(min(meds))}-{duration(max(meds))}" if meds else "-"] if runs else []),
                    number(r.achieved_flops_per_s / flop_scale) if r.achieved_flops_per_s is not None else "-",
                    number(r.achieved_bytes_per_s / byte_scale) if r.achieved_bytes_per_s is not None else "-",
                    (f"{r.roofline_fraction:.0%}" + (ABOVE_MARK if above_roof(r.roofline_fraction) else ""))
                    if r.roofline_fraction is not None else "-",
                    *([f"{sm:.0f}" if sm else "-"] if clocked else [])]
        if counted:
            x = r.counters.excess_traffic if r.counters is not None else None
            row.append(f"{x:.2f}" if x is not None else "-")
        rows.append(row)
    caption = [] if timed else ["the analytic model alone: nothing timed"]
    bound_note = bound_only_note(records)
    caption += [bound_note] if bound_note else []
    from roofline.analysis.predict import wide_interval_note
    from roofline.report.caveats import timing_caveats

    sparse = wide_interval_note(records)
    return FitTable(cols, rows, title=title, caption=caption, wide=wide,
                    warnings=[*timing_caveats(records, lambda r: r.op), *([sparse] if sparse else [])])


def _spread(stats: dict[str, float], medians: list[float] | None) -> str:
    """A record's ± cell: the relative sd of its runs' medians around their mean (several runs), else half its
    samples' relative IQR."""
    if medians:
        sd = relative_sd([medians])  # as the between-run noise figure's median (ci.runs.learn_noise)
        return f"{sd[0] * 100:.1f}%" if sd is not None else "-"
    return f"{stats['relative_iqr'] * 50:.1f}%" if "relative_iqr" in stats else "-"


# ---------------------------------------------------------------- calibration
def calibration_table(ceilings: Any, details: dict[str, Any]) -> FitTable:
    """Each measured figure beside the datasheet's, with the ratio and the SM clock seen during it (a CPU has
    neither a datasheet nor an SM clock: its table is the figure, the rate and how it was measured)."""
    cols = [Column("figure", left=True), Column("measured"), Column("datasheet"), Column("ratio"),
            Column("SM\nMHz"), Column("how / warning", left=True, wrap=True)]
    title = f"measured ceilings: {ceilings.device_name}"
    rows = details.get("figures")
    if rows is None:  # CPU calibration: three columns of '-' left out
        cells = [[k, si(v, "FLOP/s"), "torch matmul, best of sizes"] for k, v in ceilings.compute.items()]
        how = {"dram": "torch copy (read + write)", "dram_read": "torch sum (read)"}
        cells += [[k, si(v, "B/s"), how.get(k, f"torch copy inside one core's {k.upper()}")]
                  for k, v in ceilings.memory.items()]
        return FitTable([cols[0], cols[1], cols[-1]], cells, title=title)
    cells = []
    for r in rows:
        unit = r["unit"]
        how = r.get("warning") or r.get("method", "")
        if r.get("limited_by"):
            how += f" [clock held by: {', '.join(r['limited_by'])}]"
        cells.append([r["name"], si(r["value"], unit) if r["value"] else "-", si(r["datasheet"], unit),
                      f"{r['ratio']:.0%}" if r.get("ratio") else "-",
                      f"{r['sm_clock_mhz']:.0f}" if r.get("sm_clock_mhz") else "-", how])
    return FitTable(cols, cells, title=title)


def l2_sweep_table(sweep: list[dict[str, Any]]) -> FitTable:
    """Read bandwidth against working-set size: the step from L2 to HBM (chart-ready with --json)."""
    cols = [Column("working set\nMiB"), Column("read bandwidth"), Column("passes")]
    rows = [[f"{p['working_set_bytes'] / 2**20:.1f}", si(p["bytes_per_s"], "B/s"), str(p["repeat"])] for p in sweep]
    return FitTable(cols, rows, title="working-set sweep (read bandwidth)")
