"""One record as the (label, value) rows a person reads: what `roofline analyze OP` prints, in a rich table
(`roofline.report.text.record_table`) or drawn without rich (`roofline.report.plain`). No rendering here."""

from __future__ import annotations

from roofline.core.counters import excess_basis
from roofline.core.format import count, duration, joules, si
from roofline.core.record import Record, Timing


def bound_text(r: Record) -> str:
    """'compute', 'memory', or 'memory (L3)' for traffic placed on a CPU cache's roof."""
    if r.bound == "memory" and r.memory_level:
        return f"memory ({r.memory_level.upper()})"
    return r.bound or "-"


def record_rows(r: Record) -> list[tuple[str, str]]:
    """The fields a person reads, in order, as (label, value) pairs."""
    rows = [
        ("operator", r.op + (f" ({r.variant})" if r.variant else "")),
        ("shape", " ".join(f"{k}={v}" for k, v in r.params.items())),
        ("dtype", f"{r.dtype} on {r.compute_pipe_label or r.compute_pipe or ''}"),
        ("device", f"{r.gpu} ({r.roof_source or 'datasheet'} roof)"),
        ("FLOPs", count(r.flops or 0) + (f" (+{count(r.extra_flops)} elementwise)"
                                         if r.extra_flops else "")),
        ("bytes", f"{count(r.bytes or 0)} (read {count(r.bytes_read or 0)}, written {count(r.bytes_written or 0)})"),
        ("arithmetic intensity", f"{r.arithmetic_intensity or 0:.4g} FLOP/byte"),
        ("ridge point", f"{r.ridge_point:.4g} FLOP/byte"),
        ("peak", f"{si(r.peak_flops_per_s, 'FLOP/s')}, {si(r.peak_bytes_per_s, 'B/s')}"
                 + (f" ({r.memory_level.upper()} cache)" if r.memory_level else "")),
        ("bound", bound_text(r)),
        ("roofline time", duration(r.roofline_time_s)),
        ("attainable", si(r.attainable_flops_per_s, "FLOP/s")),
    ]
    rows += prediction_rows(r)
    if r.timed:
        rows += _timed_rows(r)
    if r.counters is not None:
        rows += counter_rows(r)
    if r.energy is not None:
        rows += energy_rows(r)
    for adv in r.advice or []:
        rows.append(("advice", adv.get("message", str(adv)) if isinstance(adv, dict) else str(adv)))
    for n in r.notes or []:
        rows.append(("note", n))
    return rows


def prediction_rows(r: Record) -> list[tuple[str, str]]:
    """The predicted time beside the bound (and the measured time, when timed): analysis/predict.py."""
    from roofline.analysis.predict import Prediction, bound_reason, wide_interval_note

    p = Prediction.of(r)
    if p is None:
        return []
    if not p.from_db:  # the bound itself: say so, no interval to show
        return [("predicted time", f"the roofline time {bound_reason(p.source)}".strip())]
    rows = [("predicted time", f"{duration(p.time_s)} ({duration(p.low_s)} - {duration(p.high_s)}); {p.source}")]
    if r.time_s:
        inside = p.low_s <= r.time_s <= p.high_s
        bound = f"; measured / bound {r.time_s / r.roofline_time_s:.2f}x" if r.roofline_time_s else ""
        rows.append(("measured / predicted", f"{r.time_s / p.time_s:.2f}x "
                     f"({'inside' if inside else 'outside'} the interval{bound})"))
    sparse = wide_interval_note([r])
    return rows + ([("warning", sparse)] if sparse else [])


def counter_rows(r: Record) -> list[tuple[str, str]]:
    """What Nsight Compute counted (`record.counters`), beside the model's minimum and FLOPs."""
    c = r.counters
    assert c is not None
    rows = []
    if c.dram_bytes is not None:
        split = (f" (read {count(c.dram_bytes_read)}, written {count(c.dram_bytes_written)})"
                 if c.dram_bytes_read is not None and c.dram_bytes_written is not None else "")
        rows.append(("ncu DRAM bytes", f"{count(c.dram_bytes)}{split}"))
    if c.stored_bytes is not None:
        rows.append(("ncu stored bytes", f"{count(c.stored_bytes)} (the SMs' writes into the L2)"))
    if c.excess_traffic is not None:
        rows.append(("ncu bytes / min", f"{c.excess_traffic:.2f}x the minimum ({excess_basis([c])})"))
    if c.l2_bytes is not None or c.l1_bytes is not None:
        rows.append(("ncu L2 / L1 bytes", f"{count(c.l2_bytes) if c.l2_bytes is not None else '-'} / "
                                          f"{count(c.l1_bytes) if c.l1_bytes is not None else '-'}"))
    if c.flops is not None:
        pipes = [f"{k} tensor {count(v)}" for k, v in (c.tensor_flops or {}).items() if v] + \
            [f"{k} {count(v)}" for k, v in (("fp32", c.fp32_flops), ("fp64", c.fp64_flops), ("fp16", c.fp16_flops))
             if v]
        ratio = f" = {c.flops_ratio:.2f}x the model's" if c.flops_ratio is not None else ""
        rows.append(("ncu FLOPs", f"{count(c.flops)}{ratio}" + (f" ({', '.join(pipes)})" if pipes else "")))
    levels = [(n, v) for n, v in (("L1", c.intensity_l1), ("L2", c.intensity_l2), ("DRAM", c.intensity_dram))
              if v is not None]
    if levels:
        rows.append(("ncu intensity", ", ".join(f"{n} {v:.4g}" for n, v in levels) + " FLOP/byte"))
    if c.duration_s is not None:
        clock = f" at {c.sm_clock_mhz:.0f} MHz" if c.sm_clock_mhz else ""
        rows.append(("ncu time", f"{duration(c.duration_s)}{clock} ({c.kernels or 1} kernel"
                                 f"{'s' if (c.kernels or 1) > 1 else ''}, one profiled call)"))
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
        ("fraction of roofline", f"{r.roofline_fraction:.1%}" if r.roofline_fraction is not None else "-"),
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


def energy_rows(r: Record) -> list[tuple[str, str]]:
    """`record.energy` as (label, value) rows: J per call and its split, the power, FLOP/J and B/J, the window."""
    e = r.energy or {}
    rows = [("energy / call", f"{joules(e.get('energy_j'))} at {e.get('power_w', 0):.0f} W average")]
    if e.get("static_j") is not None:
        share = e["static_j"] / e["energy_j"] if e.get("energy_j") else 0.0
        rows.append(("static / dynamic", f"{joules(e['static_j'])} ({share:.0%}, {e['static_w']:.0f} W x time) / "
                                         f"{joules(e['dynamic_j'])}"))
    per = [si(e[k], unit) for k, unit in (("flops_per_j", "FLOP/J"), ("bytes_per_j", "B/J")) if e.get(k)]
    if per:
        rows.append(("per joule", ", ".join(per)))
    if e.get("model_j") is not None:
        rows.append(("energy model", f"{joules(e['model_j'])} predicted ({e['model_error']:+.1%} measured vs model)"))
    c = e.get("counter") or {}
    if e.get("window_s") is not None:
        rows.append(("energy window", f"{e['window_s']:.2f} s, {c.get('updates', '?')} counter updates "
                                      f"every {duration(c.get('update_period_s'))}, {e.get('calls', 0):.0f} calls"))
    return rows
