"""The views of `roofline sol`, rendered from its results document (each record's `sol` block, the document's
`sol` summary): one problem in detail (its bounds, each op's share, the timings and verdicts), or a folder of
problems as one table. Nothing here computes a bound or a verdict: analysis/sol.py did."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from roofline.analysis.sol import FAST_P, Verdict, fast_p
from roofline.core.document import Document
from roofline.core.format import duration, percent, si
from roofline.core.record import Record
from roofline.report.caveats import timing_caveats
from roofline.report.text import Column, FitTable, rows_table


def _sol(r: Record) -> dict[str, Any]:
    return r.extra.get("sol") or {}


def _verdict(r: Record) -> dict[str, Any]:
    return _sol(r).get("verdict") or {}


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}x"


def _score(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def fast_line(records: list[Record]) -> str | None:
    """KernelBench's fast_p over the candidates (analysis/sol.py), or None without candidates."""
    candidates = [r for r in records if r.variant == "candidate"]
    verdicts = [Verdict(**_verdict(r)) if _verdict(r) else Verdict("failed") for r in candidates]
    if not verdicts:
        return None
    parts = [f"fast_{p:g} {percent(fast_p(verdicts, p))}" for p in FAST_P]
    return (f"{', '.join(parts)} of {len(verdicts)} candidate{'s' if len(verdicts) != 1 else ''} (KernelBench's "
            "fast_p: correct, and more than p times faster than the reference)")


def bound_rows(s: dict[str, Any]) -> list[tuple[str, str]]:
    """The bounds of one problem, as label/value rows."""
    fused_how = (f"{s['fused_bound']}-bound: inputs {si(s['read_bytes'], 'B')} read once, outputs "
                 f"{si(s['written_bytes'], 'B')} written once, FLOPs at peak {duration(s['fused_compute_s'])}")
    return [("roof", s.get("roof", "")),
            ("FLOPs", si(s["flops"], "FLOP")),
            ("minimum bytes", f"{si(s['op_bytes'], 'B')} op by op; {si(s['read_bytes'] + s['written_bytes'], 'B')} "
                              "as one kernel"),
            ("unfused SoL", f"{duration(s['unfused_s'])} (the sum of the reference's ops' roofline times)"),
            ("fused SoL", f"{duration(s['fused_s'])} ({fused_how})")]


def ops_table(s: dict[str, Any], top: int) -> FitTable:
    """The reference's ops by their share of the unfused speed of light."""
    ops = sorted(s.get("ops", []), key=lambda o: -(o.get("share") or -1.0))
    rows = [[o["op"].removeprefix("aten::"), o.get("module") or "-", str(o["count"]), duration(o.get("roofline_s")),
             percent(o.get("share")), o.get("bound") or "no formula"] for o in ops[:top]]
    caption = [f"{len(ops) - top} more ops (--top)"] if len(ops) > top else []
    return FitTable([Column("op", left=True), Column("module", left=True, wrap=True, drop=1), Column("calls"),
                     Column("roofline\nper call"), Column("share"), Column("bound", left=True, drop=2)],
                    rows, title="the reference's ops (share of the unfused speed of light)", caption=caption)


def timing_table(records: list[Record]) -> FitTable | None:
    """The timed roles of one problem: time, stream time, % of the bounds, speedup, verdict."""
    timed = [r for r in records if _sol(r).get("timing")]
    if not timed:
        return None
    rows = []
    for r in timed:
        t, v = _sol(r)["timing"], _verdict(r)
        rows.append([r.variant or "-", duration(v.get("time_s") or t.get("measured_s")), duration(t.get("span_s")),
                     percent(v.get("of_fused")), percent(v.get("of_unfused")), _ratio(v.get("speedup")),
                     _score(v.get("sol_score")), v.get("status", "-")])
    return FitTable([Column("", left=True), Column("device\ntime"), Column("stream\ntime", drop=2),
                     Column("% fused\nSoL"), Column("% unfused\nSoL", drop=1), Column("speedup"),
                     Column("SOL-Score", drop=1), Column("verdict", left=True)],
                    rows, title="timed (median per call, fresh inputs each call)",
                    caption=["device time: every kernel, copy and memset of the call, on any stream (CUPTI); stream "
                             "time: between the markers on the caller's stream" if any(
                                 _sol(r)["timing"].get("method") == "untrusted-cupti" for r in timed)
                             else "time: the host clock around each call (CPU)"],
                    warnings=timing_caveats(timed, lambda r: r.variant or r.op))


def reasons(records: list[Record]) -> list[str]:
    """One line per role whose verdict is not ok (why), then each verdict note once."""
    out = []
    notes: dict[str, None] = {}
    for r in records:
        v = _verdict(r)
        if v and v.get("status") != "ok":
            out.append(f"{r.op} {r.variant}: {v['status']}: {v.get('reason', '')}")
        notes.update(dict.fromkeys(v.get("notes", []) if v else []))
    return out + [f"note: {n}" for n in notes]


def tolerance_line(doc: Document, records: list[Record]) -> str | None:
    """The tolerances the outputs were compared with, for the dtypes of these records."""
    tol = (doc.extra.get("sol") or {}).get("tolerances") or {}
    names = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64"}
    shown = [f"{r.dtype} rtol {tol[names[r.dtype]]['rtol']:g}" for r in records[:1]
             if r.dtype in names and names[r.dtype] in tol]
    if not shown or not any(_sol(r).get("timing") for r in records):
        return None
    return (f"outputs compared as |actual - expected| <= atol + rtol x |expected|: {shown[0]}, atol = rtol x RMS of "
            "|expected| (at least the dtype's table value); --rtol/--atol override")


def problem_view(doc: Document, records: list[Record], top: int = 10) -> list[RenderableType]:
    """One problem: its bounds, its ops and, when timed, its timings and verdicts."""
    s = _sol(records[0])
    out: list[RenderableType] = [rows_table(f"speed of light: {s['problem']} ({s['path']})", bound_rows(s)),
                                 ops_table(s, top)]
    t = timing_table(records)
    if t is not None:
        out.append(t)
    lines = [*reasons(records), *records[0].notes]
    if (tol := tolerance_line(doc, records)) is not None:
        lines.append(tol)
    if lines:
        out.append(Group(*(Text(line) for line in lines)))
    return out


def run_table(doc: Document) -> FitTable:
    """A folder of problems: one row per problem (and candidate)."""
    timed = any(_sol(r).get("timing") for r in doc.records)
    rows = []
    for r in doc.records:
        s, v = _sol(r), _verdict(r)
        row = [r.op if r.variant != "candidate" else f"  {r.op} (candidate)", si(s["flops"], "FLOP"),
               si(s["read_bytes"] + s["written_bytes"], "B"), duration(s["unfused_s"]), duration(s["fused_s"]),
               s["fused_bound"]]
        if timed:
            row += [duration(v.get("time_s") or (s.get("timing") or {}).get("measured_s")),
                    percent(v.get("of_fused")), _ratio(v.get("speedup")), _score(v.get("sol_score")),
                    v.get("status", "-")]
        rows.append(row)
    cols = [Column("problem", left=True), Column("FLOPs"), Column("fused\nbytes"), Column("unfused\nSoL", drop=1),
            Column("fused\nSoL"), Column("bound", left=True, drop=2)]
    if timed:
        cols += [Column("time"), Column("% fused\nSoL"), Column("speedup", drop=1), Column("SOL-Score", drop=1),
                 Column("verdict", left=True)]
    summary = doc.extra.get("sol") or {}
    caption = [f"{len(summary.get('failed', []))} of {summary.get('problems', len(doc.records))} problems failed "
               "(listed below)"] if summary.get("failed") else []
    if (fast := fast_line(doc.records)) is not None:
        caption.append(fast)
    roof = _sol(doc.records[0]).get("roof", "") if doc.records else ""
    timed_records = [r for r in doc.records if _sol(r).get("timing")]
    return FitTable(cols, rows, title=f"speed of light on {roof}", caption=caption,
                    warnings=timing_caveats(timed_records, lambda r: f"{r.op} {r.variant or ''}".strip()))


def sol_views(doc: Document, top: int = 10) -> list[RenderableType]:
    """What `roofline sol` prints: one problem in detail, or a folder's table with its failures and reasons."""
    summary = doc.extra.get("sol") or {}
    failed = [f"{f['problem']}: {f['error']}" for f in summary.get("failed", [])]
    problems = {_sol(r).get("problem") for r in doc.records}
    if len(problems) == 1 and summary.get("problems", 1) == 1:
        return problem_view(doc, doc.records, top)
    out: list[RenderableType] = []
    if doc.records:
        out.append(run_table(doc))
    lines = [*failed, *reasons(doc.records)]
    if (tol := tolerance_line(doc, doc.records)) is not None:
        lines.append(tol)
    if lines:
        out.append(Group(*(Text(line) for line in lines)))
    return out
