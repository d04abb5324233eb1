"""What a profile's views show, computed once: the view model every renderer reads (the terminal views of
`roofline profile`, their JSON, the HTML report's profile section). Pure: no torch, nothing formatted here.

`profile_view(doc, top, by, depth)` builds a `ProfileView` from the document's records and its summary
(`doc.extra["profile"]`): the step's total, the top records by total time, the roll-ups by op type, by module
group and by device kernel, and the what-if (analysis/whatif.py). Timed profiles rank by measured time
(time_s x count); analytic ones by roofline time ("predicted"). Every share is of the step's total: the kernel
time (unattributed kernels included) when measured, the sum of roofline times when predicted.

Repeated blocks (analysis/repeats.py) are one row by default (`group=True`): the top view's records equal but
for a layer index ('model.layers.{0..15}.mlp.down_proj', its `repeats` 16), the module roll-up's layers, the
what-if's fusions. `group=False` gives the raw rows: one per record, one per layer, one per fusion.

Module roll-up (`module_group`): a numeric path component (a layer's index) is written '*' and rolled
together, and does not count towards `depth`; `depth` counts named components, the index following the
last one kept as '*': 'model.layers.0.mlp.down_proj' at depth 1 is 'model', at depth 2 'model.layers.*',
at depth 3 'model.layers.*.mlp'; with no depth the whole path ('model.layers.*.mlp.down_proj'). A row is
labelled with its indices ('model.layers.{0..15}.mlp'); ungrouped, each layer is a row of its own.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from roofline.analysis.predict import from_database
from roofline.analysis.repeats import index_label, pattern, repeated
from roofline.analysis.whatif import (
    BACKWARD_MARK,
    OPTIMIZER,
    Fusion,
    WhatIf,
    module_label,
    phase_of,
    record_total,
    what_if,
)
from roofline.core.aten_names import short_base_name, short_name
from roofline.core.counters import excess_basis
from roofline.core.document import Document, clean_json
from roofline.core.errors import UsageError
from roofline.core.notes import without
from roofline.core.record import ROOT_MODULE, Record
from roofline.core.summary import ProfileSummary

BY = ("op", "module", "kernel", "phase")  # the roll-ups, by op type, module group, device kernel, phase
TOP = 20  # records in the top view unless asked
NO_OP = "(no op)"  # the op named for a kernel no op launched (the summary's 'unattributed')


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
    roof_fraction: float | None = None  # roofline time / time (timed; a group: roofline_s / time_s)
    ops: tuple[str, ...] = ()  # the kernel view: the ops that launched it
    intensity: float | None = None  # a top record's FLOP/byte (None without FLOPs)
    excess_traffic: float | None = None  # a top record's counted bytes / its minimum (`profile --counters`)
    predicted_s: float | None = None  # a top record's predicted time over all calls (an operator database's)
    repeats: int = 1  # records it holds that are repeats of one another (one per layer: analysis/repeats.py)


# A summary as the views take it: the record, or a stored one's dict (read with ProfileSummary.from_dict).
Summary = ProfileSummary | Mapping[str, Any]


def summary_of(doc: Document) -> ProfileSummary:
    """The document's profile summary (`extra["profile"]`), read; an empty one when it has none."""
    s = doc.extra.get("profile")
    return ProfileSummary.from_dict(s if isinstance(s, Mapping) else {})


def is_predicted(records: Sequence[Record], summary: Summary) -> bool:
    """An analytic profile (no measured time): views rank by roofline time."""
    return ProfileSummary.of(summary).analytic or not any(r.time_s is not None for r in records)


def step_total(records: Sequence[Record], summary: Summary) -> float:
    """The base of every share (module docstring)."""
    s = ProfileSummary.of(summary)
    predicted = is_predicted(records, s)
    base = s.roofline_time_s if predicted else s.kernel_time_s
    return float(base) if base else sum(record_total(r, predicted) for r in records)


def _line(key: str, idx: list[int], records: Sequence[Record], predicted: bool, total: float, **kw: Any) -> Line:
    """The line of records `idx`: their time, share, calls, roofline time and headroom; a group's roof
    fraction from those sums unless `kw` gives one."""
    recs = [records[i] for i in idx]
    t = sum(record_total(r, predicted) for r in recs)
    roofed = [r for r in recs if r.roofline_time_s is not None]
    roof = sum(record_total(r, True) for r in roofed) if roofed else None
    headroom = None
    if not predicted and roofed:
        headroom = sum(record_total(r) - record_total(r, True) for r in roofed if r.time_s is not None)
    if "roof_fraction" not in kw and not predicted:
        kw["roof_fraction"] = roof / t if roof is not None and t > 0 else None
    return Line(key, t, t / total if total > 0 else None, sum(r.count or 1 for r in recs), roof, headroom,
                tuple(idx), **kw)


def top_lines(records: Sequence[Record], summary: Summary, top: int = TOP, group: bool = True) -> list[Line]:
    """The `top` records by total time (roofline time when predicted); `group`: repeats of one record in
    other layers one line (module docstring), its roof fraction and counted bytes those of their sums."""
    summary = ProfileSummary.of(summary)
    predicted = is_predicted(records, summary)
    total = step_total(records, summary)
    groups = repeated(records) if group else [[i] for i in range(len(records))]
    order = sorted(groups, key=lambda g: (-sum(record_total(records[i], predicted) for i in g), g[0]))
    lines = []
    for idx in order[:max(top, 0)]:
        recs = [records[i] for i in idx]
        r = recs[0]
        one = {} if len(idx) > 1 or predicted else {"roof_fraction": r.roofline_fraction}
        pred = [(x.count or 1) * x.predicted_time_s for x in recs
                if from_database(x) and x.predicted_time_s is not None]
        lines.append(_line(short_name(r.op), idx, records, predicted, total, bound=r.bound, repeats=len(idx),
                           module=module_label(r, index_label([x.module or "" for x in recs])),
                           intensity=r.arithmetic_intensity if r.flops is not None else None,
                           excess_traffic=_excess(recs), predicted_s=sum(pred) if pred else None, **one))
    return lines


def _excess(recs: Sequence[Record]) -> float | None:
    """Counted bytes over the minimum of repeats (one minimum: the same shapes), weighted by their calls."""
    counted = [(r.counters.excess_traffic, r.count or 1) for r in recs
               if r.counters is not None and r.counters.excess_traffic is not None]
    return sum(e * n for e, n in counted) / sum(n for _, n in counted) if counted else None


def module_group(path: str, depth: int | None = None, indices: bool = False) -> str:
    """The roll-up key of a module path (module docstring): indices as '*' (kept with `indices`), `depth` named
    components."""
    if not path:
        return ""
    parts = [p if indices or not p.isdigit() else "*" for p in path.split(".")]
    if depth is None:
        return ".".join(parts)
    if depth < 1:
        raise UsageError(f"--depth must be at least 1, got {depth}")
    kept, named = [], 0
    for p in parts:
        if p != "*" and not p.isdigit():
            if named == depth:
                break
            named += 1
        kept.append(p)
    return ".".join(kept)


def rollup(records: Sequence[Record], summary: Summary, by: str = "op", depth: int | None = None,
           group: bool = True) -> list[Line]:
    """Records grouped by op type ('add' and 'add_' together), module group (a module's backward ops apart,
    marked [bwd]; `group`: a layer's index rolled with the others' and the row labelled with them all,
    'layers.{0..15}.mlp', else each layer apart), device kernel or phase, by total time. The kernel view adds
    the kernels no op launched (summary 'unattributed')."""
    if by not in BY:
        raise UsageError(f"--by must be one of {', '.join(BY)}, got {by!r}")
    summary = ProfileSummary.of(summary)
    predicted = is_predicted(records, summary)
    total = step_total(records, summary)
    if by == "kernel":
        return _kernel_lines(records, summary, total)
    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        if by == "module":
            key = module_label(r, module_group(r.module or "", depth, indices=not group))
        else:
            key = phase_of(r) if by == "phase" else short_base_name(r.op)
        groups[key].append(i)
    labels = {k: k for k in groups}
    if by == "module" and group:  # 'layers.*.mlp' -> 'layers.{0..15}.mlp'
        labels = {k: index_label(list(dict.fromkeys(module_label(records[i], module_group(
            records[i].module or "", depth, indices=True)) for i in idx))) for k, idx in groups.items()}
    lines = [_line(labels[k], idx, records, predicted, total) for k, idx in groups.items()]
    return sorted(lines, key=lambda x: (-x.time_s, _natural(x.key)))


def _natural(key: str) -> tuple[tuple[int, int | str], ...]:
    """A sort key that puts 'layers.2' before 'layers.10'."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", key) if p)


def _kernel_lines(records: Sequence[Record], summary: ProfileSummary, total: float) -> list[Line]:
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
    for u in summary.unattributed:
        name = str(u.kernel)
        time[name] += float(u.time_s or 0.0)
        calls[name] += int(u.launches or 0)
        ops[name][NO_OP] = None
    lines = [Line(k, t, t / total if total > 0 else None, calls[k], None, None, tuple(idx[k]), ops=tuple(ops[k]))
             for k, t in time.items()]
    return sorted(lines, key=lambda x: (-x.time_s, x.key))


@dataclass(frozen=True)
class ProfileView:
    """A profile's views, computed once from its records and summary: what the terminal, JSON and HTML
    renderers show (they format, never compute)."""

    summary: ProfileSummary  # the profile summary (`doc.extra["profile"]`, read): the header's facts
    device: str | None  # the device's name, spec name or kind
    predicted: bool  # analytic: times are roofline times
    total_s: float  # the base of every share
    records: int
    calls: int  # op calls: the summary's, else the records' counts
    top: tuple[Line, ...]
    rollups: Mapping[str, tuple[Line, ...]]  # by each of BY; "module" at `depth`
    by: str  # the roll-up the terminal shows
    depth: int | None
    whatif: WhatIf
    counters_basis: str | None  # what the top records' counted bytes are (ncu's "DRAM", ...); None: no counters
    grouped: bool = True  # repeated blocks one row each (module docstring); False: the raw rows

    @property
    def rollup(self) -> tuple[Line, ...]:
        """The roll-up `by`."""
        return self.rollups[self.by]

    def without_notes(self, said: Iterable[str]) -> ProfileView:
        """The view without the summary's notes of the codes of `said` (notes a command printed already: the
        target's messages; core/notes.py). The document keeps them all."""
        notes = tuple(without(self.summary.notes, said))
        return dataclasses.replace(self, summary=dataclasses.replace(self.summary, notes=notes))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form: top records, the roll-up `by`, the what-if."""
        return clean_json({"predicted": self.predicted, "total_s": self.total_s, "grouped": self.grouped,
                           "top": [asdict(x) for x in self.top],
                           "rollup": {"by": self.by, "depth": self.depth, "lines": [asdict(x) for x in self.rollup]},
                           "whatif": self.whatif.to_dict()})


def profile_view(doc: Document, top: int = TOP, by: str = "op", depth: int | None = None,
                 summary: ProfileSummary | None = None, group: bool = True) -> ProfileView:
    """The view model of a profile document: the `top` records, the roll-ups (module groups at `depth`), the
    what-if; `by` names the roll-up a terminal shows (one of BY). `summary`: the profile's own, when the caller
    has it (its notes keep their codes), else the document's, read. `group`: repeated blocks one row each
    (module docstring); False: the raw rows."""
    if by not in BY:
        raise UsageError(f"--by must be one of {', '.join(BY)}, got {by!r}")
    records, s = doc.records, summary if summary is not None else summary_of(doc)
    lines = tuple(top_lines(records, s, top, group))
    counted = any(records[x.records[0]].counters is not None for x in lines)
    basis = excess_basis(r.counters for r in records if r.counters is not None) if counted else None
    device = doc.device.get("name") or doc.device.get("spec_name") or doc.device.get("kind") or None
    return ProfileView(
        summary=s, device=device, predicted=is_predicted(records, s), total_s=step_total(records, s),
        records=len(records), calls=s.calls or sum(r.count or 1 for r in records), top=lines,
        rollups={b: tuple(rollup(records, s, b, depth if b == "module" else None, group)) for b in BY}, by=by,
        depth=depth, whatif=capped(grouped(what_if(records, s), records) if group else what_if(records, s), top),
        counters_basis=basis, grouped=group)


def grouped(w: WhatIf, records: Sequence[Record]) -> WhatIf:
    """The what-if with the fusions of repeated blocks one each (analysis/repeats.py), none reading as another."""
    return dataclasses.replace(w, fusions=tuple(apart(group_fusions(w.fusions, records), records)))


def apart(fusions: Sequence[Fusion], records: Sequence[Record]) -> list[Fusion]:
    """The fusions, those that would read alike (kind, ops and module: a layer's o_proj -> residual add and its
    down_proj -> residual add, both 'mm -> add in model.layers.{0..15}') named by their records' modules
    instead, in program order ('model.layers.{0..15}.self_attn.o_proj, model.layers.{0..15}')."""
    seen = Counter((f.kind, f.ops, f.module) for f in fusions)
    out = []
    for f in fusions:
        if seen[f.kind, f.ops, f.module] > 1:
            alike: dict[str, list[str]] = defaultdict(list)
            for i in f.records:
                alike[pattern(records[i].module or "")].append(records[i].module or "")
            f = dataclasses.replace(f, module=", ".join(index_label(list(dict.fromkeys(m))) or ROOT_MODULE
                                                        for m in alike.values()))
        out.append(f)
    return out


def group_fusions(fusions: Sequence[Fusion], records: Sequence[Record]) -> list[Fusion]:
    """The fusions with each set of repeats (analysis/repeats.py) as one, ranked by time saved as what_if ranks
    them: its occurrences, bytes, time and share summed, its records all of theirs, its module the label of
    theirs ('model.layers.{0..15}.input_layernorm'), `repeats` how many it holds."""
    group_of = {i: n for n, g in enumerate(repeated(records)) for i in g}
    groups: dict[Any, list[Fusion]] = {}
    for f in fusions:
        groups.setdefault((f.kind, tuple(sorted(group_of.get(i, -1 - i) for i in f.records))), []).append(f)
    out = []
    for same in groups.values():
        if len(same) == 1:
            out.append(same[0])
            continue
        saved = [f.saved_s for f in same]
        shares = [f.share for f in same]
        out.append(dataclasses.replace(
            same[0], module=index_label([f.module for f in same]),
            records=tuple(sorted(i for f in same for i in f.records)),
            occurrences=sum(f.occurrences for f in same), bytes_saved=sum(f.bytes_saved for f in same),
            saved_s=None if None in saved else sum(s for s in saved if s is not None),
            share=None if None in shares else sum(s for s in shares if s is not None),
            repeats=sum(f.repeats for f in same)))
    return sorted(out, key=lambda f: (-(f.saved_s or 0.0), -f.bytes_saved, f.records))


def capped(w: WhatIf, top: int) -> WhatIf:
    """The what-if with its `top` fusions by time saved (the list is ranked: the rest save less)."""
    return dataclasses.replace(w, fusions=w.fusions[:max(top, 0)])


__all__ = ["BACKWARD_MARK", "BY", "NO_OP", "OPTIMIZER", "TOP", "Line", "ProfileView", "capped", "group_fusions",
           "grouped", "is_predicted",
           "module_group", "module_label", "profile_view", "rollup",
           "step_total", "summary_of", "top_lines"]
