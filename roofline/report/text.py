"""Terminal rendering (rich): tables of specs, operators and records. Rendering only, no computation."""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.console import Console
from rich.table import Table

from roofline.ceilings.specs import GPUSpec
from roofline.core.record import Record, Timing
from roofline.report.format import count, duration, si

# Width for output that is not a terminal (CI logs, pipes): rich's default of 80 columns wraps every table.
PIPE_WIDTH = 160


def console(stderr: bool = False) -> Console:
    c = Console(stderr=stderr, highlight=False, soft_wrap=False)
    if not c.is_terminal:
        c = Console(stderr=stderr, highlight=False, soft_wrap=False, width=PIPE_WIDTH)
    return c


def specs_table(specs: list[GPUSpec]) -> Table:
    t = Table(title="GPU specs (dense peaks)")
    for col in ("id", "name", "aliases", "SMs", "boost MHz", "FP32 TF", "BF16 TC TF", "FP8 TC TF", "memory",
                "GB/s", "L2 MiB"):
        t.add_column(col, justify="right" if col not in ("id", "name", "aliases") else "left")
    def v(s: GPUSpec, key: str) -> str:
        x = s.get(key)
        return "-" if x is None else f"{x:g}"

    for s in specs:
        t.add_row(s.id, s.name, ", ".join(s.aliases), v(s, "sm_count"), v(s, "boost_clock_mhz"),
                  v(s, "fp32_dense_tflops"), v(s, "bf16_tensor_dense_tflops"), v(s, "fp8_tensor_dense_tflops"),
                  f"{s['memory_size_gb']:g} GB {s.memory_type}", v(s, "memory_bandwidth_gbps"),
                  f"{s['l2_cache_kib'] / 1024:g}")
    return t


def spec_table(s: GPUSpec) -> Table:
    t = Table(title=f"{s.name} ({s.id}; {s.architecture}, compute capability {s.compute_capability})")
    t.add_column("field")
    t.add_column("value", justify="right")
    t.add_column("source")
    for key, value in s.values.items():
        note = s.notes.get(key)
        src = s.sources.get(key, "") + (f"\n[dim]note: {note}[/dim]" if note else "")
        t.add_row(key, f"{value:g}", src)
    for key, lst in s.lists.items():
        t.add_row(key, ", ".join(map(str, lst)), s.sources.get(key, ""))
    return t


def ops_table(ops: dict[str, type]) -> Table:
    t = Table(title="operators")
    for col in ("op", "family", "parameters (defaults)", "variants", "dtypes", "summary"):
        t.add_column(col)
    for name, cls in sorted(ops.items(), key=lambda kv: (kv[1].family, kv[0])):
        params, variants = [], "-"
        for f in dataclasses.fields(cls):
            if f.name == "variant":
                variants = "|".join(f.metadata["choices"])
                continue
            choices = f.metadata.get("choices")
            default = "|".join(choices) if choices else f.default
            params.append(f"--{f.name.replace('_', '-')} ({default})")
        t.add_row(name, cls.family, "\n".join(params), variants, ",".join(cls.dtypes), cls.summary)
    return t


def record_rows(r: Record) -> list[tuple[str, str]]:
    """The fields a person reads, in order, as (label, value) pairs."""
    rows = [
        ("operator", r.op + (f" ({r.variant})" if r.variant else "")),
        ("shape", " ".join(f"{k}={v}" for k, v in r.params.items())),
        ("dtype", f"{r.dtype} on {r.compute_pipe_label or r.compute_pipe or ''}"),
        ("device", f"{r.gpu} ({r.roof_source or 'datasheet'} roof)"),
        ("FLOPs", count(r.flops)),
        ("bytes", f"{count(r.bytes)} (read {count(r.bytes_read or 0)}, written {count(r.bytes_written or 0)})"),
        ("arithmetic intensity", f"{r.arithmetic_intensity:.4g} FLOP/byte"),
        ("ridge point", f"{r.ridge_point:.4g} FLOP/byte"),
        ("peak", f"{si(r.peak_flops_per_s, 'FLOP/s')}, {si(r.peak_bytes_per_s, 'B/s')}"),
        ("bound", r.bound),
        ("roofline time", duration(r.roofline_time_s)),
        ("attainable", si(r.attainable_flops_per_s, "FLOP/s")),
    ]
    if r.timed:
        rows += _timed_rows(r)
    for adv in r.advice or []:
        rows.append(("advice", adv.get("message", str(adv)) if isinstance(adv, dict) else str(adv)))
    for n in r.notes or []:
        rows.append(("note", n))
    return rows


def _timed_rows(r: Record) -> list[tuple[str, str]]:
    timing = r.timing or Timing()
    stats = timing.stats or {}
    n = stats.get("n", len(r.time_samples_s or []))
    flushed = ", L2 flushed" if timing.l2_flush else ""
    rows = [
        ("measured (median)", f"{duration(r.time_s)} ± {stats.get('relative_iqr', 0) * 50:.1f}% "
                              f"(IQR/2; {n} samples, {timing.method or '?'}{flushed})"),
        ("achieved", f"{si(r.achieved_flops_per_s, 'FLOP/s')}, {si(r.achieved_bytes_per_s, 'B/s')}"),
        ("fraction of roofline", f"{r.roofline_fraction:.1%}"),
    ]
    clocks = r.clocks
    sm = clocks.sm_mhz if clocks else None
    if clocks and sm:
        limited = ", ".join(clocks.limited_by or []) or "not limited"
        source = clocks.sm_mhz_source or ""
        if clocks.in_kernel_trace:
            source += f", {clocks.in_kernel_trace['coverage']:.0%} of the kernel covered"
        rows.append(("SM clock", f"{sm['median']:.0f} MHz (min {sm['min']:.0f}, max {sm['max']:.0f}; {limited}"
                                 + (f"; {source})" if source else ")")))
    if timing.timer_overhead_s:
        rows.append(("timer overhead", f"{duration(timing.timer_overhead_s)} (an empty event pair) subtracted "
                                       "from every sample"))
    if r.impl:
        rows.append(("ran", r.impl))
    if r.kernels:
        times = r.kernel_times_s or []
        rows.append(("kernels", "\n".join((f"{duration(times[i])}  " if i < len(times) else "") + k[:100]
                                           for i, k in enumerate(r.kernels[:6]))))
    if r.verdict:
        rows.append(("verdict", r.verdict))
    return rows


def record_table(r: Record) -> Table:
    t = Table(show_header=False, title=f"roofline: {r.op}")
    t.add_column("", style="bold")
    t.add_column("")
    for label, value in record_rows(r):
        t.add_row(label, value)
    return t


def records_table(records: list[Record], title: str = "results") -> Table:
    t = Table(title=title)
    cols = ("op", "variant", "dtype", "AI F/B", "bound", "roofline", "measured", "± IQR/2", "TFLOP/s", "GB/s",
            "% roof", "SM MHz")
    for c in cols:
        t.add_column(c, justify="left" if c in ("op", "variant", "dtype", "bound") else "right")
    for r in records:
        stats = (r.timing.stats if r.timing else None) or {}
        sm = r.sm_clock_mhz
        t.add_row(
            r.op, r.variant or "-", r.dtype, f"{r.arithmetic_intensity:.3g}", r.bound,
            duration(r.roofline_time_s), duration(r.time_s),
            f"{stats['relative_iqr'] * 50:.1f}%" if stats else "-",
            f"{(r.achieved_flops_per_s or 0) / 1e12:.3g}" if r.timed
            else f"{(r.attainable_flops_per_s or 0) / 1e12:.3g}*",
            f"{(r.achieved_bytes_per_s or 0) / 1e9:.4g}" if r.timed else "-",
            f"{r.roofline_fraction:.0%}" if r.timed else "-",
            f"{sm:.0f}" if sm else "-",
        )
    return t


def calibration_table(ceilings: Any, details: dict[str, Any]) -> Table:
    """Each measured figure beside the datasheet's, with the ratio and the SM clock seen during it."""
    t = Table(title=f"measured ceilings: {ceilings.device_name}")
    for c in ("figure", "measured", "datasheet", "ratio", "SM MHz", "how / warning"):
        t.add_column(c, justify="right" if c in ("measured", "datasheet", "ratio", "SM MHz") else "left")
    rows = details.get("figures")
    if rows is None:  # CPU calibration
        for k, v in ceilings.compute.items():
            t.add_row(k, si(v, "FLOP/s"), "-", "-", "-", "torch matmul, best of sizes")
        for k, v in ceilings.memory.items():
            t.add_row(k, si(v, "B/s"), "-", "-", "-", "torch copy / sum")
        return t
    for r in rows:
        unit = r["unit"]
        how = r.get("warning") or r.get("method", "")
        if r.get("limited_by"):
            how += f" [clock held by: {', '.join(r['limited_by'])}]"
        t.add_row(r["name"], si(r["value"], unit) if r["value"] else "-", si(r["datasheet"], unit),
                  f"{r['ratio']:.0%}" if r.get("ratio") else "-",
                  f"{r['sm_clock_mhz']:.0f}" if r.get("sm_clock_mhz") else "-", how)
    return t


def l2_sweep_table(sweep: list[dict[str, Any]]) -> Table:
    """Read bandwidth against working-set size: the step from L2 to HBM (chart-ready with --json)."""
    t = Table(title="working-set sweep (read bandwidth)")
    t.add_column("working set", justify="right")
    t.add_column("read bandwidth", justify="right")
    t.add_column("passes", justify="right")
    for p in sweep:
        t.add_row(f"{p['working_set_bytes'] / 2**20:.1f} MiB", si(p["bytes_per_s"], "B/s"), str(p["repeat"]))
    return t
