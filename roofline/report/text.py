"""Terminal rendering (rich): tables of specs, operators and records. Rendering only, no computation."""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.console import Console
from rich.table import Table

from roofline.ceilings.specs import GPUSpec

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def si(x: float | None, unit: str = "", digits: int = 3) -> str:
    """1.37e11 -> '137 G' + unit."""
    if x is None:
        return "-"
    for scale, p in _PREFIXES:
        if abs(x) >= scale:
            return f"{x / scale:.{digits}g} {p}{unit}"
    return f"{x:.{digits}g} {unit}".rstrip()


def duration(s: float | None) -> str:
    if s is None:
        return "-"
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


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


def record_rows(r: dict[str, Any]) -> list[tuple[str, str]]:
    """The fields a person reads, in order, as (label, value) pairs."""
    params = " ".join(f"{k}={v}" for k, v in r.get("params", {}).items())
    rows = [
        ("operator", f"{r['op']}" + (f" ({r['variant']})" if r.get("variant") else "")),
        ("shape", params),
        ("dtype", f"{r['dtype']} on {r.get('compute_pipe_label', r.get('compute_pipe', ''))}"),
        ("device", f"{r['gpu']} ({r.get('roof_source', 'datasheet')} roof)"),
        ("FLOPs", f"{r['flops']:,.0f}"),
        ("bytes", f"{r['bytes']:,.0f} (read {r['bytes_read'] or 0:,.0f}, written {r['bytes_written'] or 0:,.0f})"),
        ("arithmetic intensity", f"{r['arithmetic_intensity']:.4g} FLOP/byte"),
        ("ridge point", f"{r['ridge_point']:.4g} FLOP/byte"),
        ("peak", f"{si(r['peak_flops_per_s'], 'FLOP/s')}, {si(r['peak_bytes_per_s'], 'B/s')}"),
        ("bound", r["bound"]),
        ("roofline time", duration(r["roofline_time_s"])),
        ("attainable", si(r.get("attainable_flops_per_s"), "FLOP/s")),
    ]
    if r.get("time_s") is not None:
        stats = (r.get("timing") or {}).get("stats") or {}
        timing = r.get("timing") or {}
        rows += [
            ("measured (median)", f"{duration(r['time_s'])} ± {stats.get('relative_iqr', 0) * 50:.1f}% "
                                  f"(IQR/2; {stats.get('n', len(r.get('time_samples_s', [])))} samples, "
                                  f"{timing.get('method', '?')}{', L2 flushed' if timing.get('l2_flush') else ''})"),
            ("achieved", f"{si(r['achieved_flops_per_s'], 'FLOP/s')}, {si(r['achieved_bytes_per_s'], 'B/s')}"),
            ("fraction of roofline", f"{r['roofline_fraction']:.1%}"),
        ]
        clocks = r.get("clocks") or {}
        sm = clocks.get("sm_mhz")
        if sm:
            limited = ", ".join(clocks.get("limited_by") or []) or "not limited"
            source = clocks.get("sm_mhz_source") or ""
            trace = clocks.get("in_kernel_trace") or {}
            if trace:
                source += f", {trace['coverage']:.0%} of the kernel covered"
            rows.append(("SM clock", f"{sm['median']:.0f} MHz (min {sm['min']:.0f}, max {sm['max']:.0f}; {limited}"
                                     + (f"; {source})" if source else ")")))
        if timing.get("timer_overhead_s"):
            rows.append(("timer overhead", f"{duration(timing['timer_overhead_s'])} (an empty event pair) subtracted "
                                           "from every sample"))
        if r.get("impl"):
            rows.append(("ran", r["impl"]))
        if r.get("kernels"):
            times = r.get("kernel_times_s") or []
            rows.append(("kernels", "\n".join((f"{duration(times[i])}  " if i < len(times) else "") + k[:100]
                                               for i, k in enumerate(r["kernels"][:6]))))
        if r.get("verdict"):
            rows.append(("verdict", r["verdict"]))
    for adv in r.get("advice", []) or []:
        rows.append(("advice", adv.get("message", str(adv)) if isinstance(adv, dict) else str(adv)))
    for n in r.get("notes", []) or []:
        rows.append(("note", n))
    return rows


def record_table(r: dict[str, Any]) -> Table:
    t = Table(show_header=False, title=f"roofline: {r['op']}")
    t.add_column("", style="bold")
    t.add_column("")
    for label, value in record_rows(r):
        t.add_row(label, value)
    return t


def records_table(records: list[dict[str, Any]], title: str = "results") -> Table:
    t = Table(title=title)
    cols = ("op", "variant", "dtype", "AI F/B", "bound", "roofline", "measured", "± IQR/2", "TFLOP/s", "GB/s",
            "% roof", "SM MHz")
    for c in cols:
        t.add_column(c, justify="left" if c in ("op", "variant", "dtype", "bound") else "right")
    for r in records:
        stats = ((r.get("timing") or {}).get("stats")) or {}
        sm = ((r.get("clocks") or {}).get("sm_mhz")) or {}
        timed = r.get("time_s") is not None
        t.add_row(
            r["op"], r.get("variant") or "-", r["dtype"], f"{r['arithmetic_intensity']:.3g}", r["bound"],
            duration(r["roofline_time_s"]), duration(r.get("time_s")),
            f"{stats['relative_iqr'] * 50:.1f}%" if stats else "-",
            f"{r['achieved_flops_per_s'] / 1e12:.3g}" if timed else f"{r.get('attainable_flops_per_s', 0) / 1e12:.3g}*",
            f"{r['achieved_bytes_per_s'] / 1e9:.4g}" if timed else "-",
            f"{r['roofline_fraction']:.0%}" if timed else "-",
            f"{sm['median']:.0f}" if sm else "-",
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
